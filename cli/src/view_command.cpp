// `collscope view [RUN_DIR | STUDY.sqlite] [viewer options]`: starts the Qt viewer (a separate program, so the
// CLI needs no Qt). The viewer owns its options: `collscope view --help` prints the viewer's own help.
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include "commands.hpp"

namespace collscope::cli {

void add_view_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("view", "Open a run (or a tuning study) in the timeline viewer");
  // Every argument goes to collscope-view as typed, in order, --help included: the viewer parses its own
  // command line, so its options are listed in one place.
  cmd->prefix_command();
  cmd->set_help_flag();
  auto args = std::make_shared<std::vector<std::string>>();
  cmd->callback([&action, args, cmd] {
    *args = cmd->remaining();
    action = [args] {
      const auto viewer = find_program("collscope-view");
      if (!viewer) {
        const bool help = std::find(args->begin(), args->end(), "--help") != args->end() ||
                          std::find(args->begin(), args->end(), "-h") != args->end();
        if (help) {
          fmt::print("Usage: collscope view [RUN_DIR | STUDY.sqlite] [--screenshot FILE.png]\n"
                     "Runs collscope-view, which is not installed here (collscope was built without Qt 6).\n");
          return 0;
        }
        throw InputError(fmt::format("{}/collscope-view: viewer not installed (collscope was built without Qt 6)", self_dir()));
      }
      std::vector<std::string> argv = {*viewer};
      argv.insert(argv.end(), args->begin(), args->end());
      return run_process(argv, {});
    };
  });
}

}  // namespace collscope::cli
