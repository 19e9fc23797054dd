#pragma once
// Puts every rank on one time line. Starts from the realtime anchors in meta, then refines the offsets from the
// ends of synchronising collectives (allreduce, allgather, barrier ...: they finish within microseconds on all
// member ranks). aligned_ns = raw CLOCK_MONOTONIC ns of the rank + offset_ns[rank index].
#include <collscope/run/run.hpp>

#include <cstdint>
#include <vector>

namespace collscope::run {

struct ClockAlignment {
  std::vector<std::int64_t> offset_ns;         // per Run::ranks index; rank index 0 has the anchor offset
  std::vector<std::int64_t> anchor_offset_ns;  // from the realtime anchors alone
  std::vector<double> residual_ns;             // per rank: median |end − instance median end| after refinement
  double residual_p50_ns = 0;                  // over all ranks
  int instances_used = 0;                      // synchronising instances used for the refinement
  std::int64_t aligned(int rank_index, std::int64_t raw_ns) const { return raw_ns + offset_ns[rank_index]; }
};

class ClockAligner {
 public:
  // max_instances: synchronising instances sampled (evenly over the run) for the refinement.
  explicit ClockAligner(int max_instances = 4096) : max_instances_(max_instances) {}
  ClockAlignment align(const Run& run) const;

 private:
  int max_instances_;
};

}  // namespace collscope::run
