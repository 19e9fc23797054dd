#pragma once
// TEST DOUBLE of NCCL's profiler plugin host (part of libnccl_test_double.so): when NCCL_PROFILER_PLUGIN is set,
// the double loads that plugin as NCCL 2.28 does (dlopen RTLD_LOCAL; ncclProfiler_v5, else _v4, else _v3;
// NCCL_TEST_DOUBLE_PROFILER_API=4 or 3 makes it an NCCL that knows no newer version) and drives it through the
// documented lifecycle of every collective it is given a task for (communicators of 2+ ranks, count > 0):
//   v5: CollApi/P2pApi start+stop inside the call; at launch (the call, or the outermost ncclGroupEnd, tasks
//       ordered by size, largest first, as NCCL's planner does) Group -> Coll/P2p start (seqNumber per function)
//       -> stop; then on the communicator's proxy thread, per channel: a send and a receive ProxyOp with 4 steps
//       of chunk bytes, and a KernelCh with GPU timestamps.
// GPU clock of the double: CLOCK_MONOTONIC + kGpuClockOffsetNs, each timestamp reported 2 us after it happened.
// Channel c of a collective runs (c + 1) x kChannelNs from one common start, so its GPU span is exactly
// channels x kChannelNs. Channels: 2 below 64 KiB, else 4; point-to-point 1. Algorithm TREE/LL below 64 KiB,
// else RING/SIMPLE.
#include <cstddef>
#include <cstdint>

namespace nccl_double {

inline constexpr std::int64_t kGpuClockOffsetNs = 987'654'321'000;
inline constexpr std::int64_t kChannelNs = 10'000;
inline constexpr std::int64_t kChunkBytes = 65536;

struct Comm;
enum class Func : int { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4, Send = 6, Recv = 7 };

Comm* new_comm();
void delete_comm(Comm* comm);
// Called by the double's entry points. All are no-ops when no plugin was loaded.
void comm_created(Comm* comm, std::uint64_t comm_id, int nranks, int rank, bool on_helper_thread);
void comm_destroyed(Comm* comm);
// A call NCCL accepted: API events now; the task at once, or at the outermost group end.
void call(Comm* comm, Func func, const void* sendbuf, void* recvbuf, std::size_t count, int datatype, int root,
          int peer, void* stream);
void group_start();
void group_end();

}  // namespace nccl_double
