#pragma once
// Summaries of a loaded run, computed once off the GUI thread, so that the views draw a run of thousands of ranks at
// any zoom from a bounded amount of data: each rank's lateness and wait over time (the rank strips), each rank's
// lateness per step (the heat map), the spread of arrivals of each collective (the lens), bus bandwidth and step
// time over time (the counter tracks), and the totals of a selected time range.
//
// One definition each (ns on the aligned clock): at a collective instance, a rank's lateness is its arrival minus
// the first arrival, its wait the last arrival minus its arrival. The rank that arrives last has the largest
// lateness and no wait; a rank that arrives first the reverse.
#include <collscope/gui/timeline_model.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace collscope::gui {

struct Step;

// Per rank and time bucket: how much of the bucket the rank was late (between an instance's first arrival and its
// own) and waited (between its own arrival and the instance's last), ns; over all instances.
struct RankActivity {
  std::int64_t bucket_ns = 1;  // run time per bucket
  int buckets = 0;
  int ranks = 0;
  std::vector<float> late_ns;  // [rank * buckets + bucket]
  std::vector<float> wait_ns;
  float late(int rank, int bucket) const { return late_ns[static_cast<std::size_t>(rank) * buckets + bucket]; }
  float wait(int rank, int bucket) const { return wait_ns[static_cast<std::size_t>(rank) * buckets + bucket]; }
};

// Per rank and step: lateness summed over the step's instances (the heat map). Columns are the run's steps, or,
// when it has fewer than two, equal time buckets (`step_start_ns` says where each starts).
struct StepLateness {
  int ranks = 0;
  int steps = 0;
  bool from_steps = false;                 // false: the columns are time buckets
  std::vector<std::int64_t> step_start_ns;  // run time, steps + 1 entries (the last is the end)
  std::vector<float> late_ns;              // [rank * steps + step]
  float scale_ns = 1;                      // colour scale: the 99th percentile of the non-zero cells
  float late(int rank, int step) const { return late_ns[static_cast<std::size_t>(rank) * steps + step]; }
};

inline constexpr int kLensBins = 32;

// One collective instance as the lens shows it: where its ranks arrived within [first, last arrival].
struct LensRow {
  std::uint32_t instance = 0;   // into TimelineModel::matched().instances
  std::int64_t start_ns = 0;    // run time of the first arrival
  std::int64_t spread_ns = 0;   // last − first arrival
  std::int64_t held_ns = 0;     // last − second-last arrival: how long the last rank alone held the others
  int last_rank = -1;           // rank index of the last arriver
  int ranks = 0;
  std::array<std::uint16_t, kLensBins> arrivals{};  // ranks per bin of [first, last arrival] (last bin: the last)
};

// Points in time order for a counter track.
struct CounterSeries {
  std::vector<std::int64_t> t_ns;  // run time
  std::vector<float> value;
  float max = 0;
  float median = 0;  // step time only: the track marks steps slower than 1.1 x this
};

struct RunSummaries {
  RankActivity activity;
  StepLateness heat;
  std::vector<LensRow> lens;  // instances of the reference communicator (all when it has none), by first arrival
  CounterSeries busbw_gbps;   // per instance with bytes and a transfer time, at its first arrival
  CounterSeries step_ns;      // per step, at its start: its duration
};

// `steps` in run time (RunData::steps); `activity_buckets` per rank (0: chosen from the rank count).
RunSummaries summarize(const TimelineModel& model, const std::vector<Step>& steps, int activity_buckets = 0);

// What happened in [t0, t1) (run time): every collective call overlapping it, clipped to it.
struct RangeTotals {
  std::int64_t duration_ns = 0;
  std::int64_t calls = 0;                       // collective calls starting in the range
  std::int64_t bytes = 0;                       // their payload
  std::array<std::int64_t, store::kOpCount> calls_by_op{};
  double busy_ns_per_rank = 0;                  // mean over ranks: time inside collectives, clipped to the range
  double wait_ns_per_rank = 0;                  // mean over ranks: of that, waiting for the last arrival
  int ranks = 0;
};
RangeTotals range_totals(const TimelineModel& model, std::int64_t t0, std::int64_t t1);

}  // namespace collscope::gui
