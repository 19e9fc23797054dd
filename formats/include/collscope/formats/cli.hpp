#pragma once
// The formats' subcommands: `collscope export RUN_DIR -o trace.json` (Chrome trace / Perfetto) and
// `collscope import FILES... -o RUN_DIR` (Horovod Timeline, torch.profiler traces, OTF2).
#include <CLI/CLI.hpp>

#include <functional>

namespace collscope::formats {

// Registers `export` and `import`. Callbacks only set `action`; the work runs after parsing.
void add_cli_commands(CLI::App& app, std::function<int()>& action);

}  // namespace collscope::formats
