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
  p.confidence = steps.confidence;
  p.basis = steps.basis;
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

namespace {
struct ThroughputPattern {
  const char* name;
  const char* unit;  // empty: the unit is the pattern's second capture group
  std::regex re;
};

// Most specific first: Horovod's benchmark summary, then per-worker summaries, then generic rates.
const std::vector<ThroughputPattern>& throughput_patterns() {
  static const std::vector<ThroughputPattern> patterns = [] {
    const auto icase = std::regex::ECMAScript | std::regex::icase;
    std::vector<ThroughputPattern> p;
    p.push_back({"Horovod total img/sec", "img/s", std::regex(R"(Total img/sec on \d+ \w+\(s\):\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))", icase)});
    p.push_back({"Horovod img/sec per worker", "img/s per worker",
                 std::regex(R"(Img/sec per \w+:\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))", icase)});
    p.push_back({"rate per second", "",
                 std::regex(R"(([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*((?:samples|images|img|sequences|seqs|tokens|examples)\s*/\s*s(?:ec)?)\b)",
                            icase)});
    p.push_back({"rate per second", "",
                 std::regex(R"(([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*((?:samples|images|sequences|tokens|examples) per second))", icase)});
    p.push_back({"throughput", "", std::regex(R"(throughput\s*[:=]?\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*([a-z/]*))", icase)});
    p.push_back({"tqdm it/s", "it/s", std::regex(R"(([0-9]+(?:\.[0-9]*)?)\s*it/s\b)")});
    return p;
  }();
  return patterns;
}

std::string step_source_text(const StepProgress& p) {
  if (p.source == "nvtx") return "NVTX steps";
  return fmt::format("inferred steps (confidence {:.2f}: {})", p.confidence, p.basis);
}
}  // namespace

std::optional<PrintedThroughput> printed_throughput(const std::string& log_path) {
  const auto& patterns = throughput_patterns();
  std::vector<std::optional<PrintedThroughput>> found(patterns.size());
  for_each_output_line(log_path, [&](std::string_view line) {
    using It = std::string_view::const_iterator;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      for (std::regex_iterator<It> it(line.begin(), line.end(), patterns[i].re), end; it != end; ++it) {
        double v = 0;
        try {
          v = std::stod((*it)[1].str());
        } catch (const std::exception&) {
          continue;
        }
        std::string unit = patterns[i].unit;
        if (unit.empty() && it->size() > 2) unit = (*it)[2].str();
        found[i] = PrintedThroughput{v, unit, patterns[i].name, std::string(line.substr(0, 120))};
      }
    }
  });
  for (auto& f : found)
    if (f) return f;
  return std::nullopt;
}

std::string_view score_source_name(ScoreSource s) {
  switch (s) {
    case ScoreSource::Steps: return "steps";
    case ScoreSource::Printed: return "printed";
    case ScoreSource::Any: break;
  }
  return "any";
}

ScoreSource score_source_from_name(std::string_view name) {
  if (name == "steps") return ScoreSource::Steps;
  if (name == "printed") return ScoreSource::Printed;
  return ScoreSource::Any;
}

namespace {
// Ranks of a trace (rank files readable), 0 when none: what turns a printed samples/s into a step time.
int trace_ranks(const std::string& run_dir) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(run_dir, ec))
    if (e.path().filename().string().starts_with("rank-") && e.path().extension() == ".sqlite") ++n;
  return n;
}

Score failed(std::string problem) {
  Score s;
  s.problem = std::move(problem);
  return s;
}

Score finite(Score s) {
  // An infinite or undefined score would win every comparison (inf) or none (nan), and poison the model.
  if (s.value && !std::isfinite(*s.value)) {
    s.problem = fmt::format("objective: {} is not a finite number", *s.value);
    s.value.reset();
  }
  return s;
}
}  // namespace

Score score_trial(const Objective& objective, double batch_size, const std::string& run_dir, const std::string& log_path,
                  ScoreSource source) {
  Score out;
  if (objective.kind == ObjectiveKind::Regex) {
    out.value = value_from_output_file(objective.regex, log_path);
    if (!out.value) return failed(fmt::format("objective: no match for /{}/ in the job's output", objective.regex));
    out.source = ScoreSource::Printed;
    out.source_text = fmt::format("regex /{}/ over the job's output", objective.regex);
    return finite(out);
  }
  // Without a batch size the steps give steps per second, not samples: a rate the job prints (samples/s, img/sec)
  // is then the better objective, so a new study takes it first when there is one.
  const bool rate_without_batch = objective.kind == ObjectiveKind::Throughput && !objective.batch_size_given &&
                                  objective.regex.empty() && source == ScoreSource::Any;
  if (rate_without_batch) source = printed_throughput(log_path) ? ScoreSource::Printed : ScoreSource::Any;
  std::string steps_problem;
  if (source != ScoreSource::Printed) {
    const auto progress = read_step_progress(run_dir, objective.step_range, objective.warmup_steps, batch_size);
    // Low-confidence inferred steps only when the study already scores from steps (or nothing else is printed).
    const bool usable = progress && (progress->source == "nvtx" || source == ScoreSource::Steps ||
                                     progress->confidence >= kMinInferredStepConfidence);
    if (usable) {
      out.value = objective.kind == ObjectiveKind::StepTime ? progress->mean_step_ms : progress->throughput;
      if (objective.kind == ObjectiveKind::Throughput && !objective.batch_size_given) {
        // run/'s throughput with a batch of 1 is steps x ranks per second: steps per second is what it measures.
        out.value = progress->mean_step_ms > 0 && progress->ranks > 0 ? *out.value / progress->ranks : *out.value;
        out.unit = "steps/s";
      }
      out.source = ScoreSource::Steps;
      out.source_text = step_source_text(*progress);
      out.step_s = progress->mean_step_ms * 1e-3;
      return finite(out);
    }
    steps_problem = progress ? fmt::format("inferred steps too uncertain (confidence {:.2f} < {}: {})", progress->confidence,
                                           kMinInferredStepConfidence, progress->basis)
                             : fmt::format("no steps after {} warm-up steps (no NVTX '{}' ranges, none inferred)",
                                           objective.warmup_steps, objective.step_range);
    if (objective.kind == ObjectiveKind::StepTime)
      return failed(fmt::format("objective: {} in {}", steps_problem, run_dir));
  }
  // The job's own printed throughput: the space's regex when it names one, else the common patterns.
  if (!objective.regex.empty()) {
    out.value = value_from_output_file(objective.regex, log_path);
    out.unit = objective.unit;
    out.source_text = fmt::format("printed, regex /{}/", objective.regex);
  } else if (const auto printed = printed_throughput(log_path)) {
    out.value = printed->value;
    out.unit = printed->unit;
    out.source_text = fmt::format("printed {} ('{}')", printed->pattern, printed->line);
    // Seconds per step: samples/s over the world's batch; it/s is steps/s.
    const int ranks = trace_ranks(run_dir);
    if (printed->unit == "it/s" && printed->value > 0) out.step_s = 1.0 / printed->value;
    else if (printed->value > 0 && ranks > 0 && printed->unit.find("per worker") == std::string::npos)
      out.step_s = batch_size * ranks / printed->value;
    else if (printed->value > 0) out.step_s = batch_size / printed->value;
  }
  // A study scoring from steps takes a printed rate only in the objective's own unit (the same quantity, measured
  // by the job): anything else would compare two different numbers.
  const std::string steps_unit = objective.batch_size_given ? objective.unit : "steps/s";
  if (out.value && source == ScoreSource::Steps && out.unit != steps_unit)
    return failed(fmt::format("objective: {} in {}; the job printed {} {}, not {} as this study's scores from steps",
                              steps_problem, run_dir, *out.value, out.unit, steps_unit));
  if (out.value && source == ScoreSource::Steps) out.source_text += " (the trace's steps: " + steps_problem + ")";
  if (!out.value) {
    const std::string printed_problem = objective.regex.empty()
                                            ? std::string("no throughput printed (img/sec, samples/s, it/s, throughput: ...)")
                                            : fmt::format("no match for /{}/ in the job's output", objective.regex);
    return failed(fmt::format("objective: {}{}{}", steps_problem.empty() ? "" : steps_problem + "; ",
                                      printed_problem, steps_problem.empty() ? "" : fmt::format(" (trace {})", run_dir)));
  }
  out.source = ScoreSource::Printed;
  return finite(out);
}

std::optional<double> bytes_per_microsecond(const std::string& run_dir) {
  run::Run run;
  try {
    run = run::load_run(run_dir);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (run.ranks.empty()) return std::nullopt;
  std::int64_t bytes = 0, first = 0, last = 0;
  bool any = false;
  for (const auto& c : run.ranks.front().collectives) {
    if (c.op != store::Op::Allreduce || c.reduction != run::Reduction::Sum || c.bytes <= 16) continue;
    bytes += c.bytes;
    first = any ? std::min(first, c.start_ns) : c.start_ns;
    last = any ? std::max(last, c.end_ns) : c.end_ns;
    any = true;
  }
  if (!any || last <= first) return std::nullopt;
  return static_cast<double>(bytes) / (static_cast<double>(last - first) * 1e-3);
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
