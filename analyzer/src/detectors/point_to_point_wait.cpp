// Point-to-point wait states: ranks waiting in sends and receives for one rank, step after step (late sender,
// late receiver, as Scalasca names them; the definitions are run/wait_states.hpp's). Who waits for whom, how
// long per step, and whose imbalance it is: a wait passed on by a rank that was itself waiting counts for the
// rank at the root of the chain.
#include "detector_support.hpp"

#include <collscope/run/thread_counters.hpp>
#include <collscope/run/wait_states.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace collscope::analyzer {

using detail::binomial_tail;
using detail::format_chance;

namespace {

// Index of the step whose window holds aligned time t, or -1.
int step_of(const StepSummary& steps, std::int64_t t) {
  auto it = std::upper_bound(steps.steps.begin(), steps.steps.end(), t,
                             [](std::int64_t v, const Step& s) { return v < s.start_ns; });
  if (it == steps.steps.begin()) return -1;
  --it;
  return t <= it->end_ns ? static_cast<int>(it - steps.steps.begin()) : -1;
}

// How much more CPU time, and time waiting for a CPU, the rank waited for had than the median other rank in its own
// time (outside MPI: a rank waiting in MPI_Waitall busy-polls on its CPU as long as the late one computes), from
// the scheduler counters (schema 1.4) of the thread that makes each rank's MPI calls, over the time all of them
// cover (the latest first sample to the earliest last one); ns. nullopt without counters on every rank. A rank
// late because its CPU was taken (another process on its core, more threads than cores) needs another placement,
// not a smaller share of the work.
struct CpuExcess {
  double on_cpu_ns = 0, run_queue_ns = 0;
};
std::optional<CpuExcess> cpu_excess(const Run& run, const ClockAlignment& clocks, std::size_t root) {
  if (root >= run.ranks.size() || run.ranks.size() < 2) return std::nullopt;
  std::int64_t lo = INT64_MIN, hi = INT64_MAX;  // aligned: the latest first sample to the earliest last one
  std::vector<std::int64_t> threads;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& rank = run.ranks[r];
    std::int64_t thread = run::sync_thread(rank);
    if (thread < 0) {
      std::map<std::int64_t, int> calls;
      for (const auto& c : rank.point_to_point) ++calls[c.thread];
      thread = run::busiest_thread(calls);
    }
    if (thread < 0) return std::nullopt;
    std::int64_t first = INT64_MAX, last = INT64_MIN, samples = 0;
    for (const auto& sample : rank.cpu_samples)
      if (sample.thread == thread) first = std::min(first, sample.t_ns), last = std::max(last, sample.t_ns), ++samples;
    // Read linearly between samples, which come at its MPI calls (one per COLLSCOPE_CPU_SAMPLE_US at most): they
    // must be about as dense as its calls allow, or the gaps between exchanges smear into one line (a trace from
    // before completion calls were sampled holds only its blocking calls': 9 samples in meep's 4 s of halo
    // exchanges, 57 000 calls).
    std::int64_t calls = 0, call_first = INT64_MAX, call_last = INT64_MIN;
    const auto see = [&](std::int64_t thread_of, std::int64_t start) {
      if (thread_of == thread) ++calls, call_first = std::min(call_first, start), call_last = std::max(call_last, start);
    };
    for (const auto& c : rank.collectives) see(c.thread, c.start_ns);
    for (const auto& c : rank.point_to_point) see(c.thread, c.start_ns);
    if (first >= last || samples < 10 || calls < 2) return std::nullopt;
    const double mean_call_gap_ns = std::max(1e6, double(call_last - call_first) / double(calls));
    if (double(last - first) / double(samples) > 10 * mean_call_gap_ns) return std::nullopt;
    lo = std::max(lo, clocks.aligned(static_cast<int>(r), first));
    hi = std::min(hi, clocks.aligned(static_cast<int>(r), last));
    threads.push_back(thread);
  }
  if (hi <= lo) return std::nullopt;
  // Each rank's time outside MPI within [lo, hi]: the gaps between its calls' spans (run/wait_states.hpp), merged.
  run::OwnWindows outside(run.ranks.size(), std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>(1));
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    std::int64_t from = lo;
    for (const auto& piece : run::mpi_pieces(run.ranks[r])) {
      const std::int64_t s = clocks.aligned(static_cast<int>(r), piece.span.start_ns);
      const std::int64_t e = clocks.aligned(static_cast<int>(r), piece.span.end_ns);
      if (e <= s) continue;
      if (s > from) outside[r][0].emplace_back(from, std::min(s, hi));
      from = std::max(from, e);
      if (from >= hi) break;
    }
    if (from < hi) outside[r][0].emplace_back(from, hi);
  }
  const auto causes = run::causes_over_windows(run, clocks, threads, outside, 0);
  return CpuExcess{causes[root].on_cpu_ns, causes[root].run_queue_ns};
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
  const double step_ns = per_step ? steps.median_step_ns : in.matched.wall_ns;
  if (step_ns <= 0) return out;
  const double floor_ns = std::max(limits.p2p_wait_min_share * step_ns, limits.p2p_wait_min_ns);
  // (waited for, waiting rank) → wait per measured step, both states together (a rank computing longer posts
  // its sends and its receives late alike); the share of each state; propagated waits per waiting rank apart.
  std::map<std::pair<int, int>, std::vector<double>> direct;
  std::map<std::pair<int, int>, std::array<double, 2>> by_state;  // total ns: late sender, late receiver
  std::map<int, std::vector<double>> propagated;
  std::map<int, std::set<int>> propagated_from;
  for (const auto& w : waits.waits) {
    int k = 0;
    if (per_step) {
      k = step_of(steps, w.end_ns) - first;
      if (k < 0 || k >= measured) continue;
    }
    auto& v = w.propagated ? propagated[w.waiting_rank] : direct[{w.waited_for, w.waiting_rank}];
    v.resize(static_cast<std::size_t>(measured), 0);
    v[static_cast<std::size_t>(k)] += double(w.wait_ns);
    if (w.propagated) propagated_from[w.waiting_rank].insert(w.waited_for);
    else by_state[{w.waited_for, w.waiting_rank}][w.state == run::WaitState::LateSender ? 0 : 1] += double(w.wait_ns);
  }
  // Candidates: each rank waited for, with the ranks waiting for it by at least the floor in the median step (one
  // long stall is not a pattern), or over the whole run.
  struct Candidate {
    std::map<int, double> waiting;  // waiting rank → wait per step
    double strongest = 0;           // the longest any rank waits for it per step
    double total_ns = 0;            // over the measured steps, all its waiting ranks
    std::array<double, 2> states{};  // of total_ns: late sender, late receiver
  };
  std::map<int, Candidate> candidates;
  for (const auto& [key, v] : direct) {
    const auto& [waited_for, waiting] = key;
    auto& c = candidates[waited_for];
    const double f = median_of(v);
    c.strongest = std::max(c.strongest, f);
    for (double x : v) c.total_ns += x;
    for (int st = 0; st < 2; ++st) c.states[st] += by_state[key][st];
    if (f >= floor_ns) c.waiting[waiting] = f;
  }
  // Per measured step, the longest wait any rank had for each rank: who was most waited for in each step.
  std::map<int, std::vector<double>> strongest_per_step;
  for (const auto& [key, v] : direct) {
    auto& s = strongest_per_step[key.first];
    s.resize(v.size(), 0);
    for (std::size_t k = 0; k < v.size(); ++k) s[k] = std::max(s[k], v[k]);
  }
  const std::string unit = per_step ? "per step" : "in the run";
  // Waits passed on by ranks that were themselves waiting: said once, in the costliest finding.
  std::string passed_on;
  for (const auto& [r, v] : propagated) {
    const double p = median_of(v);
    if (p >= floor_ns)
      passed_on += fmt::format(" Rank {} also waits {} {} for {}, which were themselves waiting (passed on, not "
                               "their own delay).", r, format_ms(p), unit, rank_list(propagated_from[r]));
  }
  for (const auto& [root, c] : candidates) {
    if (c.waiting.empty()) continue;
    // The typical wait for the other ranks (the median of the longest wait for each): several ranks can each hold
    // their neighbours up (two overloaded subdomains), but each must stand out from what waiting is usual here.
    std::vector<double> others;
    for (const auto& [other, o] : candidates)
      if (other != root) others.push_back(o.strongest);
    const double typical = median_of(others);
    if (c.strongest < limits.p2p_wait_dominance * typical) continue;
    // Consistent across steps, as a straggler must be: the rank most waited for in so many measured steps that
    // ranks waited for by chance (each equally likely in a step) would be in at most the false-positive share of
    // runs, and its wait above its own step-to-step noise. A plain run on CPUs of unequal speed or load moves the
    // waits from step to step; an imbalance holds them.
    const auto& mine = strongest_per_step[root];
    int most_waited = 0;
    for (std::size_t k = 0; k < mine.size(); ++k) {
      bool most = mine[k] > 0;
      for (const auto& [other, theirs] : strongest_per_step)
        if (other != root && k < theirs.size() && theirs[k] >= mine[k]) most = false;
      most_waited += most;
    }
    const bool tested = per_step && measured >= limits.straggler_min_steps_for_test;
    const double chance = tested ? binomial_tail(most_waited, measured, 1.0 / double(run.ranks.size())) : 1.0;
    std::vector<double> deviations(mine.begin(), mine.end());
    const double median_wait = median_of(deviations);
    for (double& d : deviations) d = std::abs(d - median_wait);
    const double noise_ns = 1.4826 * median_of(deviations);
    if (tested && (chance > limits.straggler_false_positive_rate || median_wait <= noise_ns)) continue;
    std::set<int> waiting_ranks;
    double sum = 0, longest = 0;
    for (const auto& [r, f] : c.waiting) waiting_ranks.insert(r), sum += f, longest = std::max(longest, f);
    const double mean = sum / double(c.waiting.size());
    const double sender_share = c.states[0] + c.states[1] > 0 ? c.states[0] / (c.states[0] + c.states[1]) : 1;
    const bool sender = sender_share >= 0.5;
    const std::string states =
        sender_share >= 0.9   ? "late sender"
        : sender_share <= 0.1 ? "late receiver"
                              : fmt::format("late sender {:.0f} %, late receiver {:.0f} %", 100 * sender_share,
                                            100 * (1 - sender_share));
    Finding f;
    f.kind = FindingKind::PointToPointWait;
    f.severity = mean >= limits.p2p_wait_critical_share * step_ns ? Severity::Critical : Severity::Warning;
    f.ranks = {root};
    f.title = fmt::format("{} wait{} for rank {} ({}) {} {}, {:.0f} % of {}", rank_list(waiting_ranks),
                          waiting_ranks.size() == 1 ? "s" : "", root, states, format_ms(mean), unit,
                          100 * mean / step_ns, per_step ? "step time" : "the run");
    f.cost_ns = longest * double(measured);
    f.evidence = {{"wait_per_step_ns", mean},
                  {"longest_wait_per_step_ns", longest},
                  {"wait_total_ns", c.total_ns},
                  {"late_sender_share_pct", 100 * sender_share},
                  {"typical_other_wait_per_step_ns", typical},
                  {"step_time_ns", step_ns},
                  {"share_of_step_pct", 100 * mean / step_ns},
                  {"waiting_ranks", double(waiting_ranks.size())},
                  {"matched_messages", double(waits.messages)},
                  {"per_step", per_step ? 1.0 : 0.0}};
    if (tested) {
      f.evidence["steps_most_waited_for"] = double(most_waited);
      f.evidence["sign_test_p"] = chance;
      f.evidence["wait_noise_per_step_ns"] = noise_ns;
    }
    for (const auto& [r, w] : c.waiting) f.evidence[fmt::format("rank_{}_wait_per_step_ns", r)] = w;
    std::string detail;
    for (const auto& [r, w] : c.waiting) detail += fmt::format("{}rank {} {}", detail.empty() ? "" : ", ", r, format_ms(w));
    f.evidence_text = fmt::format(
        "of {} matched point-to-point messages, waiting {} for rank {}{}: {}; the median wait for any other rank "
        "{}. Late sender: a receive posted before rank {}'s send; late receiver: a blocking or synchronous send to "
        "rank {} that could complete only once it posted the receive.{}",
        waits.messages, unit, root, per_step ? fmt::format(" (median of {} measured steps)", measured) : "", detail,
        format_ms(typical), root, root,
        tested ? fmt::format(" Rank {} is the one most waited for in {} of {} measured steps (chance {} if every "
                             "rank were equally likely to be); its wait varies by {} from step to step.",
                             root, most_waited, measured, format_chance(chance), format_ms(noise_ns))
               : "");
    // Its CPU samples, where the trace has them, say what kept it: more CPU time (its work, or a slower CPU),
    // waiting for a CPU (the waiting would go with another placement, not with less work), or neither (off a CPU:
    // I/O, sleeps, locks; "imbalance in its work" would then be a claim the trace cannot support).
    const auto excess = cpu_excess(run, in.clocks, static_cast<std::size_t>(root));
    const double caused_ns = mean * double(measured);  // the wait it caused over the measured time
    enum class Why { NoSamples, MoreCpu, WaitingForCpu, NotExplained } why = Why::NoSamples;
    if (excess) {
      const auto signed_ms = [](double ns) { return (ns >= 0 ? "+" : "") + format_ms(ns); };
      f.evidence["extra_on_cpu_ns"] = excess->on_cpu_ns;
      f.evidence["extra_run_queue_ns"] = excess->run_queue_ns;
      f.evidence_text += fmt::format(" Rank {}'s thread making MPI calls against the median other rank's, outside "
                                     "MPI over the same time: {} on a CPU, {} waiting for one.", root,
                                     signed_ms(excess->on_cpu_ns), signed_ms(excess->run_queue_ns));
      const double on = std::max(0.0, excess->on_cpu_ns), queue = std::max(0.0, excess->run_queue_ns);
      why = on + queue < 0.25 * caused_ns ? Why::NotExplained : queue >= on ? Why::WaitingForCpu : Why::MoreCpu;
    }
    const std::string irecv =
        sender_share < 0.9 ? " Posting its receives before its computation (MPI_Irecv) lets its senders go on." : "";
    switch (why) {
      case Why::WaitingForCpu:
        f.suggestion = fmt::format(
            "Rank {} reaches its {} late because it waits for a CPU: more busy threads than cores, or another "
            "process on its cores. Check the placement (mpirun --bind-to core / --map-by, threads per rank against "
            "cores, other processes on the node); balancing the decomposition would not help. Up to {} {}.",
            root, sender ? "sends" : "receives", format_ms(mean), unit);
        break;
      case Why::NotExplained:
        f.suggestion = fmt::format(
            "Rank {} reaches its {} late, and its CPU samples do not explain it (what it has more than the others "
            "on a CPU and waiting for one is under a quarter of the wait it causes): find what holds it off a CPU "
            "between exchanges (I/O, sleeps, locks, its host); that saves up to {} {}.{}",
            root, sender ? "sends" : "receives", format_ms(mean), unit, irecv);
        break;
      case Why::MoreCpu:
      case Why::NoSamples:
        f.suggestion = fmt::format(
            "Rank {} spends longer than its peers between exchanges, so it reaches its {} late: load imbalance in "
            "its work, not an MPI setting. Balance the decomposition (give rank {} fewer cells, particles or rows) "
            "or find what slows it (its host, CPU binding, its data); balanced, the ranks waiting for it would save "
            "about {} {}.{}",
            root, sender ? "sends" : "receives", root, format_ms(mean), unit, irecv);
        break;
    }
    out.push_back(std::move(f));
  }
  if (!out.empty() && !passed_on.empty()) {
    auto top = std::max_element(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.cost_ns < b.cost_ns; });
    top->evidence_text += passed_on;
  }
  return out;
}

}  // namespace collscope::analyzer
