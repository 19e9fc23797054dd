// Point-to-point wait states: ranks waiting in sends and receives for one rank, step after step (late sender,
// late receiver, as Scalasca names them; the definitions are run/wait_states.hpp's). Who waits for whom, how
// long per step, and whose imbalance it is: a wait passed on by a rank that was itself waiting counts for the
// rank at the root of the chain.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace collscope::analyzer {
namespace {

// Index of the step whose window holds aligned time t, or -1.
int step_of(const StepSummary& steps, std::int64_t t) {
  auto it = std::upper_bound(steps.steps.begin(), steps.steps.end(), t,
                             [](std::int64_t v, const Step& s) { return v < s.start_ns; });
  if (it == steps.steps.begin()) return -1;
  --it;
  return t <= it->end_ns ? static_cast<int>(it - steps.steps.begin()) : -1;
}

// Aligned first entry to last exit over every MPI call of the run (ns).
double run_span_ns(const Run& run, const ClockAlignment& clocks) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    auto see = [&](std::int64_t a, std::int64_t b) {
      lo = std::min(lo, clocks.aligned(static_cast<int>(r), a)), hi = std::max(hi, clocks.aligned(static_cast<int>(r), b));
    };
    for (const auto& c : run.ranks[r].collectives) see(c.start_ns, c.end_ns);
    for (const auto& c : run.ranks[r].point_to_point) see(c.start_ns, c.end_ns);
  }
  return hi > lo ? double(hi - lo) : 0.0;
}

std::string rank_list(const std::set<int>& ranks) {
  std::vector<std::string> names;
  for (int r : ranks) names.push_back(std::to_string(r));
  if (names.size() == 1) return "rank " + names[0];
  std::string out = "ranks ";
  for (std::size_t k = 0; k < names.size(); ++k)
    out += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
  return out;
}

}  // namespace

std::vector<Finding> detect_point_to_point_waits(const DetectorInput& in) {
  const Run& run = in.run;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  if (run.ranks.size() < 2 || run.point_to_point_count() == 0) return out;
  const run::PointToPointWaits waits = run::measure_point_to_point_waits(run, in.clocks);
  if (waits.waits.empty()) return out;
  // Per step (the measured ones) when the run has steps, else over the whole run.
  const bool per_step = steps.measured_steps() > 0 && steps.median_step_ns > 0;
  const int first = steps.warmup_steps, measured = per_step ? steps.measured_steps() : 1;
  const double step_ns = per_step ? steps.median_step_ns : run_span_ns(run, in.clocks);
  if (step_ns <= 0) return out;
  const double floor_ns = std::max(limits.p2p_wait_min_share * step_ns, limits.p2p_wait_min_ns);
  // (state, waited for, waiting rank) → wait per measured step; propagated waits per waiting rank apart.
  using Key = std::tuple<run::WaitState, int, int>;
  std::map<Key, std::vector<double>> direct;
  std::map<int, std::vector<double>> propagated;
  std::map<int, std::set<int>> propagated_from;
  for (const auto& w : waits.waits) {
    int k = 0;
    if (per_step) {
      k = step_of(steps, w.end_ns) - first;
      if (k < 0 || k >= measured) continue;
    }
    auto& v = w.propagated ? propagated[w.waiting_rank] : direct[{w.state, w.waited_for, w.waiting_rank}];
    v.resize(static_cast<std::size_t>(measured), 0);
    v[static_cast<std::size_t>(k)] += double(w.wait_ns);
    if (w.propagated) propagated_from[w.waiting_rank].insert(w.waited_for);
  }
  // The median step's wait (one long stall is not a pattern), or the whole run's.
  auto figure = [](std::vector<double> v) { return median_of(v); };
  // Candidates: (state, waited for) with the ranks waiting for it by at least the floor.
  struct Candidate {
    std::map<int, double> waiting;  // waiting rank → wait per step
    double strongest = 0;           // the longest any rank waits for it per step
    double total_ns = 0;            // over the measured steps, all its waiting ranks
  };
  std::map<std::pair<run::WaitState, int>, Candidate> candidates;
  for (const auto& [key, v] : direct) {
    const auto& [state, waited_for, waiting] = key;
    auto& c = candidates[{state, waited_for}];
    const double f = figure(v);
    c.strongest = std::max(c.strongest, f);
    for (double x : v) c.total_ns += x;
    if (f >= floor_ns) c.waiting[waiting] = f;
  }
  for (const auto& [key, c] : candidates) {
    const auto& [state, root] = key;
    if (c.waiting.empty()) continue;
    double next = 0;  // the longest wait per step for any other rank
    for (const auto& [other, o] : candidates)
      if (other.second != root) next = std::max(next, o.strongest);
    if (c.strongest < limits.p2p_wait_dominance * next) continue;
    std::set<int> waiting_ranks;
    double sum = 0, longest = 0;
    for (const auto& [r, f] : c.waiting) waiting_ranks.insert(r), sum += f, longest = std::max(longest, f);
    const double mean = sum / double(c.waiting.size());
    const bool sender = state == run::WaitState::LateSender;
    const std::string who = rank_list(waiting_ranks);
    const std::string unit = per_step ? "per step" : "in the run";
    Finding f;
    f.kind = FindingKind::PointToPointWait;
    f.severity = mean >= limits.p2p_wait_critical_share * step_ns ? Severity::Critical : Severity::Warning;
    f.ranks = {root};
    f.title = fmt::format("{} wait{} for rank {} ({}) {} {}, {:.0f} % of {}", who, waiting_ranks.size() == 1 ? "s" : "",
                          root, run::wait_state_name(state), format_ms(mean), unit, 100 * mean / step_ns,
                          per_step ? "step time" : "the run");
    f.cost_ns = longest * double(measured);
    f.evidence = {{"wait_per_step_ns", mean},
                  {"longest_wait_per_step_ns", longest},
                  {"wait_total_ns", c.total_ns},
                  {"next_wait_per_step_ns", next},
                  {"step_time_ns", step_ns},
                  {"share_of_step_pct", 100 * mean / step_ns},
                  {"waiting_ranks", double(waiting_ranks.size())},
                  {"matched_messages", double(waits.messages)},
                  {"per_step", per_step ? 1.0 : 0.0}};
    for (const auto& [r, w] : c.waiting) f.evidence[fmt::format("rank_{}_wait_per_step_ns", r)] = w;
    std::string detail;
    for (const auto& [r, w] : c.waiting) detail += fmt::format("{}rank {} {}", detail.empty() ? "" : ", ", r, format_ms(w));
    std::string passed_on;
    for (const auto& [r, v] : propagated) {
      const double p = figure(v);
      if (p < floor_ns) continue;
      std::set<int> from = propagated_from[r];
      passed_on += fmt::format(" {} waits {} {} more for {}, which were waiting themselves (passed on, not their own "
                               "delay).", rank_list({r}), format_ms(p), unit, rank_list(from));
    }
    f.evidence_text = fmt::format(
        "{} of {} matched point-to-point messages, {} {}: {} (the median {}); the next longest wait for any other rank "
        "{}. {}{}",
        sender ? "receives posted before the matching send" : "sends blocked until the matching receive was posted",
        waits.messages, per_step ? "waiting per step" : "waiting in all", sender ? "for its sends" : "for its receives",
        detail, per_step ? fmt::format("step of {} measured", measured) : std::string("run"), format_ms(next),
        sender ? fmt::format("Rank {} posts its sends late: it reaches them after its peers do.", root)
               : fmt::format("Rank {} posts its receives late.", root),
        passed_on);
    f.suggestion =
        sender ? fmt::format("Rank {} computes longer than its neighbours between exchanges: load imbalance in its "
                             "work, not an MPI setting. Balance the decomposition (give rank {} fewer cells, particles "
                             "or rows) or find what slows it (its host, CPU binding, its data); balanced, its "
                             "neighbours would save about {} {}.",
                             root, root, format_ms(mean), unit)
               : fmt::format("Rank {} posts its receives after its peers start sending (synchronous sends, or "
                             "messages large enough for a rendezvous, wait for them): post receives early "
                             "(MPI_Irecv before the computation), or balance the work before them.",
                             root);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace collscope::analyzer
