// NCCL calls back to back, more than the tracer's ring holds before its writer drains it, against the NCCL test
// double (no GPU): nccl_burst_probe N [PAUSE_MS]: a 4-rank communicator (as rank 1), N ncclAllReduce, a pause of
// PAUSE_MS (default 1000), 10 more; prints "burst N+10 calls".
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 20000;
  const int pause_ms = argc > 2 ? std::atoi(argv[2]) : 1000;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 4, id, 1) != ncclSuccess) return 2;
  static float buffer[256];
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x5eed);
  for (long i = 0; i < calls; ++i) ncclAllReduce(buffer, buffer, 256, ncclFloat32, ncclSum, comm, stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  for (int i = 0; i < 10; ++i) ncclAllReduce(buffer, buffer, 256, ncclFloat32, ncclSum, comm, stream);
  ncclCommDestroy(comm);
  std::printf("burst %ld calls\n", calls + 10);
  return 0;
}
