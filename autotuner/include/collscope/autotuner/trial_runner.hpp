#pragma once
// Runs one trial: the user's command under `collscope trace`, as argv (never through a shell), in its own
// process group, output to a log file, killed at a wall-clock limit or when the monitor says so.
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collscope::autotuner {

struct TrialLaunch {
  std::vector<std::string> argv;                             // argv[0] is run as is (execv; a path)
  std::vector<std::pair<std::string, std::string>> env;      // set in the child only
  std::string log_path;                                      // stdout and stderr, appended
  double timeout_s = 300;                                    // wall clock
};

struct TrialOutcome {
  int exit_code = 0;        // 128+signal when killed by a signal
  bool timed_out = false;
  bool stopped = false;     // the monitor asked to stop it
  bool interrupted = false; // the tuner was asked to stop (SIGINT/SIGTERM)
  std::string stop_reason;
  double wall_s = 0;
};

// Called about twice a second while the trial runs; a non-empty result stops the trial with that reason.
using TrialMonitor = std::function<std::optional<std::string>()>;

// on_started receives the trial's process group id (== its pid) as soon as it exists.
TrialOutcome run_trial(const TrialLaunch& launch, const TrialMonitor& monitor,
                       const std::function<void(pid_t)>& on_started, const std::atomic<bool>* interrupt = nullptr);

// argv of a trial: <collscope> trace -o <run_dir> -- <command with {placeholders} substituted>.
std::vector<std::string> traced_command(const std::string& collscope_exe, const std::string& run_dir,
                                        const std::vector<std::string>& command);

// Kills process group `pgid` and every descendant of `pid` (launchers may move ranks to their own groups).
void kill_process_tree(pid_t pid, pid_t pgid);
// True when process `pid` exists (and is not a zombie).
bool process_alive(pid_t pid);

}  // namespace collscope::autotuner
