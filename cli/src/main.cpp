// collscope: one command, subcommands as in nsys/perf/git. Exit codes: 0 ok, 1 gate failed, 2 usage/input error.
// Each component registers its own subcommands; this file only wires them and maps errors to exit codes.
#include <collscope/store/error.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <string>

#include "commands.hpp"

#ifdef COLLSCOPE_HAVE_PREDICT
#include <collscope/predict/cli.hpp>
#endif
#ifdef COLLSCOPE_HAVE_ANALYZER
#include <collscope/analyzer/cli.hpp>
#endif
#ifdef COLLSCOPE_HAVE_AUTOTUNER
#include <collscope/autotuner/cli.hpp>
#endif
#ifdef COLLSCOPE_HAVE_FORMATS
#include <collscope/formats/cli.hpp>
#endif

namespace {
// Every error is one line, whatever its message holds (an SQLite message, a file name with a newline in it).
std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collscope: find out why a multi-GPU/MPI training job is slow, and tune it", "collscope"};
  app.formatter(collscope::cli::help_formatter());  // before the subcommands: they inherit it
  app.set_version_flag("--version", std::string("collscope ") + COLLSCOPE_VERSION);
  app.require_subcommand(1);
  app.footer("Start with: collscope demo\n'collscope COMMAND --help' describes each command.");
  std::function<int()> action;

  collscope::cli::add_trace_command(app, action);
  collscope::cli::add_demo_command(app, action);
  collscope::cli::add_view_command(app, action);
  collscope::cli::add_sql_command(app, action);
#ifdef COLLSCOPE_HAVE_ANALYZER
  collscope::analyzer::add_cli_commands(app, action);
#endif
#ifdef COLLSCOPE_HAVE_PREDICT
  collscope::predict::add_cli_commands(app, action);
#endif
#ifdef COLLSCOPE_HAVE_AUTOTUNER
  collscope::autotuner::add_cli_commands(app, action);
#endif
#ifdef COLLSCOPE_HAVE_FORMATS
  collscope::formats::add_cli_commands(app, action);
#endif

  // Listed under "Commands:" in every help (CLI11's default group name is "Subcommands").
  std::function<void(CLI::App&)> name_groups = [&](CLI::App& a) {
    for (CLI::App* sub : a.get_subcommands({})) {
      sub->group("Commands");
      name_groups(*sub);
    }
  };
  name_groups(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every usage error: what is wrong, what was probably meant, and which help to read.
    std::fprintf(stderr, "%s\n", collscope::cli::usage_error(app, e, argc, argv).c_str());
    return 2;
  }
  if (!action) return 0;
  try {
    return action();
  } catch (const collscope::Error& e) {
    std::fprintf(stderr, "collscope: %s\n", one_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collscope: internal error: %s\n", one_line(e.what()).c_str());
    return 2;
  }
}
