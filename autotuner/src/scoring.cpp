// Trial scores: NVTX "step" ranges straight from the rank files (SQLite, read-only, WAL-safe), or a regex.
#include <collscope/autotuner/scoring.hpp>

#include <collscope/analyzer/analysis.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <vector>

namespace collscope::autotuner {

namespace {
// Ended step ranges of one rank, (start_ns, end_ns) in its CLOCK_MONOTONIC, in start order.
std::vector<std::pair<std::int64_t, std::int64_t>> read_steps(const std::string& path, const std::string& name) {
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return steps;
  }
  sqlite3_busy_timeout(db, 200);
  sqlite3_stmt* q = nullptr;
  const char* sql =
      "SELECT r.start_ns, r.end_ns FROM nvtx_ranges r JOIN strings s ON s.id = r.name "
      "WHERE s.value = ?1 AND r.end_ns IS NOT NULL AND r.end_ns > r.start_ns ORDER BY r.start_ns";
  if (sqlite3_prepare_v2(db, sql, -1, &q, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(q, 1, name.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(q) == SQLITE_ROW) steps.emplace_back(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1));
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return steps;
}
}  // namespace

std::optional<StepProgress> read_step_progress(const std::string& run_dir, const std::string& step_range,
                                               int warmup_steps, double batch_size) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) return std::nullopt;
  StepProgress p;
  double step_ms_sum = 0;
  int min_steps = -1;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("rank-") || !file.ends_with(".sqlite")) continue;
    const auto steps = read_steps(entry.path().string(), step_range);
    if (static_cast<int>(steps.size()) <= warmup_steps) continue;
    const int measured = static_cast<int>(steps.size()) - warmup_steps;
    const std::int64_t first = steps[static_cast<std::size_t>(warmup_steps)].first;
    const std::int64_t last = steps.back().second;
    double duration_ns = 0;
    for (std::size_t i = static_cast<std::size_t>(warmup_steps); i < steps.size(); ++i)
      duration_ns += static_cast<double>(steps[i].second - steps[i].first);
    // Steps back to back: the span from the first measured start to the last end is the time they took,
    // including anything between steps (data loading, cycle waits), which throughput must include.
    const double span_s = static_cast<double>(last - first) * 1e-9;
    if (span_s <= 0) continue;
    p.throughput += batch_size * measured / span_s;
    step_ms_sum += duration_ns * 1e-6 / measured;
    ++p.ranks;
    min_steps = min_steps < 0 ? measured : std::min(min_steps, measured);
  }
  if (p.ranks == 0) return std::nullopt;
  p.measured_steps = min_steps;
  p.mean_step_ms = step_ms_sum / p.ranks;
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
    return {std::nullopt, fmt::format("objective: no NVTX '{}' ranges after {} warm-up steps in {}", objective.step_range,
                                      objective.warmup_steps, run_dir)};
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
