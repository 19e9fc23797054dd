#pragma once
// Large runs in the viewer, read a window at a time. The whole-run load (run_data_loader.hpp) holds every event of
// a run in memory and takes seconds before the first frame at thousands of ranks; a large run is therefore read
// whole once, and what the viewer needs afterwards is kept in a view cache (one file per run, outside the run
// directory, see view_cache_path):
//   - the overview, what the first frame draws: every rank without its events (world rank, host, threads, clock
//     offset), the matched instances (first and last arrivals: what a box's wait and the collective lens show),
//     the summaries (rank strips, heat map, lens, counter tracks), steps, findings, statistics;
//   - the run's events in run/'s form (after its screening, clock anchors and fusion fills), per rank and kind in
//     time buckets, so that a window (ranks x run time) reads only the buckets it overlaps.
// Opening a run with a valid cache draws the overview at once and loads the events of the visible ranks and time
// range on a background thread (RunWindowLoader), again as the view moves. Runs below
// WindowedRunPolicy::min_events are never cached and load whole as before.
#include <collscope/gui/run_data.hpp>

#include <QObject>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace collscope::gui {

struct WindowedRunPolicy {
  // Events (collectives, NVTX ranges, GPU activities, point-to-point calls) from which a run is viewed through its
  // cache. Around 2 M events the whole-run viewer's first timeline frame nears 1 s and its heat map and lens (which
  // wait for the analysis) take 2 s on the project's 2-core VMs (viewer_bench, 2.25 M events: 0.5-0.85 s and
  // 1.7-2.1 s idle; docs/performance.md), and it holds ~110 B/event; below, a cache would cost disk for little.
  // COLLSCOPE_VIEW_WINDOWED_MIN_EVENTS overrides it (tests open small runs windowed).
  std::int64_t min_events = 2'000'000;
  // Events one window may hold: the visible range and ranks, with margins while they fit. A window of 300 k events
  // loads in ~0.1 s and its lanes hold ~6 MB. COLLSCOPE_VIEW_WINDOW_EVENTS overrides it.
  std::int64_t window_events = 300'000;
};
WindowedRunPolicy windowed_run_policy();

// $COLLSCOPE_VIEW_CACHE_DIR, else $XDG_CACHE_HOME/collscope/views, else ~/.cache/collscope/views; the file is
// named after the run directory's absolute path. The run directory itself is never written.
std::string view_cache_path(const std::string& run_dir);

// Writes the view cache of an analyzed run (RunData::analyzed, summaries set) to `path` (through a temporary file
// renamed over it). Throws collscope::Error naming the file when it cannot be written.
void write_view_cache(const RunData& analyzed, const std::string& path);

// A run opened through its view cache.
class WindowedRun : public std::enable_shared_from_this<WindowedRun> {
 public:
  // The cache of `run_dir` at `cache_path`; null when there is none, it is of another format version, or the run's
  // rank files changed since it was written (names, sizes, modification times).
  static std::shared_ptr<const WindowedRun> open(const std::string& run_dir, const std::string& cache_path);
  ~WindowedRun();

  // Every rank, no events: what the first frame draws (RunData::windowed set, an empty window).
  std::shared_ptr<const RunData> overview() const;
  // The events of ranks [rank_begin, rank_end) overlapping [start_ns, end_ns] of run time. Thread-safe.
  std::shared_ptr<const RunData> load(const RunWindow& window) const;
  // Events a window would hold, from the per-rank counts (spread evenly over the run): to size windows.
  std::int64_t estimated_events(const RunWindow& window) const;

  int rank_count() const { return static_cast<int>(events_per_rank_.size()); }
  std::int64_t duration_ns() const { return duration_ns_; }
  std::int64_t event_count() const { return event_count_; }  // in the whole run
  const std::string& cache_path() const { return path_; }

  struct Contents;  // what the cache file holds besides the events (windowed_run.cpp)

 private:
  WindowedRun() = default;
  std::string path_;
  int fd_ = -1;  // the cache file, read with pread (one descriptor shared by concurrent loads)
  std::shared_ptr<const Contents> contents_;
  std::int64_t duration_ns_ = 0, bucket_ns_ = 1, event_count_ = 0;
  std::vector<std::int64_t> events_per_rank_;
  std::vector<std::array<std::uint64_t, 4>> table_offset_;  // per rank and kind: file offset of its bucket table
};

// Loads windows of a WindowedRun on a worker thread, one at a time; a request made while one loads replaces any
// request waiting behind it (the view moved on). The destructor waits for the load in progress (a window is
// bounded by WindowedRunPolicy::window_events).
class RunWindowLoader : public QObject {
  Q_OBJECT
 public:
  explicit RunWindowLoader(QObject* parent = nullptr);
  ~RunWindowLoader() override;
  void setRun(std::shared_ptr<const WindowedRun> run);  // null: none (pending requests are dropped)
  void request(const RunWindow& window);
  // A window no longer shown: freed on the worker thread with the next load, not on the GUI thread (a window
  // holds every rank's metadata: freeing it takes milliseconds at thousands of ranks).
  void retire(std::shared_ptr<const RunData> window) { retired_.push_back(std::move(window)); }
  bool busy() const { return worker_.joinable(); }
  // The window being loaded, else the last one requested.
  const RunWindow& requested() const { return in_flight_; }

 signals:
  void loaded(std::shared_ptr<const collscope::gui::RunData> window);
  void failed(const QString& message);

 private:
  void startNext();
  std::shared_ptr<const WindowedRun> run_;
  std::thread worker_;
  RunWindow in_flight_;
  bool has_pending_ = false;
  RunWindow pending_;
  std::vector<std::shared_ptr<const RunData>> retired_;
};

}  // namespace collscope::gui
