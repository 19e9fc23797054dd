#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "commands.hpp"

namespace collscope::cli {
namespace {
volatile sig_atomic_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}
}  // namespace

std::string self_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

namespace {
// A library of collscope's: $ENV_VAR, else <self>/../lib/, else next to self. Throws if absent.
std::string find_own_library(const char* file, const char* env_var) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv(env_var); env && *env) {
    if (!fs::exists(env)) throw InputError(fmt::format("{}: {} names no such file", env, env_var));
    return fs::absolute(env).string();
  }
  const fs::path dir = self_dir();
  for (const fs::path& p : {dir / ".." / "lib" / file, dir / file}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p).string();
  }
  throw InputError(fmt::format("{}: {} not found next to collscope (set {})", (dir / ".." / "lib").string(), file, env_var));
}
}  // namespace

std::string find_preload() { return find_own_library("libcollscope-preload.so", "COLLSCOPE_PRELOAD"); }

std::string find_nccl_profiler() {
  return find_own_library("libcollscope-nccl-profiler.so", "COLLSCOPE_NCCL_PROFILER");
}

int run_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) throw InputError("no command given");
  pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "collscope: %s: cannot run: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
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
