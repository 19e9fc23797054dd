// `collscope demo`: the README's first command ends here. Runs the bundled fusion trainer on 2 MPI ranks under
// the tracer, rank 1 made slow, then prints what the trace files hold and (when built) the analyzer's report.
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

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
    const double wall_ms = (t1 - t0) / 1e6;
    fmt::print("rank {}: {} collectives, {:.1f} MiB, {:.1f} ms in communication ({:.0f} % of {:.1f} ms traced)\n",
               rank, count, bytes / 1048576.0, comm_ns / 1e6, wall_ms > 0 ? 100.0 * comm_ns / 1e6 / wall_ms : 0.0,
               wall_ms);
    for (const auto& c : slowest)
      fmt::print("    slowest: {} seq {} of {} bytes took {:.2f} ms\n", store::op_name(c.op), c.seq, c.bytes,
                 (c.end_ns - c.start_ns) / 1e6);
  }
}

int run_demo(const DemoOptions& o) {
  const fs::path bin = self_dir();
  const fs::path trainer = bin / "fusion_trainer";
  if (!fs::exists(trainer)) throw InputError(fmt::format("{}: sample not built", trainer.string()));
  std::vector<std::string> cmd = {"mpirun", "-np", std::to_string(o.ranks), "--oversubscribe"};
  if (::geteuid() == 0) cmd.push_back("--allow-run-as-root");
  for (const char* a : {"--mca", "btl", "self,vader"}) cmd.push_back(a);
  cmd.insert(cmd.end(), {trainer.string(), "--steps", std::to_string(o.steps), "--slow-rank",
                         std::to_string(o.slow_rank), "--slow-ms", fmt::format("{}", o.slow_ms)});
  fmt::print("collscope demo: tracing {} ranks of the fusion trainer (rank {} slowed by {} ms per step)\n", o.ranks,
             o.slow_rank, o.slow_ms);
  std::fflush(stdout);
  const int rc = trace(o.run_dir, cmd, TraceOptions{});
  if (rc != 0) {
    std::fprintf(stderr, "collscope demo: the traced job exited with %d\n", rc);
    return rc;
  }
  print_summary(o.run_dir, o.ranks);
#ifdef COLLSCOPE_HAVE_ANALYZER
  fmt::print("\n{}", collscope::analyzer::text_report_for_run(o.run_dir));
#endif
  fmt::print("\nNext: collscope analyze {0}   |   collscope view {0}   |   collscope export {0} -o {0}.json  (Perfetto)\n",
             o.run_dir);
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("demo", "Trace the bundled fusion trainer on 2 ranks (one slow) and report");
  auto o = std::make_shared<DemoOptions>();
  cmd->add_option("-o,--output", o->run_dir, "Run directory")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "MPI ranks")->capture_default_str()->check(CLI::Range(2, 64));
  cmd->add_option("--steps", o->steps, "Training steps")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--slow-rank", o->slow_rank, "Rank made slow")->capture_default_str();
  cmd->add_option("--slow-ms", o->slow_ms, "Extra compute per step on the slow rank (ms)")->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_demo(*o); }; });
}

}  // namespace collscope::cli
