// Trial scores: NVTX "step" ranges straight from the rank files (SQLite, read-only, WAL-safe), or a regex.
#include <collscope/autotuner/scoring.hpp>

#include <collscope/analyzer/analysis.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
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
      return {std::nullopt, fmt::format("objective: no NVTX '{}' ranges after {} warm-up steps in {}", objective.step_range,
                                        objective.warmup_steps, run_dir)};
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
