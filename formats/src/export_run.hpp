#pragma once
// The run an export writes: loaded by run/ (the one loader), every rank file readable, clocks aligned as the
// analyzer aligns them. Shared by the Chrome and OTF2 exports.
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/run.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace collscope::formats::detail {

// A rank file the loader could not read stops the export with its one line (an export that silently lacks a rank
// would look like a smaller job).
inline run::Run load_run_for_export(const std::string& run_dir, run::LoadOptions options) {
  run::Run run = run::load_run(run_dir, std::move(options));
  for (const auto& path : store::rank_files(run_dir))
    if (std::none_of(run.ranks.begin(), run.ranks.end(), [&](const run::RankTrace& r) { return r.path == path; })) {
      auto problem = std::find_if(run.problems.begin(), run.problems.end(), [&](const std::string& p) { return p.starts_with(path); });
      throw InputError(problem != run.problems.end() ? *problem : fmt::format("{}: unreadable rank file", path));
    }
  return run;
}

}  // namespace collscope::formats::detail
