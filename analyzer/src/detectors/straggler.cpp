// Straggler: one rank the others wait for, step after step. Lateness and wait are run/lateness.hpp's: from the
// NVTX phases of the steps when the job marks them, else from the synchronising collectives.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::analyzer {

using detail::run_wall_ns;

std::vector<Finding> detect_stragglers(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const StepSummary& steps = in.steps;
  const Lateness& lateness = in.lateness;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const std::size_t n = run.ranks.size();
  if (n < 2 || !lateness.measurable()) return out;
  // The rank latest in the median step, and how late the next one is.
  std::size_t top = 0;
  for (std::size_t r = 1; r < n; ++r)
    if (lateness.median_lateness_ns[r] > lateness.median_lateness_ns[top]) top = r;
  double next = 0;
  for (std::size_t r = 0; r < n; ++r)
    if (r != top) next = std::max(next, lateness.median_lateness_ns[r]);
  const double late = lateness.median_lateness_ns[top];  // per step, median: one long stall is not a straggler
  const bool per_step = !steps.steps.empty();
  const double step_ns = per_step ? steps.median_step_ns : run_wall_ns(m);
  // Late by a real share of the step, and far more than any other rank. The share is of the step, with an
  // absolute floor: a 30 ms straggler in a 400 ms step (7.5 %) is one.
  if (step_ns <= 0 || late <= 0 || late < limits.straggler_dominance * next) return out;
  if (late < limits.straggler_min_share * step_ns || late < limits.straggler_min_delay_ns) return out;
  const int world_rank = run.ranks[top].world_rank;
  std::vector<double> others_wait;
  for (std::size_t r = 0; r < n; ++r)
    if (r != top) others_wait.push_back(lateness.median_wait_ns[r]);
  const double others_waited = median_of(others_wait);
  std::int64_t late_arrivals = 0, sync = 0;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !store::is_synchronising(i.op)) continue;
    ++sync;
    if (i.last_arriver == world_rank && i.last_arrival_ns - i.second_last_arrival_ns > limits.late_arrival_ns) ++late_arrivals;
  }
  const bool phases = lateness.source == run::LatenessSource::Phases;
  // Where it falls behind (phases): the segments where its lag grows, largest first.
  std::vector<std::pair<double, std::string>> gains;
  for (const auto& seg : lateness.segments)
    if (seg.lag_gain_ns[top] > 0.05 * late) gains.emplace_back(seg.lag_gain_ns[top], seg.label);
  std::sort(gains.begin(), gains.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string where;
  for (const auto& [gain, label] : gains) where += fmt::format("{}{} {}", where.empty() ? "" : ", ", format_ms(gain), label);
  const bool multi_host = [&] {
    for (const auto& r : run.ranks)
      if (r.host != run.ranks[0].host) return true;
    return false;
  }();
  Finding f;
  f.kind = FindingKind::Straggler;
  f.severity = late >= limits.straggler_critical_share * step_ns ? Severity::Critical : Severity::Warning;
  f.ranks = {world_rank};
  f.title = fmt::format("rank {} is a straggler: it reaches each step's synchronisation {} after the others{}", world_rank,
                        format_ms(late), gains.empty() ? "" : fmt::format(" ({} {})", format_ms(gains[0].first), gains[0].second));
  f.cost_ns = lateness.total_lateness_ns[top];
  f.evidence = {{"lateness_per_step_ns", late},
                {"delay_per_step_ns", late},
                {"lateness_total_ns", lateness.total_lateness_ns[top]},
                {"next_rank_lateness_per_step_ns", next},
                {"others_wait_per_step_ns", others_waited},
                {"late_arrivals", double(late_arrivals)},
                {"synchronising_collectives", double(sync)},
                {"step_time_ns", step_ns},
                {"step_time_without_straggler_ns", std::max(0.0, step_ns - late)},
                {"share_of_step_pct", 100 * late / step_ns},
                {"from_step_phases", phases ? 1.0 : 0.0}};
  if (!gains.empty()) f.evidence["largest_lag_gain_ns"] = gains[0].first;
  f.evidence_text = fmt::format(
      "lateness {}: rank {}{} is {} late in the median {} ({:.0f} % of the {} step), {} in all; the next latest rank "
      "{} per step; the others wait {} per step for it{}.{} Without it a step would take about {}.",
      phases ? "from the NVTX phases of the steps" : "at the synchronising collectives", world_rank,
      multi_host ? " on " + run.ranks[top].host : "", format_ms(late), per_step ? "step" : "run", 100 * late / step_ns,
      format_ms(step_ns), format_ms(lateness.total_lateness_ns[top]), format_ms(next), format_ms(others_waited),
      phases ? "" : fmt::format(" (it arrived last, by more than {}, at {} of {} synchronising collectives)",
                                format_duration(limits.late_arrival_ns), late_arrivals, sync),
      where.empty() ? "" : fmt::format(" Where it falls behind in the step: {}.", where),
      format_ms(std::max(0.0, step_ns - late)));
  f.suggestion = fmt::format(
      "Find what makes rank {} slow{} (input pipeline, CPU binding, a slower GPU or host, noisy neighbours); "
      "balancing it saves about {} per step.",
      world_rank, gains.empty() ? " before it communicates" : " " + gains[0].second, format_ms(late));
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
