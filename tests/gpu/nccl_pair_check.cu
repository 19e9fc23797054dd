// The GPU check's two-rank job (tests/gpu/run.sh, checks (b) and (c)): two processes share the one GPU and talk
// through NCCL's socket transport over loopback (run.sh gives them different NCCL_HOSTID, so NCCL treats them as
// two nodes: NCCL rejects two ranks on one GPU of one host). On 2 ranks every collective gets a task, a kernel,
// profiler events and proxy operations (the network), and the tuner is asked about every collective.
//   nccl_pair_check RANK ID_FILE
// Rank 0 writes the unique id to ID_FILE, rank 1 waits for it. Prints `expect KEY VALUE` lines and `result ok`
// when every collective computed what it should.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "check_calls.cuh"


__global__ void fill(float* data, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

static bool all_equal(const std::vector<float>& v, float want) {
  for (float x : v)
    if (std::fabs(x - want) > 1e-3f) return false;
  return true;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nccl_pair_check RANK ID_FILE\n");
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const std::string id_file = argv[2];
  CHECK_CUDA(cudaSetDevice(0));
  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    const std::string tmp = id_file + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename(tmp.c_str(), id_file.c_str());
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      std::ifstream in(id_file, std::ios::binary);
      if (in && in.read(id.internal, sizeof id.internal)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "rank 1: no unique id in %s after 60 s\n", id_file.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 2, id, rank));

  constexpr int kMax = 1 << 20;  // floats
  float *a, *b;
  CHECK_CUDA(cudaMalloc(&a, sizeof(float) * kMax * 2));
  CHECK_CUDA(cudaMalloc(&b, sizeof(float) * kMax * 2));
  std::vector<float> host(kMax * 2);
  bool ok = true;
  int collectives = 0, p2p = 0;
  auto check = [&](const float* dev, int n, float want, const char* what) {
    std::vector<float> h(n);
    CHECK_CUDA(cudaMemcpyAsync(h.data(), dev, sizeof(float) * n, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    if (!all_equal(h, want)) {
      std::fprintf(stderr, "rank %d: %s: got %g, want %g\n", rank, what, h[0], want);
      ok = false;
    }
  };
  const float mine = float(rank + 1);  // rank 0 holds 1, rank 1 holds 2
  const int sizes[] = {1024, 1 << 16, 1 << 20};  // 4 KiB, 256 KiB, 4 MiB
  for (int it = 0; it < 2; ++it) {
    for (int n : sizes) {
      fill<<<(n + 255) / 256, 256, 0, stream>>>(a, n, mine);
      CHECK_NCCL(ncclAllReduce(a, b, n, ncclFloat32, ncclSum, comm, stream));
      ++collectives;
      check(b, n, 3.0f, "allreduce");
    }
    fill<<<16, 256, 0, stream>>>(a, 4096, mine);
    CHECK_NCCL(ncclBroadcast(a, b, 4096, ncclFloat32, 1, comm, stream));
    ++collectives;
    check(b, 4096, 2.0f, "broadcast");
    CHECK_NCCL(ncclAllGather(a, b, 4096, ncclFloat32, comm, stream));
    ++collectives;
    check(b, 4096, 1.0f, "allgather[0]");
    check(b + 4096, 4096, 2.0f, "allgather[1]");
    fill<<<32, 256, 0, stream>>>(a, 8192, mine);
    CHECK_NCCL(ncclReduceScatter(a, b, 4096, ncclFloat32, ncclSum, comm, stream));
    ++collectives;
    check(b, 4096, 3.0f, "reducescatter");
    // A group of two sizes (NCCL launches the larger first) and a send/receive pair.
    fill<<<(kMax + 255) / 256, 256, 0, stream>>>(a, kMax, mine);
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(a, b, 256, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclAllReduce(a + kMax / 2, b + kMax / 2, kMax / 2, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    collectives += 2;
    check(b, 256, 3.0f, "grouped allreduce (small)");
    check(b + kMax / 2, kMax / 2, 3.0f, "grouped allreduce (large)");
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend(a, 65536, ncclFloat32, 1 - rank, comm, stream));
    CHECK_NCCL(ncclRecv(b, 65536, ncclFloat32, 1 - rank, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    collectives += 2, p2p += 2;
    check(b, 65536, float(2 - rank), "send/recv");
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("expect rank %d\n", rank);
  std::printf("expect collectives %d\n", collectives);
  std::printf("expect p2p %d\n", p2p);
  std::printf("result %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
