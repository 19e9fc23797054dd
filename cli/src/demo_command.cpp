// `collscope demo`: the README's first command ends here. Runs the bundled fusion trainer on 2 MPI ranks under
// the tracer, rank 1 made slow, then prints what the trace files hold and (when built) the analyzer's report.
#include <collscope/run/format.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "commands.hpp"

#ifdef COLLSCOPE_HAVE_ANALYZER
#include <collscope/analyzer/cli.hpp>
#endif

namespace collscope::cli {
namespace fs = std::filesystem;

namespace {

struct DemoOptions {
  std::string run_dir = "collscope-demo";
  int ranks = 2;
  int steps = 30;
  int slow_rank = 1;
  double slow_ms = 20;
};

// Cores this process may run on (its affinity mask, as mpirun sees them).
int usable_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void print_summary(const fs::path& run_dir, int ranks) {
  fmt::print("\n== collscope demo: trace summary ({}) ==\n", run_dir.string());
  for (int rank = 0; rank < ranks; ++rank) {
    store::TraceReader reader((run_dir / store::rank_file_name(rank)).string());
    std::int64_t count = 0, bytes = 0, comm_ns = 0;
    std::vector<store::CollectiveRow> slowest;
    reader.for_each_collective([&](const store::CollectiveRow& c) {
      ++count;
      bytes += c.bytes;
      comm_ns += c.end_ns - c.start_ns;
      slowest.push_back(c);
      std::sort(slowest.begin(), slowest.end(),
                [](const auto& a, const auto& b) { return a.end_ns - a.start_ns > b.end_ns - b.start_ns; });
      if (slowest.size() > 3) slowest.pop_back();
    });
    const auto t0 = reader.meta_int(store::meta_key::kMonotonicStart).value_or(0);
    const auto t1 = reader.meta_int(store::meta_key::kMonotonicEnd).value_or(0);
    const double wall_ns = double(t1 - t0);
    fmt::print("rank {}: {} collectives, {}, {} in communication ({:.0f} % of {} traced)\n", rank, count,
               run::format_bytes(double(bytes)), run::format_duration(double(comm_ns)),
               wall_ns > 0 ? 100.0 * double(comm_ns) / wall_ns : 0.0, run::format_duration(wall_ns));
    for (const auto& c : slowest)
      fmt::print("    slowest: {} #{} of {} took {}\n", store::op_name(c.op), c.seq, run::format_bytes(double(c.bytes)),
                 run::format_duration(double(c.end_ns - c.start_ns)));
  }
}

int run_demo(const DemoOptions& o) {
  const auto trainer = find_program("fusion_trainer");
  if (!trainer)
    throw InputError(fmt::format("fusion_trainer: the demo's sample program is not installed next to collscope ({}) "
                                 "(build it: cmake --build build --target fusion_trainer)",
                                 self_dir()));
  if (o.slow_rank >= o.ranks)
    throw InputError(fmt::format("--slow-rank {}: the demo runs ranks 0 to {}", o.slow_rank, o.ranks - 1));
  std::vector<std::string> cmd = {"mpirun", "-np", std::to_string(o.ranks), "--oversubscribe"};
  if (::geteuid() == 0) cmd.push_back("--allow-run-as-root");
  for (const char* a : {"--mca", "btl", "self,vader"}) cmd.push_back(a);
  cmd.insert(cmd.end(), {*trainer, "--steps", std::to_string(o.steps), "--slow-rank", std::to_string(o.slow_rank),
                         "--slow-ms", fmt::format("{}", o.slow_ms)});
  fmt::print("collscope demo: tracing {} ranks of the fusion trainer (rank {} slowed by {} ms per step)\n", o.ranks,
             o.slow_rank, o.slow_ms);
  if (const int cores = usable_cores(); o.ranks > cores)
    fmt::print("{}\n", run::wrap_text(fmt::format("collscope demo: {} ranks on {} cores: the ranks take turns on the "
                                                 "cores, and a rank's wait for a core can be as long as rank {}'s extra "
                                                 "{} ms, so the injected straggler may not stand out (or another rank may "
                                                 "look slow). Use --ranks {} or fewer for a clean result.",
                                                 o.ranks, cores, o.slow_rank, o.slow_ms, cores),
                                     100, 4));
  std::fflush(stdout);
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  const fs::path job_output = fs::path(o.run_dir) / "job-output.log";
  // The demo owns its directory: an earlier demo run is replaced. The job's own output (one long JSON line per
  // rank) goes to a file, not the terminal.
  const int rc = trace({.run_dir = o.run_dir, .force = true, .summary = false, .job_output = job_output.string()}, cmd);
  if (rc != 0) {
    std::fprintf(stderr, "collscope demo: the traced job exited with %d; its output is in %s\n", rc, job_output.c_str());
    return rc;
  }
  print_summary(o.run_dir, o.ranks);
#ifdef COLLSCOPE_HAVE_ANALYZER
  fmt::print("\n{}", collscope::analyzer::text_report_for_run(o.run_dir));
#endif
  fmt::print("\nThe job's output: {}\n", job_output.string());
  fmt::print("Next: collscope analyze {0} --format html -o {0}.html   |   collscope view {0}\n", o.run_dir);
  if (const auto space = find_data("samples/fusion_trainer/space.yaml"))
    fmt::print("Tune it: collscope tune {} --trials 12 -- \\\n    mpirun -np 2 --oversubscribe \\\n    {} --batch-size {{batch_size}}\n",
               *space, *trainer);
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("demo", "Trace the bundled fusion trainer on 2 ranks (one slow) and report");
  auto o = std::make_shared<DemoOptions>();
  cmd->add_option("-o,--output", o->run_dir, "Run directory (an earlier demo run there is replaced)")
      ->capture_default_str()
      ->type_name("DIR");
  cmd->add_option("--ranks", o->ranks, "MPI ranks (at most the cores, for a clean result)")->capture_default_str()->check(CLI::Range(2, 64));
  cmd->add_option("--steps", o->steps, "Training steps")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--slow-rank", o->slow_rank, "Rank made slow")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--slow-ms", o->slow_ms, "Extra compute per step on the slow rank (ms)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->callback([&action, o] { action = [o] { return run_demo(*o); }; });
}

}  // namespace collscope::cli
