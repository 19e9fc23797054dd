// The launcher's variables: which process of how many this one is.
#include <collscope/cluster/launcher_process.hpp>

#include <fmt/format.h>
#include <sched.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace collscope::cluster {
namespace {

// A variable's value as a non-negative int; nullopt when unset or not such a number.
std::optional<int> env_count(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  int n = 0;
  const auto [end, error] = std::from_chars(v, v + std::strlen(v), n);
  if (error != std::errc{} || *end != '\0' || n < 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<LauncherProcess> launcher_process() {
  struct Variables {
    const char* rank;
    const char* size;  // nullptr: this launcher family sets none
    const char* launcher;
  };
  static constexpr Variables kLaunchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun (Open MPI)"},
      {"PMI_RANK", "PMI_SIZE", "mpirun (PMI)"},
      {"SLURM_PROCID", "SLURM_NTASKS", "srun"},
      {"PMIX_RANK", nullptr, "PMIx"},
  };
  for (const auto& l : kLaunchers) {
    const auto rank = env_count(l.rank);
    if (!rank) continue;
    int local_size = 0;
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
      if (const auto n = env_count(name); n && local_size == 0) local_size = *n;
    return LauncherProcess{.rank = *rank,
                           .size = l.size ? env_count(l.size).value_or(0) : 0,
                           .local_size = local_size,
                           .launcher = l.launcher};
  }
  return std::nullopt;
}

std::optional<int> alone_in_process_zero(const char* command, const std::string& why) {
  const auto launcher = launcher_process();
  if (!launcher || launcher->size == 1) return 0;
  const std::string of = launcher->size > 0 ? fmt::format(" of {}", launcher->size) : "";
  const std::string because = why.empty() ? "" : fmt::format(" ({})", why);
  if (launcher->rank != 0) {
    std::fprintf(stderr, "collscope %s: process %d%s under %s: process 0 does the work; this one stops%s\n", command,
                 launcher->rank, of.c_str(), launcher->launcher.c_str(), because.c_str());
    return std::nullopt;
  }
  const int threads = launcher->local_size;  // 0 when the launcher does not say: one per core, as alone
  const bool unbound = run_on_every_allowed_cpu();
  std::fprintf(stderr, "collscope %s: process 0%s under %s: works alone here%s, the other processes stop%s\n", command,
               of.c_str(), launcher->launcher.c_str(), unbound ? "" : " (bound to the launcher's cores)",
               because.c_str());
  return threads;
}

bool run_on_every_allowed_cpu() {
  // Every CPU the mask can name: the kernel keeps those the cgroup's cpuset allows (sched_setaffinity(2)).
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
  return ::sched_setaffinity(0, sizeof all, &all) == 0;
}

}  // namespace collscope::cluster
