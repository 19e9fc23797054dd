// Analysis speed and peak memory on generated traces: N ranks × K collectives each, three sizes.
// Usage: analyzer_bench [--ranks 64] [--collectives 160000] [--dir /tmp/collscope-bench] [--threads 2]
// Prints per size: rows, seconds, rows/s, peak RSS (getrusage), and the ratio of time per row to the smallest size.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace collscope::analyzer;
using namespace collscope::testing;

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
  fmt::print("{:>12} {:>10} {:>10} {:>12} {:>14} {:>16}\n", "rows", "gen s", "analyze s", "rows/s", "peak RSS MiB", "ns/row vs small");
  double base_ns_per_row = 0;
  for (std::int64_t per_rank : {collectives / 4, collectives / 2, collectives}) {
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
    std::int64_t rows = 0;
    if (!fs::exists(fs::path(run) / "rank-00000.sqlite")) {
      fs::remove_all(run);
      rows = write_synthetic_run(run, spec);
    } else {
      rows = std::int64_t(ranks) * spec.steps * spec.allreduces_per_step;
    }
    const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    // Each size in its own process: peak RSS (ru_maxrss) is per process and never goes down.
    // fork without exec, not the launcher (collscope/process): the child runs this code, nothing is started.
    int pipefd[2];
    if (pipe(pipefd) != 0) return 2;
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      AnalysisOptions o;
      o.threads = threads;
      const auto t0 = std::chrono::steady_clock::now();
      const Analysis a = analyze_run(run, o);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      const std::string msg = fmt::format("{} {} {} {}", s, ru.ru_maxrss, a.findings.size(), a.run.collective_count());
      if (write(pipefd[1], msg.data(), msg.size()) < 0) _exit(3);
      _exit(0);
    }
    close(pipefd[1]);
    char buf[256] = {};
    const auto got = read(pipefd[0], buf, sizeof buf - 1);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fmt::print(stderr, "analyzer_bench: analysis of {} failed\n", run);
      return 1;
    }
    double seconds = 0;
    long max_rss_kib = 0;
    std::size_t findings = 0, loaded = 0;
    std::sscanf(buf, "%lf %ld %zu %zu", &seconds, &max_rss_kib, &findings, &loaded);
    const double ns_per_row = seconds * 1e9 / double(loaded);
    if (base_ns_per_row == 0) base_ns_per_row = ns_per_row;
    fmt::print("{:>12} {:>10.1f} {:>10.2f} {:>12.0f} {:>14.0f} {:>16.2f}   ({} findings)\n", loaded, gen_s, seconds,
               double(loaded) / seconds, max_rss_kib / 1024.0, ns_per_row / base_ns_per_row, findings);
    (void)rows;
  }
  return 0;
}
