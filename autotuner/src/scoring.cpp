// Trial scores: the run's steps (collscope::run: NVTX step ranges, else inferred), or a regex over the output.
#include <collscope/autotuner/scoring.hpp>

#include <collscope/analyzer/analysis.hpp>
#include <collscope/run/steps.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <vector>

namespace collscope::autotuner {

std::optional<StepProgress> read_step_progress(const std::string& run_dir, const std::string& step_range,
                                               int warmup_steps, double batch_size) {
  // The run's steps as collscope::run defines them for everyone (NVTX step ranges, else inferred from the
  // collectives). A trial still running has partial files: whatever is committed so far is read.
  run::Run run;
  try {
    run = run::load_run(run_dir);
  } catch (const Error&) {
    return std::nullopt;  // nothing readable yet
  }
  const auto clocks = run::ClockAligner().align(run);
  const auto matched = run::CollectiveMatcher().match(run, clocks);
  const auto steps = run::StepDetector({.range_name = step_range,
                                        .warmup_steps = warmup_steps,
                                        .batch_size = static_cast<std::int64_t>(std::llround(batch_size))})
                         .detect(run, clocks, matched);
  if (steps.measured_steps() <= 0) return std::nullopt;
  StepProgress p;
  p.ranks = static_cast<int>(run.ranks.size());
  p.measured_steps = steps.measured_steps();
  p.throughput = steps.throughput_samples_per_s;
  p.mean_step_ms = steps.mean_step_ns * 1e-6;
  p.source = steps.source;
  return p;
}

std::optional<double> value_from_output(const std::string& pattern, const std::string& text) {
  const std::regex re(pattern);
  std::optional<double> value;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    if (it->size() < 2 || !(*it)[1].matched) continue;
    try {
      std::size_t used = 0;
      const std::string s = (*it)[1].str();
      const double v = std::stod(s, &used);
      if (used > 0) value = v;
    } catch (const std::exception&) {
    }
  }
  return value;
}

Score score_trial(const Objective& objective, double batch_size, const std::string& run_dir, const std::string& output) {
  if (objective.kind == ObjectiveKind::Regex) {
    if (auto v = value_from_output(objective.regex, output)) return {v, ""};
    return {std::nullopt, fmt::format("objective: no match for /{}/ in the job's output", objective.regex)};
  }
  const auto progress = read_step_progress(run_dir, objective.step_range, objective.warmup_steps, batch_size);
  if (!progress)
    return {std::nullopt, fmt::format("objective: no steps after {} warm-up steps in {} (no NVTX '{}' ranges, and "
                                      "none inferred from the collectives)",
                                      objective.warmup_steps, run_dir, objective.step_range)};
  if (objective.kind == ObjectiveKind::StepTime) return {progress->mean_step_ms, ""};
  return {progress->throughput, ""};
}

std::string hang_summary(const std::string& run_dir) {
  try {
    const auto a = analyzer::analyze_run(run_dir);
    const auto hangs = analyzer::detect_hangs(a.run, a.matched, {});
    return hangs.empty() ? std::string() : hangs.front().title;
  } catch (const std::exception&) {
    return {};  // no readable trace: the timeout alone is the reason
  }
}

}  // namespace collscope::autotuner
