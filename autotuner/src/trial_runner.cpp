// One trial, started with the launcher (collscope/process), with a wall-clock limit; the whole process tree is killed
// on timeout.
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/process/process.hpp>
#include <collscope/store/error.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace collscope::autotuner {

namespace {
struct ProcessInfo {
  pid_t pid = 0, ppid = 0, pgid = 0;
};

// The fields of /proc/<pid>/stat after the command name (which may contain spaces and parentheses), from field 3.
std::optional<std::vector<std::string>> stat_fields(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

std::optional<std::int64_t> to_int64(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// True when the NUL-separated environment of process `pid` holds exactly `entry` ("NAME=value").
bool environment_holds(pid_t pid, const std::string& entry) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  std::string item;
  while (std::getline(in, item, '\0'))
    if (item == entry) return true;
  return false;
}

// Every process, from /proc/<pid>/stat (fields: pid (comm) state ppid pgrp ...).
std::vector<ProcessInfo> all_processes() {
  std::vector<ProcessInfo> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto fields = stat_fields((entry.path() / "stat").string());
    if (!fields || fields->size() < 3) continue;
    ProcessInfo p;
    p.pid = static_cast<pid_t>(to_int64(name).value_or(0));
    p.ppid = static_cast<pid_t>(to_int64((*fields)[1]).value_or(0));
    p.pgid = static_cast<pid_t>(to_int64((*fields)[2]).value_or(0));
    out.push_back(p);
  }
  return out;
}
}  // namespace

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

void kill_process_tree(pid_t pid, pid_t pgid) {
  // Snapshot first (killing a parent re-parents its children): the process `pid`, every member of group
  // `pgid` (the launcher may be orphaned when the trial's top process died), and all their descendants
  // (Open MPI puts each rank in its own process group). Then kill everything at once.
  const auto processes = all_processes();
  std::multimap<pid_t, pid_t> children;
  std::vector<pid_t> todo;
  for (const auto& p : processes) {
    children.emplace(p.ppid, p.pid);
    if (pgid > 1 && p.pgid == pgid) todo.push_back(p.pid);
  }
  if (pid > 0) todo.push_back(pid);
  std::set<pid_t> tree;
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    if (p <= 1 || !tree.insert(p).second) continue;
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) todo.push_back(it->second);
  }
  if (pgid > 1) ::kill(-pgid, SIGKILL);
  for (pid_t p : tree) ::kill(p, SIGKILL);
}

std::string current_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::optional<std::int64_t> process_start_ticks(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const auto fields = stat_fields(fmt::format("/proc/{}/stat", pid));
  constexpr std::size_t kStartTime = 22 - 3;  // field 22 of stat, counted from field 3 (the state)
  if (!fields || fields->size() <= kStartTime) return std::nullopt;
  return to_int64((*fields)[kStartTime]);
}

int kill_leftover_trial(const TrialProcesses& trial, std::string* why_not) {
  auto refuse = [&](const std::string& why) {
    if (why_not) *why_not = why;
    return 0;
  };
  if (trial.pgid <= 1 || trial.leader_start_ticks <= 0 || trial.marker.empty())
    return refuse("no usable record of its processes");
  if (trial.host != current_host()) return refuse(fmt::format("it ran on host {}", trial.host.empty() ? "?" : trial.host));
  if (trial.boot_id.empty() || trial.boot_id != current_boot_id()) return refuse("the machine has rebooted since");
  const std::string entry = fmt::format("{}={}", kTrialMarkerVariable, trial.marker);
  const pid_t self = ::getpid();
  int killed = 0;
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator("/proc", ec)) {
    const auto pid = to_int64(dir.path().filename().string());
    if (!pid || *pid <= 1 || *pid == self) continue;
    // Pin the process first: whatever is checked below, the signal goes to the process opened here, so a pid
    // reused between the check and the kill is never hit (the old process is gone: the signal goes nowhere).
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(*pid), 0));
    if (pidfd < 0) continue;
    const auto started = process_start_ticks(static_cast<pid_t>(*pid));
    if (started && *started >= trial.leader_start_ticks && environment_holds(static_cast<pid_t>(*pid), entry) &&
        ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0)
      ++killed;
    ::close(pidfd);
  }
  if (killed == 0 && why_not) *why_not = "none of its processes is left";
  return killed;
}

std::vector<std::string> traced_command(const std::string& collscope_exe, const std::string& run_dir,
                                        const std::vector<std::string>& command) {
  std::vector<std::string> argv{collscope_exe, "trace", "-o", run_dir, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

TrialOutcome run_trial(const TrialLaunch& launch, const TrialMonitor& monitor,
                       const std::function<void(const TrialProcesses&)>& on_started, const std::atomic<bool>* interrupt) {
  using Clock = std::chrono::steady_clock;
  if (launch.argv.empty()) throw InputError("trial: empty command");
  if (launch.marker.empty()) throw Error("trial: no marker for its processes");
  const int log_fd = ::open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(fmt::format("{}: cannot create the trial log: {}", launch.log_path, std::strerror(errno)));
  process::Command command(launch.argv);
  command.search_path = false;  // argv[0] is a path
  for (const auto& [k, v] : launch.env) command.set_env(k, v);
  command.set_env(kTrialMarkerVariable, launch.marker);
  command.in = process::Redirect::null();
  command.out = process::Redirect::descriptor(log_fd);
  command.err = process::Redirect::descriptor(log_fd);
  // Its own group, which timeouts and stops kill; if the tuner dies (SIGKILL), the trial's top process dies with
  // it, and --resume kills the rest of its group.
  command.own_process_group = true;
  command.die_with_parent = true;
  const auto start = Clock::now();
  std::optional<process::Process> trial;
  try {
    trial.emplace(process::Process::start(command));
  } catch (const process::LaunchError&) {
    // As a trial whose command cannot run: exit code 127, the reason in its log.
    const char* msg = "collscope tune: cannot run the trial command\n";
    [[maybe_unused]] auto n = ::write(log_fd, msg, std::strlen(msg));
    ::close(log_fd);
    TrialOutcome failed;
    failed.exit_code = 127;
    failed.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return failed;
  }
  ::close(log_fd);
  const pid_t pid = trial->pid();
  TrialProcesses processes{current_host(), current_boot_id(), pid, process_start_ticks(pid).value_or(0), launch.marker};
  if (on_started) on_started(processes);

  TrialOutcome out;
  auto next_check = start + std::chrono::milliseconds(500);
  bool killed = false;
  std::optional<process::Result> result;
  while (!(result = trial->wait_for(std::chrono::milliseconds(20)))) {
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (killed) continue;
    if (elapsed > launch.timeout_s) {
      out.timed_out = true;
      out.stop_reason = fmt::format("timeout: exceeded the {:g} s wall-clock limit", launch.timeout_s);
    } else if (interrupt && interrupt->load()) {
      out.interrupted = true;
      out.stop_reason = "interrupted: the tuner was stopped";
    } else if (monitor && now >= next_check) {
      next_check = now + std::chrono::milliseconds(500);
      if (auto reason = monitor(); reason && !reason->empty()) {
        out.stopped = true;
        out.stop_reason = *reason;
      }
    }
    if (out.timed_out || out.stopped || out.interrupted) {
      // Not the group alone: launchers may move ranks to groups of their own.
      kill_process_tree(pid, pid);
      killed = true;
    }
  }
  // Ranks that outlived the launcher must not keep running. The top process is reaped, so its pid and group id
  // may be reused already: its processes are found by their marker, not by the group.
  kill_leftover_trial(processes);
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.exit_code = result->exited() || result->signal ? result->status() : 1;
  return out;
}

}  // namespace collscope::autotuner
