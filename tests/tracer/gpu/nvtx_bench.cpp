// NVTX push+pop cost under collscope's injection, against the un-injected baseline, measured in the same run.
//   nvtx_bench [--pairs N] [--preload PATH]
// runs itself twice as a child: once with no NVTX tool (NVTX calls return at once), once with the preload as
// LD_PRELOAD and NVTX_INJECTION64_PATH (recording into a temporary run directory). Each child times
// 41 rounds of N (default 1000) nvtxRangePushA/nvtxRangePop pairs and reports the median ns per pair.
// Target: <= 60 ns. Exit status 1 when the injected cost is over the target.
#include <collscope/process/process.hpp>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Rounds of `pairs` pairs (2 events each) that stay under half of the tracer's 4096-event ring, with a pause between rounds
// for the writer thread to drain: this times the recording path, not the drop path of an overflowing ring.
double child_ns_per_pair(long pairs) {
  nvtxRangePushA("warm-up");  // the first call initialises NVTX (and loads the tool)
  nvtxRangePop();
  std::vector<double> rounds;
  for (int round = 0; round < 41; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < pairs; ++i) {
      nvtxRangePushA("bench-range");
      nvtxRangePop();
    }
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(pairs));
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

double run_child(const char* self, long pairs, const std::vector<std::pair<std::string, std::string>>& env) {
  collscope::process::Command command({self, "--pairs", std::to_string(pairs)});
  command.search_path = false;
  command.unset_env("NVTX_INJECTION64_PATH").unset_env("LD_PRELOAD");
  for (auto& [k, v] : env) command.set_env(k, v);
  command.set_env("NVTX_BENCH_CHILD", "1");
  command.out = collscope::process::Redirect::capture();
  try {
    const auto r = collscope::process::run(command);
    if (r.out.empty() || r.exit_code != 0) return -1;
    return std::atof(r.out.c_str());
  } catch (const collscope::process::LaunchError& e) {
    std::fprintf(stderr, "nvtx_bench: %s\n", e.what());
    return -1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  long pairs = 1000;
  std::string preload;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--preload") && i + 1 < argc) preload = argv[++i];
  }
  if (std::getenv("NVTX_BENCH_CHILD")) {
    std::printf("%.3f\n", child_ns_per_pair(pairs));
    return 0;
  }
  const std::string self = fs::canonical("/proc/self/exe").string();
  if (preload.empty()) {
    const char* env = std::getenv("COLLSCOPE_PRELOAD");
    preload = env && *env ? env : (fs::path(self).parent_path().parent_path() / "lib/libcollscope-preload.so").string();
  }
  if (!fs::exists(preload)) {
    std::fprintf(stderr, "nvtx_bench: %s: preload not found (use --preload)\n", preload.c_str());
    return 2;
  }
  const fs::path run_dir = fs::temp_directory_path() / ("collscope-nvtx-bench-" + std::to_string(getpid()));
  const double base = run_child(self.c_str(), pairs, {});
  const double injected = run_child(self.c_str(), pairs,
                                    {{"LD_PRELOAD", preload}, {"NVTX_INJECTION64_PATH", preload},
                                     {"COLLSCOPE_RUN_DIR", run_dir.string()}});
  std::error_code ec;
  fs::remove_all(run_dir, ec);
  if (base < 0 || injected < 0) {
    std::fprintf(stderr, "nvtx_bench: a child run failed\n");
    return 1;
  }
  std::printf("NVTX push+pop, %ld pairs x 41 rounds (median)\n", pairs);
  std::printf("  no tool (baseline):        %8.2f ns/pair\n", base);
  std::printf("  collscope injection:       %8.2f ns/pair   (target <= 60)\n", injected);
  std::printf("  ratio injected/baseline:   %8.1f x   added cost %.2f ns/pair\n", injected / std::max(base, 1e-9),
              injected - base);
  return injected <= 60.0 ? 0 : 1;
}
