// CLI registration: `collscope analyze` and `collscope compare`. Parsing only sets `action`; work runs after.
#include <collscope/analyzer/cli.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/cluster/launcher_process.hpp>
#include <collscope/cluster/shared_load.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <fmt/format.h>

#include <chrono>
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

// How this process takes part when a launcher started several (`mpirun -np N collscope analyze RUN`, srun).
struct UnderLauncher {
  bool stops = false;  // another process does the work
  int threads = 0;     // loader threads: 0 is one per core, as without a launcher
  // The processes that read a share of each run's rank files for process 0 (cluster/shared_load.hpp); null when
  // this process loads alone.
  std::unique_ptr<cluster::MpiProcesses> processes;
};

// Started as one of several processes: every process reads a share of the rank files over the launcher's MPI and
// process 0 analyses the run and writes the one report (the same as without the launcher) and gives the exit code.
// Where MPI cannot be used (no library opens, or it is not the launcher's), process 0 works alone
// (cluster::alone_in_process_zero). Says on stderr which mode runs.
UnderLauncher join_launcher(const char* command) {
  const auto launcher = cluster::launcher_process();
  if (!launcher || launcher->size == 1) return {};
  std::string no_mpi;
  try {
    UnderLauncher u;
    u.processes = cluster::MpiProcesses::join(*launcher);
    if (u.processes->size() == 1) return {};  // a launcher that did not say how many (PMIx) started one: alone
    u.threads = cluster::loader_threads_per_process(launcher->local_size);
    if (u.processes->rank() == 0)
      std::fprintf(stderr, "collscope %s: process 0 of %d under %s: each process reads a share of the rank files "
                   "with %d loader thread(s) (MPI: %s); process 0 analyses and writes the report\n",
                   command, u.processes->size(), launcher->launcher.c_str(), u.threads,
                   u.processes->library().c_str());
    return u;
  } catch (const Error& e) {
    no_mpi = e.what();
  }
  const auto threads = cluster::alone_in_process_zero(command, no_mpi);
  UnderLauncher u;
  u.stops = !threads;
  u.threads = threads.value_or(0);
  return u;
}

// One run analysed, its loading shared among the launcher's processes where there are some. nullopt at the
// processes other than 0, which have sent their share.
std::optional<Analysis> analyze_named(const std::string& run_dir, const AnalysisOptions& options, UnderLauncher& u,
                                      const char* command) {
  if (!u.processes) return analyze_named(run_dir, options);
  const auto t0 = std::chrono::steady_clock::now();
  LoadOptions lo;
  lo.threads = u.threads;
  auto shared =
      naming_input(run_dir, "loading this run", [&] { return cluster::load_run_shared(run_dir, lo, *u.processes); });
  if (!shared.run) return std::nullopt;
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string shares;
  for (std::size_t p = 0; p < shared.files_per_process.size(); ++p)
    shares += p == 0 ? fmt::format("{} file(s)", shared.files_per_process[p])
                     : fmt::format("; {} file(s), {} sent", shared.files_per_process[p],
                                   run::format_bytes(double(shared.bytes_per_process[p])));
  if (shared.files_read_again > 0)
    shares += fmt::format("; {} file(s) the others could not read, read by process 0", shared.files_read_again);
  std::fprintf(stderr, "collscope %s: %s loaded by %zu processes in %.2f s (%s)\n", command, run_dir.c_str(),
               shared.files_per_process.size(), load_seconds, shares.c_str());
  cluster::run_on_every_allowed_cpu();  // the analysis after the load is process 0's alone
  Analysis a = naming_input(run_dir, "analysing this run", [&] { return analyze(std::move(*shared.run), options); });
  a.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

int run_analyze(const AnalyzeArgs& args) {
  const auto format = report_format_from_name(args.format);
  auto under = join_launcher("analyze");
  if (under.stops) return 0;
  AnalysisOptions o;
  o.threads = under.threads;
  o.link_gbps = args.link_gbps;
  o.batch_size = args.batch_size;
  const auto a = analyze_named(args.run_dir, o, under, "analyze");
  if (!a) return 0;
  write_output(args.output, render_report(*a, format));
  for (const auto& p : a->run.problems) std::fprintf(stderr, "collscope analyze: %s\n", p.c_str());
  return 0;
}

int run_compare(const CompareArgs& args) {
  const double gate = parse_fraction(args.max_regression);
  const auto format = report_format_from_name(args.format);
  auto under = join_launcher("compare");
  if (under.stops) return 0;
  AnalysisOptions o;
  o.threads = under.threads;
  o.batch_size = args.batch_size;
  // One run's events in memory at a time: each run is reduced to its results before the next is read.
  const auto results_of = [&](const std::string& dir) -> std::optional<std::pair<RunResults, std::string>> {
    auto a = analyze_named(dir, o, under, "compare");
    if (!a) return std::nullopt;
    std::string read_from = a->run.dir;
    return std::pair<RunResults, std::string>(std::move(static_cast<RunResults&>(*a)), std::move(read_from));
  };
  auto base_results = results_of(args.base_dir);
  auto new_results = results_of(args.new_dir);
  if (!base_results || !new_results) return 0;  // a process that sent its shares
  const auto& [base, base_dir] = *base_results;
  const auto& [next, new_dir] = *new_results;
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
