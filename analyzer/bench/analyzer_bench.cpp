// Analysis speed and peak memory on generated traces: N ranks × K collectives each, at K/2 and K (twice the rows).
// Usage: analyzer_bench [--ranks 64] [--collectives 160000] [--dir /tmp/collscope-bench] [--threads 2]
// Prints per size: rows, seconds and peak RSS (getrusage) of `analyze_run`, and of a bare scan of the same rows
// (every rank file's collectives, the columns the loader reads, through the store's reader, on as many threads):
// the floor under any analysis that reads its rows once. Each is measured in a process of its own, in this run.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/run/parallel.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace collscope::analyzer;
using namespace collscope::testing;

namespace {

// What one measured child reports: seconds, its peak RSS and two counts (findings, rows).
struct Measured {
  double seconds = 0;
  long max_rss_kib = 0;
  std::size_t findings = 0, rows = 0;
};

// Runs `work` in a child of its own: peak RSS (ru_maxrss) is per process and never goes down. fork without exec,
// not the launcher (collscope/process): the child runs this code, nothing is started. nullopt when it failed.
std::optional<Measured> measure_in_child(const std::function<Measured()>& work) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    const auto t0 = std::chrono::steady_clock::now();
    Measured m = work();
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const std::string msg = fmt::format("{} {} {} {}", m.seconds, ru.ru_maxrss, m.findings, m.rows);
    if (write(pipefd[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(0);
  }
  close(pipefd[1]);
  char buf[256] = {};
  const auto got = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  Measured m;
  std::sscanf(buf, "%lf %ld %zu %zu", &m.seconds, &m.max_rss_kib, &m.findings, &m.rows);
  return m;
}

// Every rank file's collectives, the loader's columns, decoded and summed so that nothing is optimised away.
Measured bare_scan(const std::string& run, int threads) {
  const auto files = collscope::store::rank_files(run);
  std::atomic<std::size_t> rows{0};
  std::atomic<std::int64_t> checksum{0};
  collscope::run::parallel_for(files.size(), [&](std::size_t i) {
    collscope::store::TraceReader reader(files[i]);
    std::size_t n = 0;
    std::int64_t sum = 0;
    reader.for_each<collscope::store::CollectiveRow>(collscope::run::kLoadedCollectiveColumns,
                                                     [&](const collscope::store::CollectiveRow& r) {
                                                       ++n;
                                                       sum += r.end_ns - r.start_ns + r.bytes + r.seq;
                                                     });
    rows += n;
    checksum += sum;
  }, threads);
  Measured m;
  m.rows = rows;
  m.findings = static_cast<std::size_t>(checksum.load() & 1);  // only keeps the sum alive
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 64;
  std::int64_t collectives = 160000;
  int threads = 2;
  std::string dir = (fs::temp_directory_path() / "collscope-analyzer-bench").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--collectives")) collectives = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
  }
  fmt::print("analyzer_bench: {} ranks, up to {} collectives per rank, {} loader threads\n", ranks, collectives, threads);
  fmt::print("{:>12} {:>8} {:>10} {:>10} {:>8} {:>12} {:>12} {:>10} {:>12}\n", "rows", "gen s", "analyze s", "scan s",
             "ratio", "analyze MiB", "scan MiB", "B/row", "findings");
  for (std::int64_t per_rank : {collectives / 2, collectives}) {
    const std::string run = fmt::format("{}/{}", dir, per_rank);
    SyntheticRunSpec spec;
    spec.ranks = ranks;
    spec.allreduces_per_step = 8;
    spec.steps = static_cast<int>(per_rank / spec.allreduces_per_step);
    spec.compute_ms = 1;
    spec.allreduce_bytes = 1 << 20;
    spec.slow_rank = 3;
    spec.slow_ms = 0.5;
    const auto g0 = std::chrono::steady_clock::now();
    if (!fs::exists(fs::path(run) / "rank-00000.sqlite")) {
      fs::remove_all(run);
      write_synthetic_run(run, spec);
    }
    const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    // The scan first: it also brings the files into the page cache, so the analysis is not charged for the disk.
    const auto scan = measure_in_child([&] { return bare_scan(run, threads); });
    const auto analysis = measure_in_child([&] {
      AnalysisOptions o;
      o.threads = threads;
      const Analysis a = analyze_run(run, o);
      return Measured{.findings = a.findings.size(), .rows = a.run.collective_count()};
    });
    if (!scan || !analysis) {
      fmt::print(stderr, "analyzer_bench: {} of {} failed\n", scan ? "the analysis" : "the scan", run);
      return 1;
    }
    fmt::print("{:>12} {:>8.1f} {:>10.2f} {:>10.2f} {:>8.2f} {:>12.0f} {:>12.0f} {:>10.1f} {:>12}\n", analysis->rows,
               gen_s, analysis->seconds, scan->seconds, analysis->seconds / scan->seconds,
               analysis->max_rss_kib / 1024.0, scan->max_rss_kib / 1024.0,
               analysis->max_rss_kib * 1024.0 / double(analysis->rows), analysis->findings);
  }
  return 0;
}
