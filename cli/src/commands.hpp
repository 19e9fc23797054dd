#pragma once
// Subcommands that belong to the CLI itself (they glue components together rather than analyse anything).
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace collscope::cli {

void add_trace_command(CLI::App& app, std::function<int()>& action);
void add_demo_command(CLI::App& app, std::function<int()>& action);
void add_view_command(CLI::App& app, std::function<int()>& action);
void add_sql_command(CLI::App& app, std::function<int()>& action);

struct TraceOptions {
  std::string run_dir;         // default ./collscope-run
  bool force = false;          // replace the rank files of an earlier run
  bool summary = true;         // say on stderr what was traced, and what to run next
  std::string job_output;      // the job's stdout and stderr go to this file instead of the terminal
  bool nccl_profiler = false;  // NCCL_PROFILER_PLUGIN = collscope's profiler plugin
  bool no_preload = false;     // the plugin records alone
  bool python_annotation = true;  // a Python job gets collscope's sitecustomize (step/forward/backward ranges)
};
// `collscope trace`: runs `command` under the tracer; returns the job's exit code. Throws InputError when the
// run directory holds an earlier run (without force) or the preload is missing.
int trace(const TraceOptions& options, const std::vector<std::string>& command);

// Where the parts of an installation are, found from the running executable so that an installed tree can be
// moved (a .deb unpacked anywhere, a prefix copied): the paths relative to bin/ are compiled in
// (install_paths.cpp), and the build tree's layout (bin/, lib/) is the fallback.
std::string self_dir();                          // directory of the running `collscope`
std::string find_preload();                      // $COLLSCOPE_PRELOAD, installed, or the build tree's; throws
std::string find_nccl_profiler();                // $COLLSCOPE_NCCL_PROFILER, else beside the preload; throws
std::optional<std::string> find_program(const std::string& name);  // installed helper (libexec) or next to self
std::optional<std::string> find_data(const std::string& relative);  // installed data (share/collscope) or source
// The directory holding collscope's sitecustomize.py (share/collscope/python, or the source tree's tracer/python).
std::optional<std::string> find_python_annotation_dir();

// The job runs Python: the command is python*, a .py script or a #!...python script, or a launcher (mpirun,
// mpiexec, srun, horovodrun, env) names one, or it is torchrun (unless --no-python) (python_job.cpp).
bool is_python_job(const std::vector<std::string>& command);

// Runs argv (no shell) with extra environment; returns its exit code (128+signal when killed). With
// `output_path`, the job's stdout and stderr are written to that file.
int run_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                const std::string& output_path = "");

// Help that reads well: no "[SUBCOMMAND]" or "{false}" clutter, defaults in the description.
std::shared_ptr<CLI::FormatterBase> help_formatter();
// The one line for a command-line error: what is wrong, the nearest valid command or option ("did you mean"),
// and the help to read (the subcommand's own).
std::string usage_error(CLI::App& root, const CLI::ParseError& error, int argc, char** argv);

}  // namespace collscope::cli
