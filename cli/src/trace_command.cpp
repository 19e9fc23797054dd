// `collscope trace [-o RUN_DIR] [--force] [--nccl-profiler [--no-preload]] -- CMD...`: runs CMD with the preload
// tracer, one trace file per rank, then says what was traced (ranks, files, events, drops) and what to run next.
// --nccl-profiler also has NCCL load collscope's profiler plugin (NCCL_PROFILER_PLUGIN), which records into the same
// files; with --no-preload the plugin records alone. A Python job also gets collscope's sitecustomize on PYTHONPATH
// (tracer/python): its PyTorch steps, forward and backward passes become NVTX ranges; --no-python-annotation: not.
// Works around a launcher (`collscope trace -- mpirun -np 4 ./app`) and inside one
// (`mpirun -np 4 collscope trace -- ./app`): either way every process inherits LD_PRELOAD and the run directory.
#include <collscope/run/format.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/schema.hpp>
#include <collscope/store/trace_reader.hpp>

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

// Launched by a launcher as one of its ranks: every rank runs `collscope trace`, so none may clean the directory
// (nor refuse it: the first rank's file is already there when the second looks), and none prints a summary.
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

// rank-*.sqlite and their -wal/-shm companions.
std::vector<fs::path> rank_file_paths(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("rank-") && name.find(".sqlite") != std::string::npos) out.push_back(entry.path());
  }
  return out;
}

std::string shown(const fs::path& dir) {
  std::error_code ec;
  const auto rel = fs::relative(dir, fs::current_path(ec), ec);
  return !ec && !rel.empty() && !rel.string().starts_with("..") ? rel.string() : dir.string();
}

// What the run holds, in a few lines on stderr (stdout is the job's).
void print_summary(const fs::path& dir, const std::vector<std::string>& command, int exit_code, bool created_dir) {
  std::vector<std::string> files;
  try {
    files = store::rank_files(dir.string());
  } catch (const InputError&) {
  }
  if (files.empty()) {
    std::error_code ec;
    if (created_dir && fs::is_empty(dir, ec)) fs::remove(dir, ec);
    const std::string why = exit_code != 0 ? fmt::format("`{}` exited with {} and none of its processes", command.front(), exit_code)
                                           : fmt::format("none of the processes of `{}`", command.front());
    fmt::print(stderr, "{}\n",
               run::wrap_text(fmt::format("collscope trace: nothing traced: {} started the tracer{}. It starts in a "
                                          "process at MPI_Init of an MPI it knows (Open MPI, MPICH and their kin) or "
                                          "at its first NCCL communicator or NVTX range (in a PyTorch job: "
                                          "init_process_group, or its first training step); a program without MPI or "
                                          "NCCL, a statically linked one, one that clears LD_PRELOAD or an MPI "
                                          "collscope does not know (a line above says so) is not traced.",
                                          why, created_dir ? " (the empty run directory was removed)" : ""),
                              100, 4));
    return;
  }
  std::int64_t collectives = 0, messages = 0, ranges = 0, gpu = 0, dropped = 0, bytes = 0;
  std::vector<int> dropping_ranks;
  for (const auto& f : files) {
    std::error_code ec;
    bytes += static_cast<std::int64_t>(fs::file_size(f, ec));
    // A read-only SQLite connection to a WAL-mode file creates -wal and -shm beside it and leaves them: the job
    // has finished, so the ones this reading creates are removed again (one left by a killed job is kept).
    const bool had_wal = fs::exists(f + "-wal", ec), had_shm = fs::exists(f + "-shm", ec);
    struct RemoveCreated {
      std::string path;
      bool had_wal, had_shm;
      ~RemoveCreated() {
        std::error_code e;
        if (!had_wal) fs::remove(path + "-wal", e);
        if (!had_shm) fs::remove(path + "-shm", e);
      }
    } cleanup{f, had_wal, had_shm};
    try {
      store::TraceReader reader(f);
      collectives += reader.row_count("collectives");
      messages += reader.row_count("point_to_point");
      ranges += reader.row_count("nvtx_ranges");
      gpu += reader.row_count("gpu_activities");
      if (const auto d = reader.meta_int(store::meta_key::kEventsDropped); d && *d > 0) {
        dropped += *d;
        dropping_ranks.push_back(static_cast<int>(reader.meta_int(store::meta_key::kWorldRank).value_or(-1)));
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "collscope trace: {}\n", e.what());
    }
  }
  fmt::print(stderr, "{}\n",
             run::wrap_text(fmt::format("collscope trace: {} rank file{} in {} ({}): {} collectives, {} point-to-point "
                                        "calls, {} NVTX ranges, {} GPU activities",
                                        files.size(), files.size() == 1 ? "" : "s", shown(dir),
                                        run::format_bytes(double(bytes)), collectives, messages, ranges, gpu),
                            100, 4));
  if (dropped > 0)
    fmt::print(stderr, "{}\n",
               run::wrap_text(fmt::format("collscope trace: {} events dropped on rank(s) {} (the process had no "
                                          "memory left for trace buffers; COLLSCOPE_BUFFER_MB sets their cap)",
                                          dropped, fmt::join(dropping_ranks, ",")),
                              100, 4));
  fmt::print(stderr, "Next: collscope analyze {0}   |   collscope view {0}\n", shown(dir));
}

}  // namespace

int trace(const TraceOptions& options, const std::vector<std::string>& command) {
  if (command.empty()) throw InputError("trace: no command given (usage: collscope trace [-o RUN_DIR] -- CMD...)");
  if (options.no_preload && !options.nccl_profiler)
    throw InputError("trace: --no-preload records nothing without --nccl-profiler");
  const std::string preload = options.no_preload ? std::string() : find_preload();
  const std::string profiler = options.nccl_profiler ? find_nccl_profiler() : std::string();
  fs::path run_dir = options.run_dir.empty() ? fs::path("collscope-run") : fs::path(options.run_dir);
  std::error_code ec;
  const bool existed = fs::exists(run_dir, ec);
  if (existed && !fs::is_directory(run_dir, ec)) throw InputError(fmt::format("{}: not a directory", run_dir.string()));
  const bool launcher = inside_launcher();
  if (!launcher && existed) {
    // Rank files of an earlier run: refused, unless --force replaces them (a bigger earlier run's files would
    // otherwise mix into this one).
    const auto old = rank_file_paths(run_dir);
    if (!old.empty() && !options.force)
      throw InputError(fmt::format("{}: holds an earlier run ({} rank files); use --force to replace it, or another -o",
                                   run_dir.string(), store::rank_files(run_dir.string()).size()));
    for (const auto& p : old) fs::remove(p, ec);
  }
  fs::create_directories(run_dir, ec);
  run_dir = fs::absolute(run_dir);
  // An unwritable run directory is not fatal: the tracer warns once per process and the job runs untraced.
  const PreloadPath preload_path(preload);
  std::vector<std::pair<std::string, std::string>> env = {{"COLLSCOPE_RUN_DIR", run_dir.string()}};
  if (!preload.empty()) {
    env.emplace_back("LD_PRELOAD", prepend_path_list("LD_PRELOAD", preload_path.path(), ':'));
    // The same file, so dlopen finds the preloaded instance.
    env.emplace_back("NVTX_INJECTION64_PATH", preload_path.path());
  }
  if (!profiler.empty()) env.emplace_back("NCCL_PROFILER_PLUGIN", profiler);
  if (!preload.empty() && options.python_annotation && is_python_job(command)) {
    // Python imports the first sitecustomize on its path: collscope's, which runs the one it hides.
    if (const auto dir = find_python_annotation_dir())
      env.emplace_back("PYTHONPATH", prepend_path_list("PYTHONPATH", *dir, ':'));
    else
      fmt::print(stderr, "collscope trace: sitecustomize.py not found (share/collscope/python): the Python job runs "
                         "without step annotation\n");
  }
  const int rc = run_process(command, env, options.job_output);
  if (options.summary && !launcher) print_summary(run_dir, command, rc, !existed);
  return rc;
}

void add_trace_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("trace", "Run a command under the tracer: one SQLite trace file per rank");
  auto o = std::make_shared<TraceOptions>();
  auto command = std::make_shared<std::vector<std::string>>();
  cmd->add_option("-o,--output", o->run_dir, "Run directory for the rank files (default: ./collscope-run)")->type_name("DIR");
  cmd->add_flag("--force", o->force, "Replace the rank files of an earlier run in the run directory");
  cmd->add_flag("--nccl-profiler", o->nccl_profiler,
                "Also load collscope's NCCL profiler plugin (NCCL_PROFILER_PLUGIN): per collective its kernel "
                "channels' GPU times, algorithm, protocol, channels and network transfers");
  cmd->add_flag("--no-python-annotation", [o](std::int64_t) { o->python_annotation = false; },
                "Do not annotate a Python job (by default its PyTorch optimizer steps, forward and backward passes "
                "are recorded as NVTX ranges 'step', 'forward', 'backward', 'optimizer')");
  cmd->add_flag("--no-preload", o->no_preload, "With --nccl-profiler: record with the profiler plugin alone (no LD_PRELOAD)");
  cmd->add_option("COMMAND", *command, "The job to run, after --")->required();
  cmd->prefix_command(false);
  cmd->footer("Example: collscope trace -o run1 -- mpirun -np 4 ./train --batch-size 64\n"
              "The job's exit code is collscope's. Inside a launcher (mpirun -np 4 collscope trace -- ./app) each\n"
              "rank traces itself into the same directory.");
  cmd->callback([&action, o, command] { action = [o, command] { return trace(*o, *command); }; });
}

}  // namespace collscope::cli
