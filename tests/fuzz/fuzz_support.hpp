#pragma once
// The fuzz test's machinery: run the built `collscope` on one mutated input under a memory limit and a deadline,
// judge what came back, and mutate files byte by byte. What counts as a good outcome is one rule for every
// command (docs/reliability.md): normal output (exit 0, or 1 from compare's gate), or exactly one line on stderr,
// "collscope: <the input>: <problem>", and exit 2. Never a signal, a sanitizer report, a hang past kDeadline, an
// "internal error" or "out of memory" (a bound missing somewhere), or more than kMemoryLimit of memory.
#include <collscope/process/process.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace collscope::fuzz {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the runtime reserves terabytes of address space: limit RSS through ASan instead
#else
constexpr bool kSanitized = false;
#endif

// A checking build runs up to ~12x slower (ASan+UBSan: `tune show --report` over 9 000 trials, 1.5 s -> 15 s of
// CPU), and when other builds load the machine it gets a fraction of a core (at load 8 on 2 cores that report ran
// past 60 s): its deadline is longer; a real hang runs past either.
constexpr auto kDeadline = std::chrono::seconds(kSanitized ? 180 : 10);
constexpr std::int64_t kMemoryLimit = std::int64_t{1} << 30;  // bytes

struct Outcome {
  int exit_code = -1;  // -1 when killed
  int signal = 0;
  bool timed_out = false;
  std::int64_t max_rss_bytes = 0;
  double cpu_seconds = 0;   // user + system time of the command (its children included only if it waited for them)
  double wall_seconds = 0;  // from start to exit
  std::string out, err;  // stdout and stderr as written
};

// Runs `argv` (argv[0] a path) in `dir`, stdin from /dev/null, stdout and stderr into dir/out.txt and dir/err.txt,
// in its own process group, with at most kMemoryLimit of address space (of resident memory under ASan), killed
// with its whole group after kDeadline.
inline Outcome run_bounded(const fs::path& dir, const std::vector<std::string>& argv) {
  process::Command command(argv);
  command.search_path = false;
  command.working_dir = dir.string();
  command.in = process::Redirect::null();
  command.out = process::Redirect::file((dir / "out.txt").string());
  command.err = process::Redirect::file((dir / "err.txt").string());
  if (kSanitized) {
    std::string asan_options = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
    asan_options += ":hard_rss_limit_mb=1024:max_allocation_size_mb=1024";
    command.set_env("ASAN_OPTIONS", asan_options);
  } else {
    command.limits.push_back({RLIMIT_AS, static_cast<unsigned long long>(kMemoryLimit),
                              static_cast<unsigned long long>(kMemoryLimit)});
  }
  Outcome o;
  auto child = process::Process::start(command);
  auto result = child.wait_for(kDeadline);
  if (!result) {
    o.timed_out = true;
    result = child.terminate(process::Seconds(0));  // SIGKILL to its whole group
  }
  ::kill(-child.pid(), SIGKILL);  // whatever the command left behind in its group (a trial's job)
  o.exit_code = result->exited() ? result->exit_code : -1;
  o.signal = result->signal;
  o.wall_seconds = result->wall_s;
  o.max_rss_bytes = result->max_rss_bytes;
  o.cpu_seconds = result->user_cpu_s + result->system_cpu_s;
  o.out = test::read_file(dir / "out.txt");
  o.err = test::read_file(dir / "err.txt");
  return o;
}

// What the output of a successful command must be.
enum class Output {
  Text,      // something on stdout
  Json,      // stdout is one JSON document
  JsonFile,  // `file` holds one JSON document
  File,      // `file` exists and is not empty
  Any,       // nothing to check (a tuner whose trials fail still ends normally)
};

struct Expectation {
  std::vector<std::string> named;  // an error line must contain one of these (the inputs as given)
  Output output = Output::Text;
  fs::path file;                   // for JsonFile / File, relative to the case directory
  bool gate = false;               // exit 1 is a normal outcome (compare's regression gate, a tune without success)
};

// "" when the outcome is one the rules allow, else what is wrong, in one line.
inline std::string judge(const fs::path& dir, const Outcome& o, const Expectation& want) {
  if (o.timed_out) return "hang: still running after " + std::to_string(kDeadline.count()) + " s";
  if (o.signal) return "killed by signal " + std::to_string(o.signal);
  for (const char* bad : {"runtime error:", "AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "terminate called",
                          "internal error", "out of memory", "Segmentation fault", "Aborted"})
    if (o.err.find(bad) != std::string::npos) return std::string("stderr says '") + bad + "': " + o.err.substr(0, 400);
  if (!kSanitized && o.max_rss_bytes > kMemoryLimit)
    return "used " + std::to_string(o.max_rss_bytes >> 20) + " MiB of memory";
  if (o.exit_code == 2) {
    const auto newline = o.err.find('\n');
    if (newline == std::string::npos || newline + 1 != o.err.size())
      return "exit 2 without exactly one line on stderr: " + o.err.substr(0, 400);
    if (!o.err.starts_with("collscope: ")) return "error line does not start with 'collscope: ': " + o.err;
    for (const auto& name : want.named)
      if (o.err.find(name) != std::string::npos) return "";
    return "error line names no input: " + o.err;
  }
  if (o.exit_code != 0 && !(want.gate && o.exit_code == 1))
    return "exit " + std::to_string(o.exit_code) + ": " + o.err.substr(0, 400);
  switch (want.output) {
    case Output::Text:
      if (o.out.empty()) return "exit 0 and nothing on stdout";
      break;
    case Output::Json:
      if (!nlohmann::json::accept(o.out)) return "stdout is not one JSON document";
      break;
    case Output::JsonFile: {
      std::ifstream in(dir / want.file, std::ios::binary);
      if (!in || !nlohmann::json::accept(in)) return want.file.string() + " is not one JSON document";
      break;
    }
    case Output::File:
      if (!fs::exists(dir / want.file) || fs::file_size(dir / want.file) == 0) return want.file.string() + " not written";
      break;
    case Output::Any:
      break;
  }
  return "";
}

// Byte-level mutations of one file.
struct Bytes {
  std::mt19937_64& rng;

  std::size_t below(std::size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

  void truncate(const fs::path& p) { fs::resize_file(p, below(fs::file_size(p) + 1)); }

  // Flips `n` random bits anywhere in the file.
  void flip(const fs::path& p, int n) {
    std::string data = test::read_file(p);
    if (data.empty()) return;
    for (int i = 0; i < n; ++i) data[below(data.size())] ^= static_cast<char>(1u << below(8));
    std::ofstream(p, std::ios::binary | std::ios::trunc) << data;
  }

  // Overwrites one aligned 512-byte block (a piece of an SQLite page: its header, cells or free space) with bytes
  // that are all 0x00, all 0xff or random.
  void smash_block(const fs::path& p) {
    std::string data = test::read_file(p);
    if (data.size() < 512) return;
    const std::size_t at = below(data.size() / 512) * 512;
    const int style = static_cast<int>(below(3));
    for (std::size_t i = at; i < at + 512; ++i)
      data[i] = style == 0 ? '\0' : style == 1 ? '\xff' : static_cast<char>(below(256));
    std::ofstream(p, std::ios::binary | std::ios::trunc) << data;
  }
};

}  // namespace collscope::fuzz
