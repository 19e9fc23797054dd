// fork/execv of one trial with a wall-clock limit; the whole process tree is killed on timeout.
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/store/error.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace collscope::autotuner {

namespace {
struct ProcessInfo {
  pid_t pid = 0, ppid = 0, pgid = 0;
};

// Every process, from /proc/<pid>/stat (fields: pid (comm) state ppid pgrp ...).
std::vector<ProcessInfo> all_processes() {
  std::vector<ProcessInfo> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');  // the command name may contain spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    ProcessInfo p;
    rest >> state >> p.ppid >> p.pgid;
    p.pid = static_cast<pid_t>(std::stol(name));
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
    if (pgid > 0 && p.pgid == pgid) todo.push_back(p.pid);
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
  if (pgid > 0) ::kill(-pgid, SIGKILL);
  for (pid_t p : tree) ::kill(p, SIGKILL);
}

std::vector<std::string> traced_command(const std::string& collscope_exe, const std::string& run_dir,
                                        const std::vector<std::string>& command) {
  std::vector<std::string> argv{collscope_exe, "trace", "-o", run_dir, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

TrialOutcome run_trial(const TrialLaunch& launch, const TrialMonitor& monitor,
                       const std::function<void(pid_t)>& on_started, const std::atomic<bool>* interrupt) {
  using Clock = std::chrono::steady_clock;
  if (launch.argv.empty()) throw InputError("trial: empty command");
  const int log_fd = ::open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(fmt::format("{}: cannot create the trial log: {}", launch.log_path, std::strerror(errno)));
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : launch.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : launch.env) env_strings.push_back(k + "=" + v);
  const auto start = Clock::now();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw Error(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // If the tuner dies (SIGKILL), the trial's top process dies with it; --resume kills the rest of its group.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    for (auto& s : env_strings) ::putenv(s.data());
    ::execv(args[0], args.data());
    const char* msg = "collscope tune: cannot run the trial command\n";
    [[maybe_unused]] auto n = ::write(2, msg, std::strlen(msg));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent: no race with the first kill
  ::close(log_fd);
  if (on_started) on_started(pid);

  TrialOutcome out;
  int status = 0;
  auto next_check = start + std::chrono::milliseconds(500);
  bool killed = false;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (!killed) {
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
        kill_process_tree(pid, pid);
        killed = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Ranks that outlived the launcher (orphans in the trial's group) must not keep running.
  kill_process_tree(0, pid);
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) out.exit_code = 128 + WTERMSIG(status);
  else out.exit_code = 1;
  return out;
}

}  // namespace collscope::autotuner
