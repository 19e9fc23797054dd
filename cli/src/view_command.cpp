// `collscope view [RUN_DIR | STUDY.sqlite]`: starts the Qt viewer (a separate program, so the CLI needs no Qt).
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "commands.hpp"

namespace collscope::cli {

void add_view_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("view", "Open a run (or a tuning study) in the timeline viewer");
  // Every argument goes to collscope-view as typed, in order (`RUN_DIR --screenshot FILE` or the reverse):
  // the viewer parses its own command line.
  cmd->prefix_command();
  cmd->footer("Arguments: [RUN_DIR | STUDY.sqlite] [--screenshot FILE.png] (see collscope-view --help)");
  auto args = std::make_shared<std::vector<std::string>>();
  cmd->callback([&action, args, cmd] {
    *args = cmd->remaining();
    action = [args] {
      const auto viewer = std::filesystem::path(self_dir()) / "collscope-view";
      if (!std::filesystem::exists(viewer))
        throw InputError(fmt::format("{}: viewer not installed (collscope was built without Qt 6)", viewer.string()));
      std::vector<std::string> argv = {viewer.string()};
      argv.insert(argv.end(), args->begin(), args->end());
      return run_process(argv, {});
    };
  });
}

}  // namespace collscope::cli
