#pragma once
// Steps inferred from the collectives when the job marks none (internal to run/; StepDetector is the interface).
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/steps.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace collscope::run::detail {

struct StepWindow {
  std::int64_t start_ns, end_ns;  // raw, the rank's clock
};

struct InferredSteps {
  StepMethod method = StepMethod::None;
  std::vector<std::vector<StepWindow>> windows;  // per rank index, one per step (all ranks the same count)
  int period_calls = 0;
  std::int64_t bytes_per_step = 0;
  bool first_step_partial = false;  // the first window starts at its first payload call: its compute is not seen
  double confidence = 0;
  std::string basis;  // what the steps rest on, or why none were claimed
};

// Thresholds of step inference, named once (ns and fractions).
struct StepInferenceLimits {
  double min_pattern_match = 0.9;          // call pattern: share of calls that repeat with the period
  double min_boundary_hits = 0.9;          // payload bytes: step totals met exactly, of all step ends tried
  double min_bytes_covered = 0.8;          // payload bytes: share of the class's bytes inside whole steps
  int max_calls_per_step = 20000;          // payload bytes: longest step tried, in calls of the class
  int max_leading_calls = 8;               // payload bytes: calls of the class before the first step tried
  double min_outside_share = 0.1;          // of the median step: time outside MPI (compute), in 90 %
  double min_outside_ns = 100e3;           //   of the steps, and at least this: a loop without it is a benchmark's
};

InferredSteps infer_steps(const Run& run, const MatchedRun& matched, const StepInferenceLimits& limits = {});

}  // namespace collscope::run::detail
