// Straggler: one rank the others wait for, step after step (in collectives, or in the start of the step's phases).
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

namespace {

using detail::run_wall_ns;

// Per rank index: how much later than the other ranks it starts the phases of a step (NVTX ranges inside the
// "step" ranges, matched by name and step index), ns per step. Catches a straggler whose lateness is absorbed
// outside collectives: a Horovod-style background thread negotiates readiness, so every collective starts on
// all ranks together and only the phases before it show who was late.
std::vector<double> phase_lag_per_step(const Run& run, std::size_t steps) {
  const std::size_t n = run.ranks.size();
  std::vector<double> lag(n, 0);
  const StepNames step_names(run);
  if (step_names.empty() || steps == 0 || n < 2) return lag;
  // offsets[name][rank][step] = start of the first range of that name in the step − step start (ns), −1 if none
  std::map<int, std::vector<std::vector<double>>> offsets;
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<NvtxRange> windows;
    for (const auto& x : run.ranks[r].nvtx_ranges)
      if (step_names.contains(x.name) && x.end_ns > x.start_ns) windows.push_back(x);
    std::sort(windows.begin(), windows.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    if (windows.size() < steps) return std::vector<double>(n, 0);
    for (const auto& x : run.ranks[r].nvtx_ranges) {
      if (step_names.contains(x.name)) continue;
      auto it = std::upper_bound(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(steps), x.start_ns,
                                 [](std::int64_t v, const NvtxRange& w) { return v < w.start_ns; });
      if (it == windows.begin()) continue;
      --it;
      if (x.start_ns >= it->end_ns) continue;
      const std::size_t k = static_cast<std::size_t>(it - windows.begin());
      auto& per_rank = offsets[x.name];
      if (per_rank.empty()) per_rank.assign(n, std::vector<double>(steps, -1));
      auto& slot = per_rank[r][k];
      const double off = double(x.start_ns - it->start_ns);
      if (slot < 0 || off < slot) slot = off;
    }
  }
  for (const auto& [name, per_rank] : offsets) {
    for (std::size_t r = 0; r < n; ++r) {
      std::vector<double> lags;
      for (std::size_t k = 0; k < steps; ++k) {
        if (per_rank[r][k] < 0) continue;
        std::vector<double> others;
        for (std::size_t o = 0; o < n; ++o)
          if (o != r && per_rank[o][k] >= 0) others.push_back(per_rank[o][k]);
        if (others.empty()) continue;
        lags.push_back(per_rank[r][k] - median_of(others));
      }
      // A phase every rank has in (nearly) every step; a rank-specific range says nothing by its start.
      // Median over steps: one slow step (a page fault, a descheduled thread) is not a straggler.
      if (!lags.empty() && lags.size() >= steps * 9 / 10) lag[r] = std::max(lag[r], median_of(lags));
    }
  }
  return lag;
}

// Per rank index: the median over steps of what the rank held the others up in that step's synchronising
// collectives (ns). A straggler is late step after step; one long stall (a descheduled process on a busy host)
// can outweigh that in the run's total but not in the median. Empty when the run has no steps.
std::vector<double> median_blame_per_step(const Run& run, const MatchedRun& m, const StepSummary& steps) {
  const std::size_t n = run.ranks.size(), nsteps = steps.steps.size();
  if (nsteps == 0) return {};
  std::vector<std::vector<double>> per_step(n, std::vector<double>(nsteps, 0));
  std::map<int, std::size_t> index_of;  // world rank → rank index
  for (std::size_t r = 0; r < n; ++r) index_of[run.ranks[r].world_rank] = r;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !store::is_synchronising(i.op)) continue;
    auto it = std::upper_bound(steps.steps.begin(), steps.steps.end(), i.last_arrival_ns,
                               [](std::int64_t t, const Step& s) { return t < s.start_ns; });
    if (it == steps.steps.begin()) continue;
    --it;
    if (i.last_arrival_ns >= it->end_ns) continue;
    const auto r = index_of.find(i.last_arriver);
    if (r == index_of.end()) continue;
    per_step[r->second][static_cast<std::size_t>(it - steps.steps.begin())] +=
        double(i.last_arrival_ns - i.second_last_arrival_ns);
  }
  std::vector<double> out(n);
  for (std::size_t r = 0; r < n; ++r) out[r] = median_of(per_step[r]);
  return out;
}

}  // namespace

std::vector<Finding> detect_stragglers(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const std::size_t n = run.ranks.size();
  if (n < 2) return out;
  const double nsteps = steps.steps.empty() ? 1.0 : double(steps.steps.size());
  // Two signals of lateness per rank (ns over the run): what it held up in collectives, and how late it starts
  // the step's phases. Each must single out one rank (3x any other) on its own; the larger one that does wins.
  const auto lag = phase_lag_per_step(run, steps.steps.size());
  auto dominant = [n, &limits](const std::vector<double>& v, std::size_t& top, double& others) {
    top = 0;
    for (std::size_t r = 1; r < n; ++r)
      if (v[r] > v[top]) top = r;
    others = 0;
    for (std::size_t r = 0; r < n; ++r)
      if (r != top) others = std::max(others, v[r]);
    return v[top] > 0 && v[top] >= limits.straggler_dominance * others;
  };
  std::vector<double> phase_total(n);
  for (std::size_t r = 0; r < n; ++r) phase_total[r] = std::max(0.0, lag[r]) * nsteps;
  std::size_t top_c = 0, top_p = 0;
  double others_c = 0, others_p = 0;
  const bool by_collectives = dominant(m.blame_ns_by_rank, top_c, others_c);
  const bool by_phases = dominant(phase_total, top_p, others_p);
  if (!by_collectives && !by_phases) return out;
  const bool from_phases = by_phases && (!by_collectives || phase_total[top_p] > m.blame_ns_by_rank[top_c]);
  const std::size_t top = from_phases ? top_p : top_c;
  const double others = from_phases ? others_p : others_c;
  const double blame = from_phases ? phase_total[top_p] : m.blame_ns_by_rank[top_c];
  const double step_ns = steps.steps.empty() ? run_wall_ns(m) : steps.mean_step_ns;
  const double per_step = blame / nsteps;
  const int world_rank = run.ranks[top].world_rank;
  std::int64_t late = 0, sync = 0;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !store::is_synchronising(i.op)) continue;
    ++sync;
    if (i.last_arriver == world_rank && i.last_arrival_ns - i.second_last_arrival_ns > limits.late_arrival_ns) ++late;
  }
  // A straggler holds the others up by a real share of the step, repeatedly, and far more than any other rank.
  // Phase starts carry the compute noise of every rank (a shared, busy host shifts them by several ms), so they
  // need a larger share of the step than the waiting measured inside collectives.
  const double min_share = from_phases ? limits.straggler_min_share_phases : limits.straggler_min_share_waiting;
  if (step_ns <= 0 || per_step < min_share * step_ns || per_step < limits.straggler_min_delay_ns) return out;
  if (!from_phases) {
    // The phase lag is already a median over steps; the collectives' blame must be repeated too.
    const auto typical = median_blame_per_step(run, m, steps);
    if (!typical.empty() && typical[top] < std::max(min_share * step_ns, 200e3)) return out;
  }
  Finding f;
  f.kind = FindingKind::Straggler;
  f.severity = per_step >= limits.straggler_critical_share * step_ns ? Severity::Critical : Severity::Warning;
  f.ranks = {world_rank};
  f.title = fmt::format("rank {} is a straggler: the others wait {} per step for it", world_rank, format_ms(per_step));
  f.cost_ns = blame;
  f.evidence = {{"delay_per_step_ns", per_step},
                {"delay_total_ns", blame},
                {"next_rank_delay_total_ns", others},
                {"late_arrivals", double(late)},
                {"synchronising_collectives", double(sync)},
                {"step_time_ns", step_ns},
                {"step_time_without_straggler_ns", std::max(0.0, step_ns - per_step)},
                {"share_of_step_pct", 100 * per_step / step_ns}};
  f.evidence["from_step_phases"] = from_phases ? 1 : 0;
  f.evidence_text = fmt::format(
      "rank {}{} arrived last (by > 20 us) at {} of {} synchronising collectives{}; it alone held the others up {} "
      "in total, {} per step ({:.0f} % of the {} step); the next worst rank {}. Without it a step would take about {}.",
      world_rank, run.ranks[top].host.empty() ? "" : " on " + run.ranks[top].host, late, sync,
      from_phases ? " and starts the phases of each step (NVTX ranges) later than the others" : "", format_ms(blame), format_ms(per_step),
      100 * per_step / step_ns, format_ms(step_ns), format_ms(others), format_ms(std::max(0.0, step_ns - per_step)));
  f.suggestion = fmt::format(
      "Find what makes rank {} slow before it communicates (input pipeline, CPU binding, a slower GPU or host, noisy "
      "neighbours); balancing it saves about {} per step.",
      world_rank, format_ms(per_step));
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
