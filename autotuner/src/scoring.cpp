// Trial scores: the run's steps (collscope::run: NVTX step ranges, else inferred), or a regex over the output.
#include <collscope/autotuner/scoring.hpp>

#include <collscope/analyzer/analysis.hpp>
#include <collscope/run/steps.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
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

void for_each_output_line(const std::string& path, const std::function<void(std::string_view)>& line) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chunk(64 * 1024);
  std::string pending;  // the line being assembled, at most kMaxOutputLine bytes
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::string_view data(chunk.data(), static_cast<std::size_t>(in.gcount()));
    for (std::size_t at = 0; at < data.size();) {
      const std::size_t newline = data.find('\n', at);
      const std::size_t end = newline == std::string_view::npos ? data.size() : newline;
      std::string_view piece = data.substr(at, end - at);
      while (pending.size() + piece.size() > kMaxOutputLine) {
        const std::size_t room = kMaxOutputLine - pending.size();
        pending.append(piece.substr(0, room));
        line(pending);
        pending.clear();
        piece.remove_prefix(room);
      }
      pending.append(piece);
      if (newline == std::string_view::npos) break;
      line(pending);
      pending.clear();
      at = newline + 1;
    }
  }
  if (!pending.empty()) line(pending);
}

namespace {
// The matcher of value_from_output*: keeps the last number captured.
struct LastCapture {
  std::regex re;
  std::optional<double> value;
  explicit LastCapture(const std::string& pattern) : re(pattern) {}
  void scan(std::string_view text) {
    using It = std::string_view::const_iterator;
    for (std::regex_iterator<It> it(text.begin(), text.end(), re), end; it != end; ++it) {
      if (it->size() < 2 || !(*it)[1].matched) continue;
      try {
        std::size_t used = 0;
        const double v = std::stod((*it)[1].str(), &used);
        if (used > 0) value = v;
      } catch (const std::exception&) {
      }
    }
  }
};
}  // namespace

std::optional<double> value_from_output(const std::string& pattern, const std::string& text) {
  LastCapture last(pattern);
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    last.scan(rest.substr(0, newline));
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
  }
  return last.value;
}

std::optional<double> value_from_output_file(const std::string& pattern, const std::string& path) {
  LastCapture last(pattern);
  for_each_output_line(path, [&](std::string_view line) { last.scan(line); });
  return last.value;
}

Score score_trial(const Objective& objective, double batch_size, const std::string& run_dir, const std::string& log_path) {
  std::optional<double> value;
  if (objective.kind == ObjectiveKind::Regex) {
    value = value_from_output_file(objective.regex, log_path);
    if (!value) return {std::nullopt, fmt::format("objective: no match for /{}/ in the job's output", objective.regex)};
  } else {
    const auto progress = read_step_progress(run_dir, objective.step_range, objective.warmup_steps, batch_size);
    if (!progress)
      return {std::nullopt, fmt::format("objective: no steps after {} warm-up steps in {} (no NVTX '{}' ranges, and "
                                        "none inferred from the collectives)",
                                        objective.warmup_steps, run_dir, objective.step_range)};
    value = objective.kind == ObjectiveKind::StepTime ? progress->mean_step_ms : progress->throughput;
  }
  // An infinite or undefined score would win every comparison (inf) or none (nan), and poison the model.
  if (!std::isfinite(*value))
    return {std::nullopt, fmt::format("objective: {} is not a finite number", *value)};
  return {value, ""};
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
