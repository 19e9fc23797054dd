// The launcher's variables: which process of how many this one is.
#include <collscope/analyzer/launcher_process.hpp>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace collscope::analyzer {
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
    return LauncherProcess{.rank = *rank, .size = l.size ? env_count(l.size).value_or(0) : 0, .launcher = l.launcher};
  }
  return std::nullopt;
}

}  // namespace collscope::analyzer
