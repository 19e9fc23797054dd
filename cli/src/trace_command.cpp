// `collscope trace [-o RUN_DIR] [--nccl-profiler [--no-preload]] -- CMD...`: runs CMD with the preload tracer, one
// trace file per rank; --nccl-profiler also has NCCL load collscope's profiler plugin (NCCL_PROFILER_PLUGIN),
// which records into the same files; with --no-preload the plugin records alone.
// Works around a launcher (`collscope trace -- mpirun -np 4 ./app`) and inside one
// (`mpirun -np 4 collscope trace -- ./app`): either way every process inherits LD_PRELOAD and the run directory.
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

// ld.so splits LD_PRELOAD at spaces and colons and has no escape for either (ld.so(8)): a preload installed under
// "/opt/my tools/" would not load, with one ld.so error per process and the job running untraced. Such a path is
// reached through a symlink in a private directory (mkdtemp, mode 0700) whose own path holds neither; the link and
// the directory are removed when the job ends. A path without them is used as it is.
class PreloadPath {
 public:
  explicit PreloadPath(const std::string& real) : path_(real) {
    if (real.find_first_of(" :\t\n") == std::string::npos) return;
    std::string base = "/tmp";
    if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp == '/' && std::string(tmp).find_first_of(" :\t\n") == std::string::npos)
      base = tmp;
    std::string pattern = base + "/collscope-preload-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw Error(fmt::format("{}: cannot make a directory for the preload's link (its path has a space or colon, which "
                              "LD_PRELOAD cannot hold): {}", base, std::strerror(errno)));
    dir_ = pattern;
    const std::string link = dir_ + "/libcollscope-preload.so";
    if (::symlink(real.c_str(), link.c_str()) != 0) {
      const int err = errno;
      ::rmdir(dir_.c_str());
      throw Error(fmt::format("{}: cannot link the preload there: {}", dir_, std::strerror(err)));
    }
    path_ = link;
  }
  ~PreloadPath() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  PreloadPath(const PreloadPath&) = delete;
  PreloadPath& operator=(const PreloadPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;  // what LD_PRELOAD names
  std::string dir_;   // the private directory, when one was made
};

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
  const PreloadPath preload_path(preload);
  std::vector<std::pair<std::string, std::string>> env = {{"COLLSCOPE_RUN_DIR", run_dir.string()}};
  if (!preload.empty()) {
    env.emplace_back("LD_PRELOAD", prepend_path_list("LD_PRELOAD", preload_path.path(), ':'));
    // The same file, so dlopen finds the preloaded instance.
    env.emplace_back("NVTX_INJECTION64_PATH", preload_path.path());
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
