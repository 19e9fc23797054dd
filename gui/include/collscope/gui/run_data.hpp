#pragma once
// What the viewer shows of a run: the timeline model (the run, its clock alignment, its matching and the lanes:
// built once, shared, never copied) and what the analyzer adds to it (steps, findings, statistics). A RunData is
// small: the analyzed run replaces the first one by a new RunData sharing the same model.
#include <collscope/gui/run_summaries.hpp>
#include <collscope/gui/timeline_model.hpp>
#include <collscope/run/format.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collscope::gui {

struct Step {
  int number = 0;
  std::int64_t start_ns = 0;  // run time, earliest rank
  std::int64_t end_ns = 0;
};

// A finding as the viewer shows it (filled from the analyzer's findings).
struct Finding {
  std::string kind;      // "straggler", "latency_bound", ...
  std::string severity;  // "critical", "warning", "info"
  std::string summary;   // one line with the evidence in numbers
  std::string suggestion;
  std::int64_t start_ns = 0;  // evidence time range (run time)
  std::int64_t end_ns = 0;
  std::int64_t cost_ns = 0;
  std::vector<int> world_ranks;          // ranks concerned
  std::uint32_t evidence = kNoInstance;  // the collective (id) that shows it best, selected when activated
};

// Per op and size bucket.
struct StatisticsRow {
  store::Op op = store::Op::Unknown;
  std::int64_t size_bucket_bytes = 0;  // lower bound, a power of two
  std::int64_t min_bytes = 0, max_bytes = 0;  // the sizes seen in the bucket (shown: never the bucket's bounds)
  std::int64_t count = 0;
  std::int64_t total_ns = 0;  // time of the instances (transfer time), summed
  double busbw_gbps = 0;      // median bus bandwidth (nccl-tests definition), GB/s
};

class WindowedRun;

// A window of a large run (windowed_run.hpp): ranks [rank_begin, rank_end) (indices into Run::ranks) and the ranks
// of lanes pinned above them, over run time [start_ns, end_ns]. Empty (no ranks) in the overview.
struct RunWindow {
  int rank_begin = 0, rank_end = 0;
  std::vector<int> pinned_ranks;  // ascending; those outside [rank_begin, rank_end) are loaded too
  std::int64_t start_ns = 0, end_ns = 0;
  bool empty() const { return rank_end <= rank_begin; }
  bool holds_rank(int r) const {
    return (rank_begin <= r && r < rank_end) || std::binary_search(pinned_ranks.begin(), pinned_ranks.end(), r);
  }
  bool contains(const RunWindow& o) const {
    return !empty() && rank_begin <= o.rank_begin && o.rank_end <= rank_end && start_ns <= o.start_ns &&
           o.end_ns <= end_ns && std::all_of(o.pinned_ranks.begin(), o.pinned_ranks.end(), [&](int r) { return holds_rank(r); });
  }
  // The ranks it loads, ascending.
  std::vector<int> ranks() const {
    std::vector<int> out;
    for (const int r : pinned_ranks)
      if (r < rank_begin) out.push_back(r);
    for (int r = rank_begin; r < rank_end; ++r) out.push_back(r);
    for (const int r : pinned_ranks)
      if (r >= rank_end) out.push_back(r);
    return out;
  }
};

struct RunData {
  std::string dir;
  std::shared_ptr<const TimelineModel> timeline;
  std::vector<Step> steps;
  std::vector<Finding> findings;
  std::vector<StatisticsRow> statistics;
  std::vector<std::string> warnings;  // partial run, dropped events, analyzer not built ...
  bool analyzed = false;              // steps, findings and statistics came from the analyzer
  // Lateness and wait per rank over time and per step, the lens rows, counter tracks (after the steps are known;
  // null in the first view).
  std::shared_ptr<const RunSummaries> summaries;
  // Set when the run is read a window at a time: the timeline's run holds every rank but only the events of
  // `window`; the summaries, steps, findings and statistics are the whole run's. Finding::evidence is kNoInstance
  // there (collective ids are the window's).
  std::shared_ptr<const WindowedRun> windowed;
  RunWindow window;

  const TimelineModel& model() const { return *timeline; }
  const run::Run& run() const { return timeline->run(); }
};

using run::format_bytes;     // the one formatting home (collscope/run/format.hpp)
using run::format_duration;

}  // namespace collscope::gui
