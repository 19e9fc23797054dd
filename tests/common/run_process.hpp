#pragma once
// Test helper: run a real program (argv, no shell) with extra environment, capture stdout and stderr, with a
// wall-clock limit after which the whole process group is killed. Used by tests that launch mpirun. A thin shell over
// the launcher (collscope/process): a target that includes this links collscope::process.
#include <collscope/process/process.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace collscope::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed
  bool timed_out = false;
  std::string out;
  std::string err;
};

// `argv` with `env` applied over the test's environment (an empty value removes the variable), its stdout and
// stderr captured.
inline process::Command captured_command(const std::vector<std::string>& argv,
                                         const std::vector<std::pair<std::string, std::string>>& env) {
  process::Command command(argv);
  for (const auto& [k, v] : env) {
    if (v.empty()) command.unset_env(k);
    else command.set_env(k, v);
  }
  command.out = process::Redirect::capture();
  command.err = process::Redirect::capture();
  return command;
}

// An empty value in `env` removes the variable.
inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 const std::vector<std::pair<std::string, std::string>>& env = {},
                                 double timeout_s = 120.0) {
  const process::Command command = captured_command(argv, env);
  ProcessResult r;
  try {
    const auto result = process::run(command, process::Seconds(timeout_s));
    r.exit_code = result.status();
    r.timed_out = result.timed_out;
    r.out = result.out;
    r.err = result.err;
  } catch (const process::LaunchError& e) {
    r.exit_code = 127;
    r.err = std::string(e.what()) + "\n";
  }
  return r;
}

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// `mpirun -np N` with the options this 2-core machine needs (shared memory transport, oversubscription;
// running as root is allowed by COLLSCOPE_TEST_ENV's OMPI_ALLOW_RUN_AS_ROOT variables).
inline std::vector<std::string> mpirun(int ranks) {
  return {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--mca", "btl", "self,vader"};
}

}  // namespace collscope::testing
