#pragma once
// Training steps: NVTX ranges named "step" when present, else inferred from the repeating pattern of collectives.
// The one definition of a step, of step time and of throughput, used by the analyzer, the autotuner and the viewer.
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::run {

inline constexpr std::string_view kStepRangeName = "step";

// Whether an NVTX range name marks a step under `range_name`: the name itself in any case, alone or followed by
// a non-letter ("step", "Step", "step 12", "step_3", "step:3"; not "steps" or "stepper").
bool is_step_range_name(std::string_view name, std::string_view range_name = kStepRangeName);

// The string ids of a run that name step ranges (is_step_range_name over Run::strings, computed once).
class StepNames {
 public:
  explicit StepNames(const Run& run, std::string_view range_name = kStepRangeName);
  bool contains(std::int32_t string_id) const {
    return string_id >= 0 && static_cast<std::size_t>(string_id) < ids_.size() && ids_[string_id];
  }
  bool empty() const { return count_ == 0; }

 private:
  std::vector<bool> ids_;
  std::size_t count_ = 0;
};

struct StepOptions {
  std::string range_name = std::string(kStepRangeName);  // NVTX step ranges (see is_step_range_name)
  int warmup_steps = 0;           // leading steps left out of the step time and throughput
  std::int64_t batch_size = 0;    // samples per rank per step; 0 = unknown (no throughput)
};

struct Step {
  int index = 0;
  std::int64_t start_ns = 0;  // aligned, earliest rank
  std::int64_t end_ns = 0;
  double duration_ns = 0;     // mean over ranks
  double comm_ns = 0;         // mean over ranks: time inside collectives (union of calls; non-blocking ones by their
                              // time in MPI, run/wait_states.hpp)
  double wait_ns = 0;         // mean over ranks: waiting for the others (run/lateness.hpp)
  double exposed_comm_ns = 0; // mean over ranks: communication not overlapped with compute (GPU kernels, NVTX
                              // ranges of threads without collectives), minus waiting
  std::vector<double> rank_duration_ns;  // per rank index
  std::vector<double> rank_wait_ns;      // per rank index (run/lateness.hpp)
  std::vector<std::int64_t> rank_start_ns;  // per rank index: its step window, aligned
};

// Where one rank's step time goes, mean over the measured steps, ns (HTA's temporal breakdown, from the trace):
//   compute      GPU kernels that are not NCCL's inside the rank's step window (their union); 0 with
//                compute_recorded false when the rank recorded none (a CPU job: its compute is inside other_ns;
//                NVTX phases do not count, as they hold their thread's waits too);
//   comm         inside collectives (the union of calls; a non-blocking one by its time in MPI): Step::comm_ns;
//   overlap      of comm, the time kernels ran beside it (communication hidden by compute);
//   other        the step less compute ∪ comm: idle, or work on a CPU.
// step = compute + comm − overlap + other. (Who waits for whom is run/lateness.hpp's, not a part of this.)
struct RankTimeBreakdown {
  double step_ns = 0, compute_ns = 0, comm_ns = 0, overlap_ns = 0, other_ns = 0;
  bool compute_recorded = false;
};

// How the steps were found.
enum class StepMethod {
  None,
  Nvtx,          // NVTX ranges named as StepOptions::range_name (the job's own marks)
  CallPattern,   // the same sequence of (op, bytes) repeats on the reference communicator
  PayloadBytes,  // the bytes one class of payload collectives (e.g. float sum allreduces) carries add up to the
                 // same total every step, however they are split (Horovod's fusion varies from step to step)
};
std::string_view step_method_name(StepMethod m);  // "none", "nvtx", "call_pattern", "payload_bytes"

// Inferred steps below this confidence are not claimed (the hang fixture's 5 "steps" in the first 9 ms of a 24 s
// run scored 0.00): the report keeps the basis and says no steps were claimed.
inline constexpr double kMinInferredStepConfidence = 0.2;

struct StepSummary {
  std::string source;  // "nvtx" or "inferred" or "none"
  std::string range_name = std::string(kStepRangeName);  // NVTX steps: the range name (StepOptions::range_name)
  StepMethod method = StepMethod::None;
  // How sure the steps are, 0..1: 1 for NVTX ranges; inferred: how exactly the pattern repeats × how regular the
  // step times are × how many steps back it (see docs/analyzer.md). confidence_label() words it.
  double confidence = 0;
  std::string basis;     // one line: what the steps rest on, or why there are none
  int period_calls = 0;  // call pattern: collectives per step on the reference communicator
  std::int64_t bytes_per_step = 0;  // payload bytes: what each step reduces
  int warmup_steps = 0;  // steps[0 .. warmup_steps) are not measured
  std::vector<Step> steps;
  // Over the measured steps (after warm-up):
  double mean_step_ns = 0, median_step_ns = 0;
  double mean_comm_ns = 0, mean_exposed_ns = 0, mean_wait_ns = 0;
  std::int64_t span_ns = 0;  // first measured step's start to the last step's end (aligned), gaps included
  // Samples per second: batch size × ranks × measured steps / span_ns. The span, not the sum of step times, so
  // whatever runs between steps (data loading, a cycle wait) counts against throughput. 0 when the batch size
  // is unknown.
  double throughput_samples_per_s = 0;
  bool cpu_compute_ranges = false;      // NVTX compute ranges (not GPU kernels) hid communication
  std::vector<RankTimeBreakdown> rank_breakdown;  // per rank index, over the measured steps; empty without them

  int measured_steps() const { return std::max(0, static_cast<int>(steps.size()) - warmup_steps); }
  // Index of the step whose window [start_ns, end_ns) holds aligned time t, or -1 (before, between or after steps).
  int step_at(std::int64_t t) const;
  std::string_view confidence_label() const;  // "high" (>= 0.8), "medium" (>= 0.5), "low"
};

class StepDetector {
 public:
  explicit StepDetector(StepOptions options = {}) : options_(std::move(options)) {}
  StepSummary detect(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched) const;

 private:
  StepOptions options_;
};

}  // namespace collscope::run
