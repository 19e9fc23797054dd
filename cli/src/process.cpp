// Running a job through the launcher (collscope/process): extra environment (no shell), SIGINT/SIGTERM forwarded to
// it. The job stays in collscope's process group, so a terminal's Ctrl-C reaches both, as it does without collscope.
#include <collscope/process/process.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
  process::Command command(argv);
  for (const auto& [k, v] : env) command.set_env(k, v);
  command.own_process_group = false;
  if (output_fd >= 0) {
    command.out = process::Redirect::descriptor(output_fd);
    command.err = process::Redirect::descriptor(output_fd);
  }
  std::optional<process::Process> job;
  try {
    job.emplace(process::Process::start(command));
  } catch (const process::LaunchError& e) {
    // As the shell does: the reason on the job's stderr, exit code 127.
    const std::string line = fmt::format("collscope: {}: cannot run: {}\n", argv[0], std::strerror(e.error_number()));
    if (output_fd >= 0) {
      [[maybe_unused]] auto n = ::write(output_fd, line.data(), line.size());
      ::close(output_fd);
    } else {
      std::fputs(line.c_str(), stderr);
    }
    return 127;
  }
  if (output_fd >= 0) ::close(output_fd);
  g_child = job->pid();
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  const process::Result result = job->wait();
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  g_child = 0;
  if (result.exited() || result.signal) return result.status();
  return 1;
}

}  // namespace collscope::cli
