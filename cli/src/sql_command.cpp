// `collscope sql`: the rank files of a run as plain SQL tables. While a job runs, the tracer saves MPI collectives
// and point-to-point calls as compact binary batches (event_batches, ~20 bytes per call), which collscope's own
// readers decode; people who query the files with sqlite3, Python or pandas want one row per call. This turns the
// batches into those rows after the job, where the cost (~1 us per call) stops no one (docs/trace-format.md).
#include <collscope/cluster/launcher_process.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"

namespace fs = std::filesystem;

namespace collscope::cli {
namespace {

int expand_for_sql(const std::vector<std::string>& paths) {
  if (!cluster::alone_in_process_zero("sql")) return 0;  // under a launcher, one process writes the rows
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      const auto ranks = store::rank_files(p);
      if (ranks.empty()) throw InputError(fmt::format("{}: no rank files (rank-NNNNN.sqlite) in this directory", p));
      files.insert(files.end(), ranks.begin(), ranks.end());
    } else {
      files.push_back(p);
    }
  }
  for (const auto& f : files) {
    store::TraceWriter file(f, store::TraceWriter::Existing{});
    const std::int64_t rows = file.expand_event_batches();
    fmt::print("{}: {}\n", f, rows > 0 ? fmt::format("{} rows from event batches", rows) : "already plain rows");
  }
  return 0;
}

}  // namespace

void add_sql_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("sql", "Make a run's rank files plain SQL tables (one row per call), for sqlite3 or pandas");
  auto paths = std::make_shared<std::vector<std::string>>();
  cmd->add_option("RUN", *paths, "Run directories or rank files")->required();
  cmd->footer("Example: collscope sql run1 && sqlite3 run1/rank-00000.sqlite 'SELECT op, count(*) FROM collectives "
              "JOIN ops ON ops.code = op GROUP BY op'\n"
              "analyze, view, compare and export read the compact batches directly and do not need this.");
  cmd->callback([&action, paths] { action = [paths] { return expand_for_sql(*paths); }; });
}

}  // namespace collscope::cli
