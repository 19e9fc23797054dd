#pragma once
// Scores a trial from its trace (the run's steps, as collscope::run defines them) or from its output (a regex).
// Rank files are read while the job may still be writing them, which is what early stopping uses.
#include <collscope/autotuner/search_space.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace collscope::autotuner {

struct StepProgress {
  int ranks = 0;                  // readable rank files
  int measured_steps = 0;         // measured (post-warm-up, ended on every rank) steps
  double throughput = 0;          // samples/s, run::StepSummary::throughput_samples_per_s
  double mean_step_ms = 0;        // mean duration of a measured step, over ranks
  std::string source;             // where the steps came from: "nvtx" or "inferred"
  double confidence = 0;          // run::StepSummary::confidence: 1 for NVTX, 0..1 inferred
  std::string basis;              // run::StepSummary::basis: what the steps rest on
};

// Reads RUN_DIR/rank-*.sqlite. nullopt when no rank has a measured step yet.
std::optional<StepProgress> read_step_progress(const std::string& run_dir, const std::string& step_range,
                                               int warmup_steps, double batch_size);

// Calls `line` for each line of the file at `path` (without its newline), reading 64 KiB at a time: a job's output of
// any size costs the tuner at most kMaxOutputLine bytes. A longer line is passed in kMaxOutputLine pieces.
inline constexpr std::size_t kMaxOutputLine = 64 * 1024;
void for_each_output_line(const std::string& path, const std::function<void(std::string_view)>& line);

// Last match of `pattern`'s first capture group, as a number, matched line by line (in `text`, or in the file at
// `path`, streamed). Inf and NaN are returned as they are; score_trial refuses them.
std::optional<double> value_from_output(const std::string& pattern, const std::string& text);
std::optional<double> value_from_output_file(const std::string& pattern, const std::string& path);

// A throughput the job printed itself, found by one of the patterns common jobs print (Horovod's benchmarks
// "Total img/sec on 2 CPU(s): 54.2 +-1.0", "123.4 samples/s", "img/sec", "images/s", "tokens/s", tqdm's "it/s",
// "throughput: 123.4"): the last match of the first pattern that matches anywhere in the output.
struct PrintedThroughput {
  double value = 0;
  std::string unit;     // "img/s", "samples/s", "it/s", ... as the job printed it
  std::string pattern;  // which pattern: "Horovod total img/sec", "samples/s", ...
  std::string line;     // the matched line (at most 120 bytes)
};
std::optional<PrintedThroughput> printed_throughput(const std::string& log_path);

// Where a study's scores come from. Scores from different sources are not comparable, so a study keeps the source of
// its first score (Study meta objective_source) and scores every later trial from it.
enum class ScoreSource { Any, Steps, Printed };
std::string_view score_source_name(ScoreSource s);  // "any", "steps", "printed"
ScoreSource score_source_from_name(std::string_view name);  // unknown: Any

// Inferred steps below this confidence are not used for the objective unless the study already scores from steps:
// the job's printed throughput, when it prints one, is the better measure then.
inline constexpr double kMinInferredStepConfidence = 0.5;

struct Score {
  std::optional<double> value;  // in the objective's units; nullopt when it cannot be computed
  std::string problem;          // why not
  ScoreSource source = ScoreSource::Any;  // Steps or Printed once scored
  std::string source_text;      // for people: "NVTX steps", "inferred steps (payload bytes, confidence 0.93)",
                                // "printed 'Total img/sec on 2 CPU(s): 54.2'", "regex /.../"
  std::string unit;             // the score's unit when it comes from printed output ("img/s"); else the objective's
  std::optional<double> step_s; // seconds per step at this score, when known (the --job-steps stop rule)
};

// batch_size: samples per rank per step (resolved from the objective's batch_size and the knob values); log_path: the
// job's output. Throughput: the trace's steps (NVTX, else inferred), else the job's printed throughput (the space's
// regex when it names one, else printed_throughput's patterns); `source` Printed skips the steps; Steps accepts inferred
// steps of any confidence and a printed rate only in the objective's unit (the same quantity). A value that
// is not a finite number (inf, nan) is no score: the trial fails with that reason.
Score score_trial(const Objective& objective, double batch_size, const std::string& run_dir, const std::string& log_path,
                  ScoreSource source = ScoreSource::Any);

// HOROVOD_AUTOTUNE's score of a run: payload bytes all-reduced per microsecond over the measured part (rank 0's
// allreduces carrying floating-point sums, from its first to its last), from the trace; nullopt without any.
std::optional<double> bytes_per_microsecond(const std::string& run_dir);

// Where a trial that was killed (time limit) hung: the analyzer's hang finding from the calls in flight its rank
// files kept ("hang: rank(s) 3 never made allreduce #80 on ..."), or "" when none hung in a collective or the
// files cannot be read.
std::string hang_summary(const std::string& run_dir);

}  // namespace collscope::autotuner
