#pragma once
// The one way collscope starts a program: the product (`collscope trace` runs the job, `collscope tune` its trials,
// `collscope view` the viewer) and the tests and benchmarks that run built programs. fork + exec, no shell; the
// environment, working directory, standard streams, process group, resource limits and parent-death signal of the
// child set up between the two; a failed exec reported to the parent (an exception naming the program), not guessed
// from exit 127. Timeouts and terminate() signal the child's whole process group, so what it started (mpirun's
// ranks) goes with it. Captured output is read from both pipes at once (poll), so neither can fill and block.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace collscope::process {

using Seconds = std::chrono::duration<double>;

// The program could not be started (not found, not executable, its working directory or a redirection file
// missing). One line, naming the program: "cannot start 'mpirun': No such file or directory".
class LaunchError : public std::runtime_error {
 public:
  LaunchError(const std::string& message, int error_number) : std::runtime_error(message), errno_(error_number) {}
  // The errno of the failed step (ENOENT, EACCES, ...).
  int error_number() const { return errno_; }

 private:
  int errno_;
};

// Where one of the child's standard streams goes (or, for stdin, comes from).
struct Redirect {
  enum class Kind {
    Inherit,     // the parent's own stream
    Null,        // /dev/null
    Capture,     // stdout/stderr: a pipe read by the parent into Result::out / Result::err
    Pipe,        // stdout/stderr: a pipe whose read end the caller takes (Process::take_stdout) and reads itself
    File,        // `path`, created or truncated (appended to with `append`); stdin: read from it
    Descriptor,  // `fd`, an open descriptor of the parent (which keeps owning it)
    Stdout,      // stderr only: wherever stdout goes (2>&1)
  };
  Kind kind = Kind::Inherit;
  std::string path;
  bool append = false;
  int fd = -1;

  static Redirect of(Kind kind) {
    Redirect r;
    r.kind = kind;
    return r;
  }
  static Redirect inherit() { return {}; }
  static Redirect null() { return of(Kind::Null); }
  static Redirect capture() { return of(Kind::Capture); }
  static Redirect pipe() { return of(Kind::Pipe); }
  static Redirect file(std::string path, bool append = false) {
    Redirect r = of(Kind::File);
    r.path = std::move(path);
    r.append = append;
    return r;
  }
  static Redirect descriptor(int fd) {
    Redirect r = of(Kind::Descriptor);
    r.fd = fd;
    return r;
  }
  static Redirect to_stdout() { return of(Kind::Stdout); }
};

// A resource limit set in the child before exec (setrlimit: RLIMIT_AS, RLIMIT_CPU, ...).
struct ResourceLimit {
  int resource = 0;
  unsigned long long soft = 0, hard = 0;
};

// What to run, and how. argv[0] is looked up in PATH (the child's PATH, after `env`) unless it holds a '/'.
struct Command {
  std::vector<std::string> argv;
  // Applied in order over the parent's environment: a value sets (adds or overrides) the variable, nullopt removes it.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  std::string working_dir;  // "" = the parent's
  Redirect in = Redirect::inherit();   // stdin: Inherit, Null, File or Descriptor
  Redirect out = Redirect::inherit();  // stdout
  Redirect err = Redirect::inherit();  // stderr
  bool search_path = true;  // false: argv[0] is run as the path it is (execv), never looked up in PATH
  // Own process group (pgid = pid): timeouts and terminate() signal the group. Without it, only the child.
  bool own_process_group = true;
  bool new_session = false;      // setsid(): own session and group, no controlling terminal
  bool die_with_parent = false;  // SIGKILL when the parent dies (PR_SET_PDEATHSIG); never starts if it already has
  std::vector<ResourceLimit> limits;

  Command() = default;
  Command(std::vector<std::string> args) : argv(std::move(args)) {}  // NOLINT: a Command is its argv first
  Command& set_env(std::string name, std::string value) {
    env.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  Command& unset_env(std::string name) {
    env.emplace_back(std::move(name), std::nullopt);
    return *this;
  }
};

struct Result {
  int exit_code = -1;  // the exit status when it exited, else -1
  int signal = 0;      // the signal that ended it, else 0
  bool timed_out = false;
  std::string out, err;  // captured stdout and stderr (Redirect::capture)
  double wall_s = 0;     // from start to exit
  double user_cpu_s = 0, system_cpu_s = 0;  // of the child and the descendants it waited for
  long long max_rss_bytes = 0;              // likewise (getrusage's ru_maxrss)

  bool exited() const { return signal == 0 && exit_code >= 0; }
  // As a shell reports it: the exit status, or 128 + the signal.
  int status() const { return signal ? 128 + signal : exit_code; }
};

// A started child. Move-only; destroying one that is still running kills it (its group with own_process_group)
// and reaps it.
class Process {
 public:
  // Starts `command`. Throws LaunchError when it cannot (std::invalid_argument for an empty argv).
  static Process start(const Command& command);

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  bool has_own_group() const { return own_group_; }
  bool finished() const { return reaped_; }

  // The read end of a Redirect::pipe() stdout (or stderr); the caller owns and closes it. -1 if there is none.
  int take_stdout();
  int take_stderr();

  // Waits until it has exited and its captured streams are closed; reads captured output meanwhile.
  Result wait();
  // The same, for at most `timeout`: nullopt while it still runs.
  std::optional<Result> wait_for(Seconds timeout);
  // Without blocking: nullopt while it still runs.
  std::optional<Result> try_wait() { return wait_for(Seconds(0)); }

  // Sends `sig` to its process group (with own_process_group), else to the child. Nothing once it is reaped.
  void signal(int sig);
  // SIGTERM to the group, SIGKILL after `grace` if the child has not exited by then (at once when grace is 0);
  // waits for it.
  Result terminate(Seconds grace = std::chrono::seconds(2));

 private:
  Process() = default;
  bool pump(std::optional<std::chrono::steady_clock::time_point> deadline);
  Result finish();
  void close_fds();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int out_fd_ = -1, err_fd_ = -1;        // captured streams, still open
  int pipe_out_ = -1, pipe_err_ = -1;    // Redirect::pipe read ends not yet taken
  bool own_group_ = false;
  bool reaped_ = false;
  std::chrono::steady_clock::time_point started_;
  Result result_;
};

// Runs `command` to the end. With a timeout: past it the process group gets SIGTERM, then SIGKILL after `grace`
// (at once when grace is 0), and the result says timed_out. Output captured until its pipes close; pipes that
// outlive the child (a daemon it left) are read until the timeout, then its group is killed.
Result run(const Command& command, std::optional<Seconds> timeout = std::nullopt, Seconds grace = Seconds(0));

}  // namespace collscope::process
