// Running a job: fork and exec with extra environment (no shell), SIGINT/SIGTERM forwarded to it.
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "commands.hpp"

namespace collscope::cli {
namespace {
volatile sig_atomic_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}
}  // namespace

int run_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                const std::string& output_path) {
  if (argv.empty()) throw InputError("no command given");
  int output_fd = -1;
  if (!output_path.empty()) {
    output_fd = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (output_fd < 0) throw InputError(fmt::format("{}: cannot write: {}", output_path, std::strerror(errno)));
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    if (output_fd >= 0) ::close(output_fd);
    throw Error(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    if (output_fd >= 0) ::dup2(output_fd, STDOUT_FILENO), ::dup2(output_fd, STDERR_FILENO);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "collscope: %s: cannot run: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  if (output_fd >= 0) ::close(output_fd);
  g_child = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace collscope::cli
