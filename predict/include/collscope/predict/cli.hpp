#pragma once
// The predict component's subcommand: `collscope predict RUN [--set KNOB=VALUE]...`.
#include <CLI/CLI.hpp>

#include <functional>

namespace collscope::predict {

// Registers `predict`. The callback only sets `action`; the work runs after parsing.
void add_cli_commands(CLI::App& app, std::function<int()>& action);

}  // namespace collscope::predict
