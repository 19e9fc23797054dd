#pragma once
// The replay model of a run: each measured step as a dependency graph (compute per rank and phase, gradient
// readiness, negotiation cycles, fusion into buffers, collectives costed from this run's own size-to-time curve),
// replayed under changed settings. Waits are not copied from the trace: they come out of the replay (a buffer goes
// when its bytes are ready on every rank; a step ends when the slowest rank's last gradient is reduced). The one
// source of predicted step times and gains: `collscope predict` and the analyzer's findings ask here.
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/steps.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::predict {

// What to change. An unset field keeps the run's own value (run/job_settings.hpp).
struct Change {
  std::optional<std::int64_t> fusion_threshold_bytes{};  // HOROVOD_FUSION_THRESHOLD (bytes; 0 = no fusion)
  std::optional<double> cycle_time_ms{};                 // HOROVOD_CYCLE_TIME (ms)
  std::optional<int> backward_passes_per_step{};         // gradient accumulation: passes per reduction (>= 1)
  std::optional<double> bucket_cap_mb{};                 // PyTorch DDP's bucket_cap_mb (MB)
  bool fp16_compression = false;                       // gradients sent as fp16: bytes halved
  std::optional<std::int64_t> batch_size{};              // samples per rank per pass
  bool balanced = false;  // every rank computes as fast as the fastest in each phase: a straggler's true cost
  bool async = false;     // no rank waits for another: an upper bound on what removing waits can give
  bool empty() const;
};

// The settings a replay ran under (the run's own, with the change applied).
struct EffectiveSettings {
  std::int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  int backward_passes_per_step = 1;
  std::optional<double> bucket_cap_mb;
  bool fp16_compression = false;
  std::int64_t batch_size = 0;  // 0: unknown
  bool balanced = false, async = false;
};

struct Prediction {
  // Median step time (ms) of the replayed steps under the change, and its band (the 25th-75th percentile of the
  // per-step predictions, widened by how far the model misses the run's own steps).
  double step_ms = 0, step_low_ms = 0, step_high_ms = 0;
  double samples_per_s = 0, samples_per_s_low = 0, samples_per_s_high = 0;  // 0 when the batch size is unknown
  double baseline_step_ms = 0;          // measured: the run's median step
  double baseline_samples_per_s = 0;    // measured: run/steps.hpp's throughput
  double baseline_replay_step_ms = 0;   // the model on the run's own settings (how well it reproduces the run)
  int steps_replayed = 0;
  EffectiveSettings baseline, settings;
  std::vector<std::string> not_predicted;  // one line per knob the model cannot predict
  std::vector<std::string> assumptions;    // one line each: what the replay had to assume for this run
};

// One rank's part of one measured step, relative to the step's start (ns).
struct RankStep {
  double pre_ns = 0;       // before the gradients start to become ready (forward, data, a straggler's extra work)
  double backward_ns = 0;  // gradients become ready over this span, bytes in proportion to time
  double post_ns = 0;      // after its last gradient is reduced: the update and what follows, to the step's end
};

// CPU sharing inside one rank's part of a step (ns): how long its compute thread waited runnable for a CPU, and
// how long the communication threads of its host spent inside MPI per rank there (the mean over the host's ranks),
// in negotiations and in gradient reductions. MPI polls: such a thread is runnable all that time and takes a CPU
// from compute where there are fewer CPUs than busy threads.
struct RankCpu {
  double compute_run_queue_ns = 0;
  double negotiation_mpi_ns = 0;
  double gradient_mpi_ns = 0;
};

struct StepGraph {
  double measured_ns = 0;      // the step's measured duration (mean over ranks, run/steps.hpp)
  double gap_after_ns = 0;     // to the next step's start (0 for the last)
  std::vector<RankStep> ranks;  // per Run::ranks index
  std::vector<RankCpu> cpu;     // per Run::ranks index; empty without CPU sharing (ReplayModel::cpu_sharing)
};

// The size-to-time curve of the run's gradient collectives: transfer time (the shortest rank's call, no waiting)
// by bytes, medians per power-of-two size class, linear between them, extrapolated at the largest sizes' bandwidth.
class CostCurve {
 public:
  void add(std::int64_t bytes, double ns);
  void finish();
  double ns(double bytes) const;
  bool empty() const { return points_.empty(); }

 private:
  std::vector<std::pair<double, double>> samples_, points_;  // (bytes, ns)
  double ns_per_byte_ = 0;                                   // beyond the largest size class
};

// What a job's gradient traffic looks like, extracted once from a run.
struct ReplayModel {
  bool usable = false;
  std::string why_not;  // one line when !usable
  std::vector<StepGraph> steps;  // measured steps only
  double gradient_bytes = 0;     // per step, reduced by every rank (median)
  double mean_tensor_bytes = 0;  // from the fusion buffers' packs; 0 when unknown
  // Where each gradient tensor ends in a reduction's bytes, in the order the tensors become ready (cumulative
  // bytes, the last one gradient_bytes): from the job's broadcast of its parameters before the first step (one
  // broadcast per tensor, as Horovod's broadcast_parameters and the fusion trainer do), when those add up to the
  // gradient bytes. Empty when the sizes are unknown: buffers are then cut from mean_tensor_bytes.
  std::vector<double> tensor_ends;
  double negotiation_ns = 0;  // one negotiation (readiness agreement) per cycle, transfer time
  // CPU work on the communicating thread before each gradient collective (ns): a fixed part and a part per byte of
  // the buffer (packing it: Horovod's and the trainer's memcpy into the fusion buffer).
  double op_overhead_ns = 0;
  double op_overhead_ns_per_byte = 0;
  bool negotiates = false;       // a background thread agrees on readiness each cycle (Horovod)
  CostCurve cost;
  EffectiveSettings settings;    // the run's own
  int ranks = 0;
  // Per rank: the fastest rank's median compute per step over its own (<= 1), what --balanced scales its phases by.
  std::vector<RankStep> rank_speed;
  // Whether CPU sharing is replayed (StepGraph::cpu filled): a negotiating background thread apart from the thread
  // that marks the steps, with scheduler counters on the latter (docs/design.md, "Predict").
  bool cpu_sharing = false;
  double baseline_step_ns = 0, baseline_samples_per_s = 0;
  std::vector<std::string> assumptions;
};

// Builds the model of a run whose steps are known (run/steps.hpp).
ReplayModel build_model(const run::Run& run, const run::ClockAlignment& clocks, const run::MatchedRun& matched,
                        const run::StepSummary& steps);

// The model of the run in `run_dir`: loaded, aligned, matched, its steps found (the batch size from its command
// line), as `collscope predict` and the tuner's screen read a trace. Throws InputError naming the directory when it
// cannot be read; a run that cannot be replayed gives a model with usable false and why_not.
ReplayModel model_of_run(const std::string& run_dir);

// Replays every step of the model under the change.
Prediction predict(const ReplayModel& model, const Change& change);

// The predicted step time (ns) of the run's median step under the change: what findings quote.
struct Gain {
  double step_ns = 0;      // predicted median step
  double baseline_ns = 0;  // measured median step
  double saved_per_step_ns() const { return baseline_ns - step_ns; }
};
std::optional<Gain> predicted_gain(const ReplayModel& model, const Change& change);

}  // namespace collscope::predict
