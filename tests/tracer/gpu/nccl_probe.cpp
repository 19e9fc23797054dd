// A program with a known set of NCCL calls, built twice: against the NCCL test double (nccl_probe_fake) and
// against the real libnccl (nccl_probe_real, where ncclCommInitRank fails without a GPU and the probe stops).
// It prints every return code, so a run under the tracer can be compared with a run without it.
//
// Calls after a successful init (test double), on a 4-rank communicator "world" as rank 1:
//   3 x ncclAllReduce(float, 1024 elements) on buffer A (in place), 1 x ncclBroadcast(root 0, 256 doubles),
//   group { ncclSend(peer 2, 100 int32) ; ncclRecv(peer 0, 100 int32) ; ncclAllGather(16 floats) },
//   nested group { group { ncclReduce(root 3, 8 int64) } ncclReduceScatter(32 floats per rank) },
//   ncclAllReduce(count 0) -> error ncclInvalidUsage (recorded with its status),
//   split(color 5) -> child with 2 x ncclAllReduce, split(color -1) -> no child,
//   ncclCommDestroy(child), ncclCommDestroy(world);
//   ncclCommInitAll(2) -> 1 x ncclAllReduce(10 int8) on the second, ncclCommInitRankConfig(2 ranks, another id),
//   destroy/abort all three; then a failing ncclCommInitRank(nranks 0).
// --group-by-size: after the nested group, one more group on world of ncclAllReduce(16 floats, buffer A) then
// ncclAllReduce(65536 floats, buffer C): NCCL launches a group's tasks largest first, so its per-function
// sequence numbers run in the other order than the calls (the profiler plugin's matching must see through it).
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <vector>

static int report(const char* what, ncclResult_t rc) {
  std::printf("%s -> %d\n", what, static_cast<int>(rc));
  return rc;
}

int main(int argc, char** argv) {
  const bool group_by_size = argc > 1 && std::strcmp(argv[1], "--group-by-size") == 0;
  int version = 0;
  report("ncclGetVersion", ncclGetVersion(&version));
  std::printf("version %d\n", version);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (ncclGetUniqueId(&id) != ncclSuccess) std::memcpy(id.internal, "offline-id", 10);
  ncclComm_t world = nullptr;
  const ncclResult_t init = ncclCommInitRank(&world, 4, id, 1);
  report("ncclCommInitRank", init);
  if (init != ncclSuccess) {
    std::printf("no communicator: stopping\n");
    return 0;
  }
  std::vector<char> a(1 << 16), b(1 << 16), c(1 << 16);
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x5eed);
  for (int i = 0; i < 3; ++i)
    report("ncclAllReduce", ncclAllReduce(a.data(), a.data(), 1024, ncclFloat32, ncclSum, world, stream));
  report("ncclBroadcast", ncclBroadcast(b.data(), b.data(), 256, ncclFloat64, 0, world, stream));
  report("ncclGroupStart", ncclGroupStart());
  report("ncclSend", ncclSend(a.data(), 100, ncclInt32, 2, world, stream));
  report("ncclRecv", ncclRecv(b.data(), 100, ncclInt32, 0, world, stream));
  report("ncclAllGather", ncclAllGather(a.data(), c.data(), 16, ncclFloat32, world, stream));
  report("ncclGroupEnd", ncclGroupEnd());
  report("ncclGroupStart", ncclGroupStart());
  report("ncclGroupStart", ncclGroupStart());
  report("ncclReduce", ncclReduce(a.data(), b.data(), 8, ncclInt64, ncclMax, 3, world, stream));
  report("ncclGroupEnd", ncclGroupEnd());
  report("ncclReduceScatter", ncclReduceScatter(c.data(), a.data(), 32, ncclFloat32, ncclSum, world, stream));
  report("ncclGroupEnd", ncclGroupEnd());
  if (group_by_size) {
    std::vector<char> big(65536 * 4);
    report("ncclGroupStart", ncclGroupStart());
    report("ncclAllReduce(small)", ncclAllReduce(a.data(), a.data(), 16, ncclFloat32, ncclSum, world, stream));
    report("ncclAllReduce(big)", ncclAllReduce(big.data(), big.data(), 65536, ncclFloat32, ncclSum, world, stream));
    report("ncclGroupEnd", ncclGroupEnd());
  }
  report("ncclAllReduce(0)", ncclAllReduce(a.data(), b.data(), 0, ncclFloat32, ncclSum, world, stream));
  ncclComm_t child = nullptr, none = nullptr;
  report("ncclCommSplit", ncclCommSplit(world, 5, 0, &child, nullptr));
  for (int i = 0; i < 2; ++i)
    report("ncclAllReduce(child)", ncclAllReduce(a.data(), a.data(), 64, ncclFloat16, ncclSum, child, stream));
  report("ncclCommSplit(nocolor)", ncclCommSplit(world, -1, 0, &none, nullptr));
  report("ncclCommDestroy(child)", ncclCommDestroy(child));
  report("ncclCommDestroy", ncclCommDestroy(world));
  // One process holding both ranks of a communicator, and a communicator made with a config and another id.
  ncclComm_t all[2] = {nullptr, nullptr};
  report("ncclCommInitAll", ncclCommInitAll(all, 2, nullptr));
  report("ncclAllReduce(all[1])", ncclAllReduce(a.data(), a.data(), 10, ncclInt8, ncclSum, all[1], stream));
  ncclUniqueId other_id = id;
  other_id.internal[100] ^= 1;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t configured = nullptr;
  report("ncclCommInitRankConfig", ncclCommInitRankConfig(&configured, 2, other_id, 0, &config));
  report("ncclCommDestroy(all[0])", ncclCommDestroy(all[0]));
  report("ncclCommAbort(all[1])", ncclCommAbort(all[1]));
  report("ncclCommDestroy(configured)", ncclCommDestroy(configured));
  ncclComm_t bad = nullptr;
  report("ncclCommInitRank(bad)", ncclCommInitRank(&bad, 0, id, 0));
  return 0;
}
