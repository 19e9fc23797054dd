#pragma once
// A lockstep run with exact times, written with the real TraceWriter: for the viewer's tests and benchmark, where
// every box on the timeline has a known place. Every step: compute, then `collectives_per_step` world
// collectives (allreduce, and a bcast every fourth), each rank's GPU kernels on one stream, NVTX "step" ranges
// on the main thread. Arrivals are exact: rank `late_rank` arrives `late_ns` late at every collective with
// seq % late_every == 0, so the wait of every other rank there is exactly late_ns; all ranks leave at last
// arrival + transfer_ns. (synthetic_run.hpp simulates a noisy job with injected problems for the analyzer.)
#include <collscope/store/schema.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace collscope::testing {

struct LockstepSpec {
  int ranks = 3;
  int ranks_per_host = 2;          // hosts "node0", "node1", ...
  bool hosts_round_robin = false;  // rank r on host r % hosts instead of r / ranks_per_host
  int steps = 10;
  int collectives_per_step = 4;
  int kernels_per_step = 4;        // GPU activities per rank per step
  std::int64_t compute_ns = 2'000'000;
  std::int64_t collective_gap_ns = 50'000;   // between the end of one collective and the next arrival
  std::int64_t transfer_ns = 200'000;
  std::int64_t bytes = 1 << 20;
  int late_rank = 2;
  std::int64_t late_ns = 1'000'000;
  int late_every = 4;              // seq % late_every == 0
  std::int64_t fusion_buffer_bytes = 4 << 20;  // collectives send from one reused buffer of this capacity
  std::int64_t base_ns = 1'000'000'000;        // CLOCK_MONOTONIC of the first step (and the tracer's start)
  // The collectives' library: MPI (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM) or NCCL (a world-sized ncclComm_t,
  // ncclFloat32, ncclSum), as the tracer records each.
  store::Backend backend = store::Backend::Mpi;
};

inline std::int64_t step_ns(const LockstepSpec& s) {
  return s.compute_ns + s.collectives_per_step * (s.late_ns + s.transfer_ns + s.collective_gap_ns);
}

// Arrival (call entry) of `rank` at the k-th collective of step `step`, CLOCK_MONOTONIC ns.
inline std::int64_t arrival_ns(const LockstepSpec& s, int rank, int step, int k) {
  const std::int64_t seq = static_cast<std::int64_t>(step) * s.collectives_per_step + k;
  const std::int64_t slot =
      s.base_ns + step * step_ns(s) + s.compute_ns + k * (s.late_ns + s.transfer_ns + s.collective_gap_ns);
  return slot + (rank == s.late_rank && seq % s.late_every == 0 ? s.late_ns : 0);
}
// Exit of every rank from the k-th collective of step `step`, CLOCK_MONOTONIC ns.
inline std::int64_t end_ns(const LockstepSpec& s, int step, int k) {
  std::int64_t last = 0;
  for (int r = 0; r < s.ranks; ++r) last = std::max(last, arrival_ns(s, r, step, k));
  return last + s.transfer_ns;
}
inline store::Op op_of(int k) { return k % 4 == 3 ? store::Op::Bcast : store::Op::Allreduce; }

// Writes dir/rank-NNNNN.sqlite for every rank (creates dir).
void write_lockstep_run(const std::string& dir, const LockstepSpec& spec);

}  // namespace collscope::testing
