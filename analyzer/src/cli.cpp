// CLI registration: `collscope analyze` and `collscope compare`. Parsing only sets `action`; work runs after.
#include <collscope/analyzer/cli.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/launcher_process.hpp>
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

namespace collscope::analyzer {
namespace {

struct AnalyzeArgs {
  std::string run_dir;
  std::string format = "text";
  std::string output;
  double link_gbps = 0;
  std::int64_t batch_size = 0;
};

struct CompareArgs {
  std::string base_dir, new_dir;
  std::string max_regression = "5%";
  std::string junit;
  std::string format = "text";
  std::string output;
  std::int64_t batch_size = 0;
  bool allow_new_findings = false;
};

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  store::write_output_file(path, [&](std::ostream& f) { f << text; });
}

// "5%", "5", "0.05" → 0.05 (a bare number above 1 is read as percent).
double parse_fraction(const std::string& text) {
  std::string s = text;
  bool percent = !s.empty() && s.back() == '%';
  if (percent) s.pop_back();
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError(fmt::format("--max-regression {}: not a percentage (e.g. 5%)", text));
  }
  if (percent || v > 1) v /= 100;
  if (v < 0) throw InputError(fmt::format("--max-regression {}: must not be negative", text));
  return v;
}

// One run read and analysed; whatever fails below names the run.
Analysis analyze_named(const std::string& run_dir, const AnalysisOptions& options) {
  return naming_input(run_dir, "analysing this run", [&] { return analyze_run(run_dir, options); });
}

// Started as one of several processes by mpirun or srun: `command` (analyze, compare) runs in process 0 alone, which
// writes the one report (the same as without the launcher) and gives the exit code; the others stop at once
// instead of repeating the whole analysis and writing the same files at the same time. Process 0 takes the cores
// of those that stop on its host: it may run on every CPU its cgroup allows (a launcher binds it to one), with one
// loader thread per process of the launcher's on the host (one per core when it does not say). Says on stderr
// which mode runs. nullopt when this process stops, else the loader threads.
std::optional<int> loader_threads_under_launcher(const char* command) {
  const auto launcher = launcher_process();
  if (!launcher || launcher->size == 1) return 0;  // 0: one per core, as without a launcher
  const std::string of = launcher->size > 0 ? fmt::format(" of {}", launcher->size) : "";
  if (launcher->rank != 0) {
    std::fprintf(stderr, "collscope %s: process %d%s under %s: process 0 does the work; this one stops\n", command,
                 launcher->rank, of.c_str(), launcher->launcher.c_str());
    return std::nullopt;
  }
  const int threads = launcher->local_size;  // 0 when the launcher does not say: one per core, as alone
  const bool unbound = run_on_every_allowed_cpu();
  const std::string loaders = threads > 0 ? fmt::format("{} loader thread(s)", threads) : "one loader thread per core";
  std::fprintf(stderr, "collscope %s: process 0%s under %s: one-process analysis here with %s%s, the other "
               "processes stop (the analysis is not split across processes)\n",
               command, of.c_str(), launcher->launcher.c_str(), loaders.c_str(),
               unbound ? "" : " (bound to the launcher's cores)");
  return threads;
}

int run_analyze(const AnalyzeArgs& args) {
  const auto format = report_format_from_name(args.format);
  const auto threads = loader_threads_under_launcher("analyze");
  if (!threads) return 0;
  AnalysisOptions o;
  o.threads = *threads;
  o.link_gbps = args.link_gbps;
  o.batch_size = args.batch_size;
  const Analysis a = analyze_named(args.run_dir, o);
  write_output(args.output, render_report(a, format));
  for (const auto& p : a.run.problems) std::fprintf(stderr, "collscope analyze: %s\n", p.c_str());
  return 0;
}

int run_compare(const CompareArgs& args) {
  const double gate = parse_fraction(args.max_regression);
  const auto format = report_format_from_name(args.format);
  const auto threads = loader_threads_under_launcher("compare");
  if (!threads) return 0;
  AnalysisOptions o;
  o.threads = *threads;
  o.batch_size = args.batch_size;
  // One run's events in memory at a time: each run is reduced to its results before the next is read.
  const auto results_of = [&](const std::string& dir) {
    Analysis a = analyze_named(dir, o);
    std::string read_from = a.run.dir;
    return std::pair<RunResults, std::string>(std::move(static_cast<RunResults&>(a)), std::move(read_from));
  };
  const auto [base, base_dir] = results_of(args.base_dir);
  const auto [next, new_dir] = results_of(args.new_dir);
  const Comparison c = compare_results(base, base_dir, next, new_dir, gate, !args.allow_new_findings);
  std::string text;
  switch (format) {
    case ReportFormat::Json: text = json_text(comparison_json(c)) + "\n"; break;
    case ReportFormat::Markdown: text = comparison_markdown(c); break;
    default: text = comparison_text(c); break;
  }
  write_output(args.output, text);
  if (!args.junit.empty()) write_output(args.junit, comparison_junit(c));
  return c.gate_failed() ? 1 : 0;
}

}  // namespace

void add_cli_commands(CLI::App& app, std::function<int()>& action) {
  auto a = std::make_shared<AnalyzeArgs>();
  auto* analyze = app.add_subcommand("analyze", "Analyze a traced run: stragglers, bottlenecks, mismatches, what to change");
  analyze->add_option("RUN_DIR", a->run_dir, "Run directory with rank-*.sqlite")->required();
  analyze->add_option("--format", a->format, "text, json, markdown or html")->capture_default_str()->type_name("FORMAT");
  analyze->add_option("-o,--output", a->output, "Write the report to FILE (default: stdout)")->type_name("FILE");
  analyze->add_option("--link-gbps", a->link_gbps, "Bus bandwidth the links should reach (GB/s): findings and the "
                      "HTML report compare with it")->type_name("GB/S")->check(CLI::NonNegativeNumber);
  analyze->add_option("--batch-size", a->batch_size, "Samples per rank per step (default: from the command line)")
      ->type_name("N")->check(CLI::NonNegativeNumber);
  analyze->footer("Example: collscope analyze run1 --format html -o run1.html");
  analyze->callback([&action, a] { action = [a] { return run_analyze(*a); }; });

  auto c = std::make_shared<CompareArgs>();
  auto* compare = app.add_subcommand("compare", "Compare two runs; exit 1 on a significant slowdown or a new finding");
  compare->add_option("BASE", c->base_dir, "Baseline run directory")->required();
  compare->add_option("NEW", c->new_dir, "New run directory")->required();
  compare->add_option("--max-regression", c->max_regression, "Tolerated slowdown of the median step (e.g. 5%)")
      ->capture_default_str()->type_name("PERCENT");
  compare->add_option("--junit", c->junit, "Write JUnit XML for CI to FILE")->type_name("FILE");
  compare->add_option("--format", c->format, "text, json or markdown (a PR comment)")->capture_default_str()->type_name("FORMAT");
  compare->add_option("-o,--output", c->output, "Write the comparison to FILE (default: stdout)")->type_name("FILE");
  compare->add_option("--batch-size", c->batch_size, "Samples per rank per step")->type_name("N")->check(CLI::NonNegativeNumber);
  compare->add_flag("--allow-new-findings", c->allow_new_findings,
                    "A new finding (a straggler, a hang...) is listed but does not fail the comparison");
  compare->footer("Example: collscope compare base-run new-run --max-regression 5% --junit compare.xml");
  compare->callback([&action, c] { action = [c] { return run_compare(*c); }; });
}

std::string text_report_for_run(const std::string& run_dir) {
  try {
    return text_report(analyze_run(run_dir));
  } catch (const std::exception& e) {
    return fmt::format("collscope analyze: {}\n", e.what());
  }
}

}  // namespace collscope::analyzer
