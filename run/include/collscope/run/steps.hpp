#pragma once
// Training steps: NVTX ranges named "step" when present, else inferred from the repeating pattern of collectives.
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace collscope::run {

struct Step {
  int index = 0;
  std::int64_t start_ns = 0;  // aligned, earliest rank
  std::int64_t end_ns = 0;
  double duration_ns = 0;     // mean over ranks
  double comm_ns = 0;         // mean over ranks: time inside collectives (union of calls)
  double wait_ns = 0;         // mean over ranks: waiting for the last arriver
  double exposed_comm_ns = 0; // mean over ranks: communication not overlapped with compute (GPU kernels, NVTX
                              // ranges of threads without collectives), minus waiting
  std::vector<double> rank_duration_ns;  // per rank index
  std::vector<double> rank_wait_ns;      // per rank index
};

struct StepSummary {
  std::string source;  // "nvtx" or "inferred" or "none"
  int period_calls = 0;  // inferred: collectives per step on the reference communicator
  std::vector<Step> steps;
  double mean_step_ns = 0, median_step_ns = 0;
  double mean_comm_ns = 0, mean_exposed_ns = 0, mean_wait_ns = 0;
  double throughput_samples_per_s = 0;  // batch_size × ranks / mean step (0 when batch size unknown)
  bool cpu_compute_ranges = false;      // NVTX compute ranges (not GPU kernels) hid communication
};

class StepDetector {
 public:
  // batch_size: samples per rank per step (0 = unknown).
  explicit StepDetector(std::int64_t batch_size = 0) : batch_size_(batch_size) {}
  StepSummary detect(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched) const;

 private:
  std::int64_t batch_size_;
};

}  // namespace collscope::run
