#pragma once
// `collscope tune SPACE.yaml [options] -- CMD...` and `collscope tune show STUDY`.
#include <CLI/CLI.hpp>

#include <functional>

namespace collscope::autotuner {

void add_cli_commands(CLI::App& app, std::function<int()>& action);

}  // namespace collscope::autotuner
