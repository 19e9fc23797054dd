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

struct Score {
  std::optional<double> value;  // in the objective's units; nullopt when it cannot be computed
  std::string problem;          // why not
};

// batch_size: samples per rank per step (resolved from the objective's batch_size and the knob values); log_path: the
// job's output. A value that is not a finite number (inf, nan) is no score: the trial fails with that reason.
Score score_trial(const Objective& objective, double batch_size, const std::string& run_dir, const std::string& log_path);

// Where a trial that was killed (time limit) hung: the analyzer's hang finding from the calls in flight its rank
// files kept ("hang: rank(s) 3 never made allreduce #80 on ..."), or "" when none hung in a collective or the
// files cannot be read.
std::string hang_summary(const std::string& run_dir);

}  // namespace collscope::autotuner
