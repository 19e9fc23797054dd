#pragma once
// What the tests that run built programs (the trainer, collscope, mpirun) share. Header-only; a test target that
// includes it defines COLLSCOPE_TEST_BIN_DIR (its build tree's bin/).
#include <collscope/process/process.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace collscope::test {

// The built executables: $COLLSCOPE_BIN (ctest sets it), else the build tree this test was built in.
inline std::string bin_dir() {
  const char* b = std::getenv("COLLSCOPE_BIN");
  return b && *b ? b : COLLSCOPE_TEST_BIN_DIR;
}

// <tmp>/<prefix>-<pid>, created: one per test process, so parallel ctest runs never share files.
inline std::filesystem::path temp_root(const std::string& prefix) {
  auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// <tmp>/<prefix>-<pid>/<name>, emptied and created: one fresh directory per test.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& name) {
  const auto dir = temp_root(prefix) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The whole file as bytes; "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of `text`, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// `s` single-quoted for /bin/sh (a ' inside becomes '\'').
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `cmd` with /bin/sh (through the launcher, as every program a test starts); its exit code, 128 + signal when
// killed.
inline int shell(const std::string& cmd) {
  process::Command command({"/bin/sh", "-c", cmd});
  return process::run(command).status();
}

// Runs `collscope ARGS` (the built one; ARGS as the shell reads them) in `dir`, stdout into dir/out.txt and stderr into
// dir/err.txt; its exit code.
inline int run_collscope(const std::filesystem::path& dir, const std::string& args) {
  return shell("cd " + shell_quote(dir.string()) + " && " + shell_quote(bin_dir() + "/collscope") + " " + args +
               " > out.txt 2> err.txt");
}

// A checked-in run of tests/data (rank files stored gzipped, *.gz), unpacked once per test process into
// <tmp>/<prefix>-<pid>/<name>; returns that directory. Needs COLLSCOPE_TEST_DATA_DIR (tests/data).
#ifdef COLLSCOPE_TEST_DATA_DIR
inline std::filesystem::path unpack_test_data(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path from = fs::path(COLLSCOPE_TEST_DATA_DIR) / name, to = temp_root("collscope-test-data") / name;
  if (fs::exists(to)) return to;
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    const auto file = entry.path().filename().string();
    if (!file.ends_with(".gz")) continue;
    const auto out = to / file.substr(0, file.size() - 3);
    if (shell("gzip -dc '" + entry.path().string() + "' > '" + out.string() + "'") != 0) fs::remove(out);
  }
  return to;
}
#endif

// The widest line of `text` in terminal columns (UTF-8 code points: "µs", "→" and "–" take one column each) and
// that line, for a report that must fit a 100-column terminal. `machine_prefix`, where given, is left out of the
// count wherever it appears: the part of the runs' paths that depends on the machine (TMPDIR, the test's pid),
// which the report prints as given, as a terminal wraps it.
inline std::pair<std::size_t, std::string> widest_line(const std::string& text, const std::string& machine_prefix = "") {
  std::pair<std::size_t, std::string> widest{0, ""};
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::string counted = line;
    if (!machine_prefix.empty())
      for (auto at = counted.find(machine_prefix); at != std::string::npos; at = counted.find(machine_prefix, at))
        counted.erase(at, machine_prefix.size());
    std::size_t columns = 0;
    for (unsigned char c : counted) columns += (c & 0xc0) != 0x80;
    if (columns > widest.first) widest = {columns, line};
  }
  return widest;
}

// What COLLSCOPE_TEST_ENV sets under ctest, for runs outside it: Open MPI as root, shared memory only.
inline void set_mpi_test_env() {
  for (const auto& [k, v] : {std::pair{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                             {"OMPI_MCA_rmaps_base_oversubscribe", "1"}, {"OMPI_MCA_btl", "self,vader"},
                             {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}})
    setenv(k, v, 0);
}

}  // namespace collscope::test
