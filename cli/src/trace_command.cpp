// `collscope trace [-o RUN_DIR] [--nccl-profiler [--no-preload]] -- CMD...`: runs CMD with the preload tracer, one
// trace file per rank; --nccl-profiler also has NCCL load collscope's profiler plugin (NCCL_PROFILER_PLUGIN),
// which records into the same files; with --no-preload the plugin records alone.
// Works around a launcher (`collscope trace -- mpirun -np 4 ./app`) and inside one
// (`mpirun -np 4 collscope trace -- ./app`): either way every process inherits LD_PRELOAD and the run directory.
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "commands.hpp"

namespace collscope::cli {
namespace fs = std::filesystem;

namespace {

std::string prepend_path_list(const char* var, const std::string& value, char sep) {
  const char* old = std::getenv(var);
  if (!old || !*old) return value;
  return value + sep + old;
}

// Launched by a launcher as one of its ranks: every rank runs `collscope trace`, so none may clean the directory.
bool inside_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace

int trace(const std::string& run_dir_arg, const std::vector<std::string>& command, const TraceOptions& options) {
  if (command.empty()) throw InputError("trace: no command given (usage: collscope trace [-o RUN_DIR] -- CMD...)");
  if (options.no_preload && !options.nccl_profiler)
    throw InputError("trace: --no-preload records nothing without --nccl-profiler");
  const std::string preload = options.no_preload ? std::string() : find_preload();
  const std::string profiler = options.nccl_profiler ? find_nccl_profiler() : std::string();
  fs::path run_dir = run_dir_arg.empty() ? fs::path("collscope-run") : fs::path(run_dir_arg);
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  run_dir = fs::absolute(run_dir);
  if (!inside_launcher() && fs::is_directory(run_dir, ec)) {
    // Old rank files of a bigger previous run would otherwise mix into this one.
    for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
      const auto name = entry.path().filename().string();
      if (name.starts_with("rank-") && name.find(".sqlite") != std::string::npos) fs::remove(entry.path(), ec);
    }
  }
  // An unwritable run directory is not fatal: the tracer warns once per process and the job runs untraced.
  std::vector<std::pair<std::string, std::string>> env = {{"COLLSCOPE_RUN_DIR", run_dir.string()}};
  if (!preload.empty()) {
    env.emplace_back("LD_PRELOAD", prepend_path_list("LD_PRELOAD", preload, ':'));
    env.emplace_back("NVTX_INJECTION64_PATH", preload);
  }
  if (!profiler.empty()) env.emplace_back("NCCL_PROFILER_PLUGIN", profiler);
  return run_process(command, env);
}

void add_trace_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("trace", "Run a command under the tracer: one SQLite trace file per rank");
  auto run_dir = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  auto options = std::make_shared<TraceOptions>();
  cmd->add_option("-o,--output", *run_dir, "Run directory for the rank files (default: ./collscope-run)");
  cmd->add_flag("--nccl-profiler", options->nccl_profiler,
                "Also load collscope's NCCL profiler plugin (NCCL_PROFILER_PLUGIN): per collective its kernel "
                "channels' GPU times, algorithm, protocol, channels and network transfers");
  cmd->add_flag("--no-preload", options->no_preload,
                "With --nccl-profiler: record with the profiler plugin alone (no LD_PRELOAD)");
  cmd->add_option("command", *command, "The job to run, after --")->required();
  cmd->prefix_command(false);
  cmd->footer("Example: collscope trace -o run1 -- mpirun -np 4 ./train --batch-size 64");
  cmd->callback([&action, run_dir, command, options] {
    action = [run_dir, command, options] { return trace(*run_dir, *command, *options); };
  });
}

}  // namespace collscope::cli
