#pragma once
// A thread's scheduler counters (schema 1.4 `cpu_samples`: CPU time and run-queue delay, cumulative, sampled by
// the tracer at that thread's calls; 1.8: instructions retired, where perf events count them) as functions of
// aligned time, linear between samples. The one reading of
// them: lateness's causes, the CPU contention finding and the replay model's CPU sharing all ask here (ns). Also
// which thread is whose: the one choice of a rank's step thread.
#include <collscope/run/run.hpp>
#include <collscope/run/steps.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace collscope::run {

class ThreadCounters {
 public:
  // `offset_ns`: the rank's clock offset (ClockAlignment::offset_ns), so that times are aligned.
  ThreadCounters(const RankTrace& trace, std::int64_t thread, std::int64_t offset_ns);
  bool empty() const { return t_.size() < 2; }
  // (on a CPU, waiting runnable for one) over aligned [a, b], or nullopt when the samples do not cover it.
  std::optional<std::pair<double, double>> over(std::int64_t a, std::int64_t b) const;
  // Whether every sample holds the instructions retired (schema 1.8, where perf events count them).
  bool has_instructions() const { return !instructions_.empty(); }
  // Instructions retired over aligned [a, b], linear between samples; nullopt when not counted or not covered.
  std::optional<double> instructions_over(std::int64_t a, std::int64_t b) const;

 private:
  double value_at(const std::vector<double>& v, std::int64_t t) const;  // v per sample, linear between them
  std::vector<std::int64_t> t_;
  std::vector<double> cpu_, runq_;
  std::vector<double> instructions_;  // empty unless every sample has them
};

// The thread with the most rows in `rows_per_thread` (thread id -> rows; ties: the lowest id); -1 when empty.
std::int64_t busiest_thread(const std::map<std::int64_t, int>& rows_per_thread);

// The thread that marks a rank's steps: the one with the most ranges named as steps; -1 when none.
std::int64_t step_thread(const RankTrace& rank, const StepNames& step_names);

// The thread that makes most of a rank's synchronising collectives (its communication thread where the job has a
// background one, as Horovod does); -1 when it made none.
std::int64_t sync_thread(const RankTrace& rank);

}  // namespace collscope::run
