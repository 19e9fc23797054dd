#pragma once
// Subcommands that belong to the CLI itself (they glue components together rather than analyse anything).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace collscope::cli {

void add_trace_command(CLI::App& app, std::function<int()>& action);
void add_demo_command(CLI::App& app, std::function<int()>& action);
void add_view_command(CLI::App& app, std::function<int()>& action);

// Directory holding the running `collscope` executable.
std::string self_dir();
// libcollscope-preload.so: $COLLSCOPE_PRELOAD, else <self>/../lib/, else next to self. Throws if absent.
std::string find_preload();
// libcollscope-nccl-profiler.so: $COLLSCOPE_NCCL_PROFILER, else beside the preload. Throws if absent.
std::string find_nccl_profiler();

struct TraceOptions {
  bool nccl_profiler = false;  // NCCL_PROFILER_PLUGIN = collscope's profiler plugin
  bool no_preload = false;     // the plugin records alone
};

// `collscope trace`: runs `command` under the tracer writing into run_dir; returns its exit code.
int trace(const std::string& run_dir, const std::vector<std::string>& command, const TraceOptions& options);

// Runs argv (no shell) with extra environment; returns its exit code (128+signal when killed).
int run_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace collscope::cli
