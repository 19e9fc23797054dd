#include "core/job_metadata.hpp"

#include <collscope/store/schema.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include "core/clock.hpp"

extern char** environ;

namespace collscope::tracer {
namespace {

// Environment variables recorded as the job's knobs (meta "env.NAME").
bool is_knob(std::string_view name) {
  for (std::string_view prefix : {"HOROVOD_", "NCCL_", "OMPI_MCA_", "UCX_", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
                                  "TORCH_", "PMIX_RANK", "SLURM_JOB_ID", "COLLSCOPE_"})
    if (name.starts_with(prefix)) {
      // Open MPI's launcher plumbing (daemon URIs, session dirs, job ids) is not a knob anyone tunes.
      for (std::string_view noise : {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_shmem_",
                                     "OMPI_MCA_initial_wdir"})
        if (name.starts_with(noise)) return false;
      return true;
    }
  return false;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : raw)
    if (c == '\0') c = ' ';
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  return raw;
}

std::string launcher() {
  if (std::getenv("OMPI_COMM_WORLD_RANK")) return "mpirun (Open MPI)";
  if (std::getenv("PMI_RANK")) return "mpirun (PMI)";
  if (std::getenv("SLURM_PROCID")) return "srun";
  if (std::getenv("TORCHELASTIC_RUN_ID")) return "torchrun";
  if (std::getenv("HOROVOD_RANK")) return "horovodrun";
  return "none";
}

}  // namespace

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (end && *end == '\0') ? static_cast<int>(x) : fallback;
}

int world_rank_from_env() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", "HOROVOD_RANK"})
    if (int r = env_int(v, -1); r >= 0) return r;
  return -1;
}

int world_size_from_env() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE", "HOROVOD_SIZE"})
    if (int r = env_int(v, -1); r > 0) return r;
  return -1;
}

void write_job_metadata(store::TraceWriter& file, int world_rank, int world_size,
                        const std::vector<std::pair<std::string, std::string>>& extra) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  file.set_meta(store::meta_key::kToolVersion, COLLSCOPE_TOOL_VERSION);
  file.set_meta(store::meta_key::kHost, host);
  file.set_meta(store::meta_key::kPid, std::to_string(::getpid()));
  file.set_meta(store::meta_key::kWorldRank, std::to_string(world_rank));
  file.set_meta(store::meta_key::kWorldSize, std::to_string(world_size));
  file.set_meta(store::meta_key::kLocalRank,
                std::to_string(env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("LOCAL_RANK", env_int("SLURM_LOCALID", 0)))));
  file.set_meta(store::meta_key::kLauncher, launcher());
  file.set_meta(store::meta_key::kCommandLine, command_line());
  file.set_meta("clock_source", g_use_tsc ? "tsc (invariant), converted to CLOCK_MONOTONIC" : "CLOCK_MONOTONIC");
  file.set_meta(store::meta_key::kMonotonicStart, std::to_string(monotonic_ns()));
  file.set_meta(store::meta_key::kRealtimeStart, std::to_string(realtime_ns()));
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || !is_knob(kv.substr(0, eq))) continue;
    file.set_meta(std::string(store::meta_key::kEnvPrefix) + std::string(kv.substr(0, eq)), kv.substr(eq + 1));
  }
  for (auto& [k, v] : extra) file.set_meta(k, v);
}

}  // namespace collscope::tracer
