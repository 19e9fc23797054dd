// A thread's scheduler counters as functions of aligned time.
#include <collscope/run/thread_counters.hpp>

#include <algorithm>

namespace collscope::run {

ThreadCounters::ThreadCounters(const RankTrace& trace, std::int64_t thread, std::int64_t offset_ns) {
  bool counted = true;
  for (const auto& s : trace.cpu_samples)
    if (s.thread == thread) {
      t_.push_back(s.t_ns + offset_ns), cpu_.push_back(double(s.cpu_ns)), runq_.push_back(double(s.runq_ns));
      if (s.instructions) instructions_.push_back(double(*s.instructions));
      else counted = false;
    }
  if (!counted) instructions_.clear();
}

std::optional<std::pair<double, double>> ThreadCounters::over(std::int64_t a, std::int64_t b) const {
  if (t_.size() < 2 || a < t_.front() || b > t_.back() || b < a) return std::nullopt;
  return std::make_pair(value_at(cpu_, b) - value_at(cpu_, a), value_at(runq_, b) - value_at(runq_, a));
}

std::optional<double> ThreadCounters::instructions_over(std::int64_t a, std::int64_t b) const {
  if (instructions_.empty() || t_.size() < 2 || a < t_.front() || b > t_.back() || b < a) return std::nullopt;
  return value_at(instructions_, b) - value_at(instructions_, a);
}

double ThreadCounters::value_at(const std::vector<double>& v, std::int64_t t) const {
  const std::size_t i = static_cast<std::size_t>(std::upper_bound(t_.begin(), t_.end(), t) - t_.begin());
  if (i == 0) return v.front();
  if (i == t_.size()) return v.back();
  const double f = double(t - t_[i - 1]) / double(std::max<std::int64_t>(1, t_[i] - t_[i - 1]));
  return v[i - 1] + f * (v[i] - v[i - 1]);
}

std::int64_t busiest_thread(const std::map<std::int64_t, int>& rows_per_thread) {
  std::int64_t best = -1;
  int most = 0;
  for (const auto& [thread, n] : rows_per_thread)
    if (n > most) best = thread, most = n;
  return best;
}

std::int64_t step_thread(const RankTrace& rank, const StepNames& step_names) {
  std::map<std::int64_t, int> steps;
  for (const auto& x : rank.nvtx_ranges)
    if (step_names.contains(x.name)) ++steps[x.thread];
  return busiest_thread(steps);
}

std::int64_t sync_thread(const RankTrace& rank) {
  std::map<std::int64_t, int> calls;
  for (const auto& c : rank.collectives)
    if (store::is_synchronising(c.op)) ++calls[c.thread];
  return busiest_thread(calls);
}

}  // namespace collscope::run
