#pragma once
// Chrome trace (Trace Event Format) export: a run opens in Perfetto (ui.perfetto.dev) or chrome://tracing.
// One process per rank, one thread per traced thread and per GPU stream; collectives, MPI point-to-point calls,
// NVTX ranges, GPU activities and calls in flight as slices; the k-th call of a communicator linked across its ranks
// by a flow arrow, and each send to its matched receive by another.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace collscope::formats {

struct ChromeExportOptions {
  bool flows = true;  // arrows linking the same collective on every rank (costs memory: 32 B per collective) and
                      // each send to its receive
  // A slice of a large run (browsers open about 1 GB of JSON at most, some 3 M events): only these world ranks
  // (empty: all), only events overlapping [from_ns, to_ns] counted from the run's start.
  std::vector<int> ranks;
  std::int64_t from_ns = 0;
  std::int64_t to_ns = INT64_MAX;
};

struct ChromeExportCounts {
  std::int64_t ranks = 0;
  std::int64_t collectives = 0;
  std::int64_t point_to_point = 0;  // MPI point-to-point calls (point_to_point rows)
  std::int64_t nvtx_ranges = 0;
  std::int64_t gpu_activities = 0;
  std::int64_t calls_in_flight = 0;
  std::int64_t flows = 0;  // collectives seen on two or more ranks, each one arrow chain
  std::int64_t messages = 0;  // sends matched with their receive (run::match_messages), each one arrow
  // One line each, naming the file: rows left out for values out of physical range (run/physical_limits.hpp),
  // anchors not used, missing ranks.
  std::vector<std::string> problems;
};

// Writes the run in `run_dir` as one JSON object {"traceEvents": [...], ...}. Times are microseconds from the
// run's start on the run's aligned clock (run/clock_alignment.hpp, as the analyzer and the viewer place them).
// Throws InputError naming the run or file on bad input.
ChromeExportCounts export_chrome_trace(const std::string& run_dir, std::ostream& out,
                                       const ChromeExportOptions& options = {});

}  // namespace collscope::formats
