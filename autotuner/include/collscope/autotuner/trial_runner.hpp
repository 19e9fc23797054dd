#pragma once
// Runs one trial: the user's command under `collscope trace`, as argv (never through a shell), in its own
// process group, output to a log file, killed at a wall-clock limit or when the monitor says so.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collscope::autotuner {

// Every process of a trial inherits this variable (the tuner sets it for the trial's top process), with a value
// unique to the trial: a process is proven to be the trial's only when it carries it.
inline constexpr const char* kTrialMarkerVariable = "COLLSCOPE_TUNE_TRIAL";

// Who runs a trial: enough for a later tuner to prove that a process is still that trial's before it signals it
// (a process id or group id alone may have been reused by an unrelated process since).
struct TrialProcesses {
  std::string host;                      // gethostname() of the tuner that started it
  std::string boot_id;                   // /proc/sys/kernel/random/boot_id then: process ids restart at boot
  std::int64_t pgid = 0;                 // the trial's process group (== its top process's pid)
  std::int64_t leader_start_ticks = 0;   // start of that top process, clock ticks since boot (/proc/PID/stat field 22)
  std::string marker;                    // value of kTrialMarkerVariable in every process of the trial
};

struct TrialLaunch {
  std::vector<std::string> argv;                             // argv[0] is run as is (a path, never looked up in PATH)
  std::vector<std::pair<std::string, std::string>> env;      // set in the child only
  std::string log_path;                                      // stdout and stderr, appended
  double timeout_s = 300;                                    // wall clock
  std::string marker;                                        // kTrialMarkerVariable's value; required
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

// on_started receives who runs the trial (its process group, == its pid) as soon as it exists.
TrialOutcome run_trial(const TrialLaunch& launch, const TrialMonitor& monitor,
                       const std::function<void(const TrialProcesses&)>& on_started,
                       const std::atomic<bool>* interrupt = nullptr);

// argv of a trial: <collscope> trace -o <run_dir> -- <command with {placeholders} substituted>.
std::vector<std::string> traced_command(const std::string& collscope_exe, const std::string& run_dir,
                                        const std::vector<std::string>& command);

// Kills process group `pgid` (when > 1) and every descendant of `pid` (launchers may move ranks to their own groups).
// Only for a trial this process started and has not reaped yet: its pid, so its group id, cannot have been reused.
void kill_process_tree(pid_t pid, pid_t pgid);
// True when process `pid` exists (and is not a zombie).
bool process_alive(pid_t pid);

// This machine's host name and boot id.
std::string current_host();
std::string current_boot_id();
// Start of process `pid` in clock ticks since boot; nullopt when it does not exist.
std::optional<std::int64_t> process_start_ticks(pid_t pid);

// What is left of a trial a dead tuner started: every process on this host, started no earlier than the trial, whose
// environment carries the trial's marker, gets SIGKILL (through a pidfd, so a pid reused meanwhile is never hit).
// Nothing is signalled unless `trial` was recorded on this host in this boot with a process group above 1: a record
// that cannot be proven is left alone. Returns the number of processes killed; `why_not` says why none could be.
int kill_leftover_trial(const TrialProcesses& trial, std::string* why_not = nullptr);

}  // namespace collscope::autotuner
