#pragma once
// Puts every rank on one time line. Ranks of one host read the same CLOCK_MONOTONIC, so they share one offset
// (zero between them, exactly); hosts differ. Each host starts from its realtime anchors in meta, then the
// offsets between hosts are refined from the ends of synchronising collectives (allreduce, allgather, barrier ...:
// they finish within microseconds on all member ranks).
//   aligned_ns = raw CLOCK_MONOTONIC ns of the rank + offset_ns[rank index]
// The one clock alignment of collscope: the analyzer, the viewer and the Chrome export all use it.
#include <collscope/run/run.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace collscope::run {

struct ClockAlignment {
  std::vector<std::int64_t> offset_ns;         // per Run::ranks index; equal for ranks of one host; rank index 0's
                                               // host has the offset 0 (aligned time is its monotonic clock)
  std::vector<std::int64_t> anchor_offset_ns;  // from the realtime anchors alone
  std::vector<double> residual_ns;             // per rank: median |end − instance median end| after refinement
  double residual_p50_ns = 0;                  // over all ranks
  int instances_used = 0;                      // synchronising instances used for the refinement
  std::vector<std::string> hosts;              // distinct hosts, in rank order of first appearance
  std::vector<int> host_of_rank;               // per rank index: index into hosts
  // Run time 0 on the aligned clock: the earliest tracer start (meta clock_monotonic_start_ns) of any rank, or
  // the earliest event where no file has one. Every view of a run (report, timeline, Chrome export) counts
  // time from here.
  std::int64_t origin_ns = 0;
  // CLOCK_REALTIME at origin_ns (ns since the epoch) from rank index 0's anchors; 0 when it has none.
  std::int64_t realtime_origin_ns = 0;
  std::int64_t aligned(int rank_index, std::int64_t raw_ns) const { return raw_ns + offset_ns[rank_index]; }
};

class ClockAligner {
 public:
  // max_instances: synchronising instances sampled (evenly over the run) for the refinement.
  explicit ClockAligner(int max_instances = 4096) : max_instances_(max_instances) {}
  ClockAlignment align(const Run& run) const;

 private:
  ClockAlignment align_offsets(const Run& run) const;
  int max_instances_;
};

}  // namespace collscope::run
