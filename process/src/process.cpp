// fork + exec with everything the child needs prepared before fork (after it, only async-signal-safe calls), a
// close-on-exec pipe that carries a failed step's errno back to the parent, and one poll loop over the captured
// pipes and a pidfd for the child's exit.
#include <collscope/process/process.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace collscope::process {

namespace {

using Clock = std::chrono::steady_clock;

// What the child reports through the error pipe when a step before exec (or exec itself) fails.
enum class Step : int { Exec = 1, WorkingDir, ProcessGroup, Session, Limit, ParentGone, Redirect };

struct ChildFailure {
  int step = 0;
  int error = 0;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

[[noreturn]] void fail_in_child(int report_fd, Step step, int error) {
  const ChildFailure f{static_cast<int>(step), error};
  [[maybe_unused]] auto n = ::write(report_fd, &f, sizeof f);
  ::_exit(127);
}

// Makes `target` (0, 1 or 2) a copy of `source` that survives exec.
bool install_fd(int source, int target) {
  if (source == target) {
    const int flags = ::fcntl(target, F_GETFD);
    return flags >= 0 && ::fcntl(target, F_SETFD, flags & ~FD_CLOEXEC) == 0;
  }
  return ::dup2(source, target) >= 0;
}

std::string message(const std::string& program, const std::string& detail, int error) {
  return "cannot start '" + program + "': " + (detail.empty() ? "" : detail + ": ") + std::strerror(error);
}

// The child's environment: the parent's with `changes` applied in order.
std::vector<std::string> child_environment(const Command& command) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : command.env) {
    const std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& entry) { return entry.starts_with(prefix); });
    if (value) env.push_back(prefix + *value);
  }
  return env;
}

// Where exec tries the program, in order: as execvp does, the directories of the child's PATH.
std::vector<std::string> candidates(const Command& command, const std::vector<std::string>& env) {
  const std::string& program = command.argv[0];
  if (!command.search_path || program.find('/') != std::string::npos) return {program};
  std::string path = "/bin:/usr/bin";  // glibc's default when PATH is unset
  for (const auto& entry : env)
    if (entry.starts_with("PATH=")) path = entry.substr(5);
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = path.find(':', begin);
    std::string dir = path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + program);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

// The parent's end and the child's end of one redirected stream.
struct StreamEnds {
  int parent = -1;  // read end of a pipe (Capture, Pipe)
  int child = -1;   // what becomes the child's 0, 1 or 2; -1: inherit
  bool owned = true;  // the child end was opened here (not the caller's Descriptor)
};

StreamEnds open_stream(const Redirect& r, bool input, const std::string& program) {
  StreamEnds ends;
  switch (r.kind) {
    case Redirect::Kind::Inherit:
    case Redirect::Kind::Stdout:
      break;
    case Redirect::Kind::Null:
      ends.child = ::open("/dev/null", (input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (ends.child < 0) throw LaunchError(message(program, "/dev/null", errno), errno);
      break;
    case Redirect::Kind::File: {
      const int flags = input ? O_RDONLY : (O_WRONLY | O_CREAT | (r.append ? O_APPEND : O_TRUNC));
      ends.child = ::open(r.path.c_str(), flags | O_CLOEXEC, 0644);
      if (ends.child < 0) throw LaunchError(message(program, "'" + r.path + "'", errno), errno);
      break;
    }
    case Redirect::Kind::Descriptor:
      ends.child = r.fd;
      ends.owned = false;
      break;
    case Redirect::Kind::Capture:
    case Redirect::Kind::Pipe: {
      if (input) throw std::invalid_argument("process: stdin cannot be captured");
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) throw LaunchError(message(program, "pipe", errno), errno);
      ends.parent = fds[0];
      ends.child = fds[1];
      break;
    }
  }
  return ends;
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

}  // namespace

Process Process::start(const Command& command) {
  if (command.argv.empty()) throw std::invalid_argument("process: empty command");
  if (command.in.kind == Redirect::Kind::Stdout || command.out.kind == Redirect::Kind::Stdout)
    throw std::invalid_argument("process: only stderr can go to stdout");
  const std::string& program = command.argv[0];

  // Everything the child touches is made here.
  const std::vector<std::string> env_strings = child_environment(command);
  std::vector<char*> envp;
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> paths = candidates(command, env_strings);
  // A file exec refuses as no executable format (ENOEXEC) is run by /bin/sh, as execvp does.
  std::vector<char*> sh_argv{const_cast<char*>("/bin/sh"), nullptr};
  sh_argv.insert(sh_argv.end(), argv.begin() + 1, argv.end());
  std::vector<rlimit> limits;
  for (const auto& l : command.limits) limits.push_back({static_cast<rlim_t>(l.soft), static_cast<rlim_t>(l.hard)});
  const char* working_dir = command.working_dir.empty() ? nullptr : command.working_dir.c_str();

  StreamEnds streams[3];
  auto close_all = [&] {
    for (auto& s : streams) {
      close_fd(s.parent);
      if (s.owned) close_fd(s.child);
    }
  };
  int report[2] = {-1, -1};
  try {
    streams[0] = open_stream(command.in, true, program);
    streams[1] = open_stream(command.out, false, program);
    streams[2] = open_stream(command.err, false, program);
    if (::pipe2(report, O_CLOEXEC) != 0) throw LaunchError(message(program, "pipe", errno), errno);
  } catch (...) {
    close_all();
    throw;
  }
  const bool err_to_out = command.err.kind == Redirect::Kind::Stdout;
  const bool own_group = command.own_process_group || command.new_session;
  const pid_t parent = ::getpid();

  Process p;
  p.started_ = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    close_fd(report[0]);
    close_fd(report[1]);
    throw LaunchError(message(program, "fork", e), e);
  }
  if (pid == 0) {
    const int fd = report[1];
    if (command.new_session) {
      if (::setsid() < 0) fail_in_child(fd, Step::Session, errno);
    } else if (own_group && ::setpgid(0, 0) != 0) {
      fail_in_child(fd, Step::ProcessGroup, errno);
    }
    if (command.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) fail_in_child(fd, Step::ParentGone, ESRCH);
    }
    for (int target = 0; target < 3; ++target)
      if (streams[target].child >= 0 && !install_fd(streams[target].child, target))
        fail_in_child(fd, Step::Redirect, errno);
    if (err_to_out && ::dup2(1, 2) < 0) fail_in_child(fd, Step::Redirect, errno);
    if (working_dir && ::chdir(working_dir) != 0) fail_in_child(fd, Step::WorkingDir, errno);
    for (std::size_t i = 0; i < limits.size(); ++i)
      if (::setrlimit(static_cast<__rlimit_resource_t>(command.limits[i].resource), &limits[i]) != 0)
        fail_in_child(fd, Step::Limit, errno);
    int error = ENOENT;
    bool denied = false;
    for (const auto& path : paths) {
      ::execve(path.c_str(), argv.data(), envp.data());
      error = errno;
      if (error == ENOEXEC) {
        sh_argv[1] = const_cast<char*>(path.c_str());
        ::execve("/bin/sh", sh_argv.data(), envp.data());
        error = errno;
        break;
      }
      if (error == EACCES) denied = true;
      else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV && error != ETIMEDOUT) break;
    }
    if (denied && (error == ENOENT || error == ENOTDIR)) error = EACCES;
    fail_in_child(fd, Step::Exec, error);
  }

  // Parent: also set the group here, so that a signal to it right after start cannot miss (EACCES once the child
  // has exec'd, when it is set already).
  if (own_group && !command.new_session) ::setpgid(pid, pid);
  for (auto& s : streams)
    if (s.owned) close_fd(s.child);
  close_fd(report[1]);
  ChildFailure failure;
  ssize_t got;
  do got = ::read(report[0], &failure, sizeof failure);
  while (got < 0 && errno == EINTR);
  close_fd(report[0]);
  if (got > 0) {
    for (auto& s : streams) close_fd(s.parent);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string detail;
    switch (static_cast<Step>(failure.step)) {
      case Step::Exec: break;
      case Step::WorkingDir: detail = "working directory '" + command.working_dir + "'"; break;
      case Step::ProcessGroup: detail = "setpgid"; break;
      case Step::Session: detail = "setsid"; break;
      case Step::Limit: detail = "setrlimit"; break;
      case Step::ParentGone: detail = "its parent has exited"; break;
      case Step::Redirect: detail = "redirecting its standard streams"; break;
    }
    throw LaunchError(message(program, detail, failure.error), failure.error);
  }

  p.pid_ = pid;
  p.own_group_ = own_group;
  p.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 on kernels before 5.3: polled instead
  if (command.out.kind == Redirect::Kind::Capture) p.out_fd_ = streams[1].parent;
  else p.pipe_out_ = streams[1].parent;
  if (command.err.kind == Redirect::Kind::Capture) p.err_fd_ = streams[2].parent;
  else p.pipe_err_ = streams[2].parent;
  return p;
}

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this == &other) return *this;
  this->~Process();
  pid_ = std::exchange(other.pid_, -1);
  pidfd_ = std::exchange(other.pidfd_, -1);
  out_fd_ = std::exchange(other.out_fd_, -1);
  err_fd_ = std::exchange(other.err_fd_, -1);
  pipe_out_ = std::exchange(other.pipe_out_, -1);
  pipe_err_ = std::exchange(other.pipe_err_, -1);
  own_group_ = other.own_group_;
  reaped_ = std::exchange(other.reaped_, true);
  started_ = other.started_;
  result_ = std::move(other.result_);
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    signal(SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  close_fds();
}

void Process::close_fds() {
  close_fd(pidfd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(pipe_out_);
  close_fd(pipe_err_);
}

int Process::take_stdout() { return std::exchange(pipe_out_, -1); }
int Process::take_stderr() { return std::exchange(pipe_err_, -1); }

void Process::signal(int sig) {
  if (pid_ <= 0) return;
  // After the child is reaped its group may live on (what it started, still holding the captured pipes); its id
  // cannot be reused while it has members.
  if (reaped_ && !(own_group_ && (out_fd_ >= 0 || err_fd_ >= 0))) return;
  if (own_group_) ::kill(-pid_, sig);
  else if (!reaped_) ::kill(pid_, sig);
}

// Reads captured output and reaps the child until both are done (true) or `deadline` passes (false).
bool Process::pump(std::optional<Clock::time_point> deadline) {
  char buf[65536];
  bool last_look = false;
  while (true) {
    if (!reaped_) {
      int status = 0;
      rusage usage{};
      pid_t r;
      do r = ::wait4(pid_, &status, WNOHANG, &usage);
      while (r < 0 && errno == EINTR);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {
        reaped_ = true;
        result_.wall_s = std::chrono::duration<double>(Clock::now() - started_).count();
        if (r == pid_) {
          if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
          if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
          result_.user_cpu_s = seconds(usage.ru_utime);
          result_.system_cpu_s = seconds(usage.ru_stime);
          result_.max_rss_bytes = static_cast<long long>(usage.ru_maxrss) * 1024;
        }
        close_fd(pidfd_);
      }
    }
    if (reaped_ && out_fd_ < 0 && err_fd_ < 0) return true;
    if (last_look) return false;

    pollfd fds[3];
    int* owners[2] = {};
    int n = 0;
    for (int* fd : {&out_fd_, &err_fd_}) {
      if (*fd < 0) continue;
      owners[n] = fd;
      fds[n++] = {*fd, POLLIN, 0};
    }
    const int captured = n;
    if (!reaped_ && pidfd_ >= 0) fds[n++] = {pidfd_, POLLIN, 0};
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) last_look = true;  // one look without blocking, then give up for now
      wait_ms = static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
    }
    if (!reaped_ && pidfd_ < 0) wait_ms = wait_ms < 0 ? 10 : std::min(wait_ms, 10);  // no pidfd: look every 10 ms
    const int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("process: poll: ") + std::strerror(errno));
    for (int i = 0; i < captured && ready > 0; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) continue;
      const ssize_t got = ::read(*owners[i], buf, sizeof buf);
      if (got > 0) (owners[i] == &out_fd_ ? result_.out : result_.err).append(buf, static_cast<std::size_t>(got));
      else if (got == 0 || (errno != EINTR && errno != EAGAIN)) close_fd(*owners[i]);
    }
  }
}

Result Process::finish() { return result_; }

Result Process::wait() {
  pump(std::nullopt);
  return finish();
}

std::optional<Result> Process::wait_for(Seconds timeout) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  if (!pump(deadline)) return std::nullopt;
  return finish();
}

Result Process::terminate(Seconds grace) {
  if (!(reaped_ && out_fd_ < 0 && err_fd_ < 0)) {
    if (grace.count() > 0) {
      signal(SIGTERM);
      if (auto r = wait_for(grace)) return *r;
    }
    signal(SIGKILL);
    // What holds the pipes outside the group (a daemon that left it) is not waited for.
    if (auto r = wait_for(std::chrono::seconds(2))) return *r;
    close_fd(out_fd_);
    close_fd(err_fd_);
  }
  return wait();
}

Result run(const Command& command, std::optional<Seconds> timeout, Seconds grace) {
  Process p = Process::start(command);
  if (!timeout) return p.wait();
  if (auto r = p.wait_for(*timeout)) return *r;
  const bool running = !p.finished();
  Result r = p.terminate(grace);
  r.timed_out = running;
  return r;
}

}  // namespace collscope::process
