#pragma once
// The analyzer's subcommands: `collscope analyze RUN_DIR` and `collscope compare BASE NEW`.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace collscope::analyzer {

// Registers `analyze` and `compare`. Callbacks only set `action`; the work runs after parsing.
void add_cli_commands(CLI::App& app, std::function<int()>& action);

// The text report of RUN_DIR (what `collscope demo` prints at its end); never throws: errors become the text.
std::string text_report_for_run(const std::string& run_dir);

}  // namespace collscope::analyzer
