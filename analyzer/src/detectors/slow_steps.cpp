// Slow steps: a few steps that take many times the median step, and a real share of the job's step time: a
// checkpoint, an evaluation, a data reload at an epoch's start, held by one rank while the others wait, or every
// rank pausing together. The straggler detector reads each rank's median step, which such steps do not move; this
// one reads the steps themselves. A step's time here is its span: the earliest rank's start to the latest rank's
// end (aligned), what the job's wall clock spends on it.
#include "detector_support.hpp"

#include <collscope/run/thread_counters.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>

namespace collscope::analyzer {

namespace {

struct SlowStep {
  std::size_t step = 0;       // index into StepSummary::steps
  double excess_ns = 0;       // its span less the median step span
  int late_rank = -1;         // rank index latest in it (its peak lateness), when that explains half the excess
  double late_ns = 0;
};

// Steps between the slow steps when they are evenly spaced, else 0. Three at least: any two are evenly spaced.
int period_of(const std::vector<SlowStep>& slow, const StepSummary& steps) {
  if (slow.size() < 3) return 0;
  const int period = steps.steps[slow[1].step].index - steps.steps[slow[0].step].index;
  for (std::size_t i = 1; i < slow.size(); ++i)
    if (steps.steps[slow[i].step].index - steps.steps[slow[i - 1].step].index != period) return 0;
  return std::max(period, 0);
}

std::string step_list(const std::vector<SlowStep>& slow, const StepSummary& steps) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(slow.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) s += fmt::format("{}{}", i ? ", " : "", steps.steps[slow[i].step].index);
  if (slow.size() > shown) s += fmt::format(" and {} more", slow.size() - shown);
  return s;
}

// Where the slow steps' time beyond a usual step went, from the ranks' scheduler counters (the thread lateness reads,
// Lateness::counters_thread): on a CPU (work of the job's own: a checkpoint, an evaluation, garbage collection),
// waiting runnable for one (the machine: other processes, more busy threads than cores) or off one (blocked: I/O,
// sleeps, page faults). Each part is the slow steps' time in it less the median step's, summed over the slow steps;
// over the late rank, or averaged over every rank where none is late. Unmeasured without counters.
struct PauseTimes {
  bool measured = false;
  double on_cpu_ns = 0, run_queue_ns = 0, off_cpu_ns = 0;
  double usual_on_cpu_ns = 0, usual_run_queue_ns = 0;  // in the median other step
  enum Cause { Unknown = 0, OnCpu = 1, WaitingForCpu = 3, OffCpu = 4 };
  // Waiting is the machine's only when it is far more than the extra work would wait at the usual steps' rate: on a
  // busy host a real pause (rank 1's 1 s of compute every 10 steps, load 8) waits too, 2.1 s for its 0.9 s on a CPU,
  // as its usual steps do; a host that takes whole slices from a few steps (LAMMPS beside spinners) makes steps
  // that wait where the usual ones do not.
  Cause cause() const {
    if (!measured) return Unknown;
    const double stretch = usual_run_queue_ns / std::max(usual_on_cpu_ns, 1e3);  // waiting per ns on a CPU
    if (run_queue_ns >= on_cpu_ns && run_queue_ns >= off_cpu_ns)                 // else work, stretched by the machine
      return run_queue_ns > 2 * stretch * on_cpu_ns ? WaitingForCpu : OnCpu;
    return on_cpu_ns >= off_cpu_ns ? OnCpu : OffCpu;
  }
};

PauseTimes pause_times(const DetectorInput& in, const std::vector<SlowStep>& slow, int rank) {
  const Lateness& lateness = in.lateness;
  const StepSummary& steps = in.steps;
  PauseTimes out;
  const std::size_t nranks = in.run.ranks.size();
  if (lateness.counters_thread.size() != nranks) return out;
  std::vector<std::size_t> ranks;
  if (rank >= 0) ranks.push_back(static_cast<std::size_t>(rank));
  else
    for (std::size_t r = 0; r < nranks; ++r) ranks.push_back(r);
  std::vector<bool> is_slow(steps.steps.size(), false);
  for (const auto& s : slow) is_slow[s.step] = true;
  int counted = 0;
  for (std::size_t r : ranks) {
    const run::ThreadCounters counters(in.run.ranks[r], lateness.counters_thread[r], in.clocks.offset_ns[r]);
    // (on a CPU, waiting, off a CPU) in step k's span, ns.
    auto parts = [&](std::size_t k) -> std::optional<std::array<double, 3>> {
      const auto& st = steps.steps[k];
      const auto d = counters.over(st.start_ns, st.end_ns);
      if (!d) return std::nullopt;
      const double span = double(st.end_ns - st.start_ns);
      return std::array<double, 3>{d->first, d->second, std::max(0.0, span - d->first - d->second)};
    };
    std::array<std::vector<double>, 3> usual;
    for (std::size_t k = static_cast<std::size_t>(std::max(0, steps.warmup_steps)); k < steps.steps.size(); ++k)
      if (!is_slow[k])
        if (const auto p = parts(k))
          for (int i = 0; i < 3; ++i) usual[i].push_back((*p)[i]);
    if (usual[0].empty()) return out;
    const std::array<double, 3> median = {median_of(usual[0]), median_of(usual[1]), median_of(usual[2])};
    std::array<double, 3> sum{};
    for (const auto& s : slow) {
      const auto p = parts(s.step);
      if (!p) return out;
      for (int i = 0; i < 3; ++i) sum[i] += std::max(0.0, (*p)[i] - median[i]);
    }
    out.on_cpu_ns += sum[0], out.run_queue_ns += sum[1], out.off_cpu_ns += sum[2];
    out.usual_on_cpu_ns += median[0], out.usual_run_queue_ns += median[1];
    ++counted;
  }
  if (counted == 0) return out;
  out.on_cpu_ns /= counted, out.run_queue_ns /= counted, out.off_cpu_ns /= counted;
  out.usual_on_cpu_ns /= counted, out.usual_run_queue_ns /= counted;
  out.measured = true;
  return out;
}

Finding slow_steps_finding(const DetectorInput& in, const std::vector<SlowStep>& slow, int rank, double median,
                           double total, std::size_t measured, double excess) {
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  const int world_rank = rank >= 0 ? in.run.ranks[static_cast<std::size_t>(rank)].world_rank : -1;
  double slowest = 0, fastest = slow[0].excess_ns + median;
  for (const auto& s : slow) slowest = std::max(slowest, s.excess_ns + median), fastest = std::min(fastest, s.excess_ns + median);
  const int period_steps = period_of(slow, steps);
  const std::string period = period_steps > 0 ? fmt::format("every {} steps", period_steps) : "";
  const std::string which = slow.size() == 1 ? fmt::format("step {}", steps.steps[slow[0].step].index)
                                             : fmt::format("steps {}", step_list(slow, steps));
  const std::string spans_text = slow.size() == 1 ? format_ms(slowest)
                                                  : fmt::format("{}-{}", format_ms(fastest), format_ms(slowest));
  const PauseTimes times = pause_times(in, slow, rank);
  const bool machine = times.cause() == PauseTimes::WaitingForCpu;
  Finding f;
  f.kind = FindingKind::SlowSteps;
  // Neither one rank nor a period: nothing says what to change (a busy host slows every rank at random), so info;
  // nor where the ranks waited for a CPU: the machine's state, which no change to the job fixes (as cpu_contention,
  // listed by compare but not failing it).
  f.severity =
      excess >= limits.slow_steps_warning_time_share * total && (world_rank >= 0 || !period.empty()) && !machine
          ? Severity::Warning
          : Severity::Info;
  if (world_rank >= 0) f.ranks = {world_rank};
  const bool one = slow.size() == 1;
  f.title = fmt::format("{} of {} steps {} {} from the first rank's start to the last rank's end, where the median step "
                        "spans {}{}: {:.0f} % of the steps' time{}",
                        slow.size(), measured, one ? "spans" : "span", spans_text, format_ms(median),
                        period.empty() ? "" : " (" + period + ")", 100 * excess / total,
                        world_rank >= 0 ? fmt::format("; rank {} is late in {}", world_rank, one ? "it" : "each")
                                        : std::string());
  f.cost_ns = excess;
  f.evidence = {{"slow_steps", double(slow.size())},
                {"measured_steps", double(measured)},
                {"median_step_span_ns", median},
                {"slowest_step_span_ns", slowest},
                {"excess_ns", excess},
                {"share_of_step_time_pct", 100 * excess / total},
                {"first_slow_step", double(steps.steps[slow[0].step].index)}};
  if (period_steps > 0) f.evidence["period_steps"] = double(period_steps);
  double late = 0;  // the named rank's lateness over its slow steps
  for (const auto& s : slow) late += s.late_ns;
  if (world_rank >= 0) f.evidence["late_rank_lateness_ns"] = late;
  f.evidence_text = fmt::format(
      "{}{} took {} more than the median step span ({}){}, {:.0f} % of the {} measured steps' time; {}", which,
      one ? "" : " (" + (period.empty() ? std::string("not evenly spaced") : period) + ")", format_ms(excess),
      format_ms(median), one ? "" : " in all", 100 * excess / total, measured,
      world_rank >= 0 ? fmt::format("in {} rank {} reached the step's synchronisation {} after the others{}, while "
                                    "they waited", one ? "it" : "each", world_rank,
                                    format_ms(late), one ? "" : " in all")
                      : std::string("no one rank is late in them: every rank is slow in them together"));
  if (times.measured) {
    f.evidence["cause_code"] = double(times.cause());
    f.evidence["on_cpu_excess_ns"] = times.on_cpu_ns;
    f.evidence["run_queue_excess_ns"] = times.run_queue_ns;
    f.evidence["off_cpu_excess_ns"] = times.off_cpu_ns;
    f.evidence_text +=
        fmt::format(". Where that time went beyond a usual step ({}): {} on a CPU, {} waiting for one, {} off one",
                    world_rank >= 0 ? fmt::format("rank {}'s scheduler counters", world_rank)
                                    : std::string("the ranks' scheduler counters, their mean"),
                    format_ms(times.on_cpu_ns), format_ms(times.run_queue_ns), format_ms(times.off_cpu_ns));
  }
  const std::string when = !period.empty() ? period : one ? "in " + which : "in those steps";
  if (machine) {
    f.suggestion = fmt::format(
        "{} waited runnable for a CPU {}, longer than {} spent on one or blocked: the machine, not the job: other "
        "processes on the node took the CPUs then, or more threads were busy than there are cores. Look at the "
        "node's other processes (top -H) and the binding (mpirun --bind-to core --report-bindings); the job itself "
        "needs no change. Up to {} of job time.",
        world_rank >= 0 ? fmt::format("Rank {}", world_rank) : std::string("Every rank"), when,
        world_rank >= 0 ? "it" : "they", format_ms(excess));
    return f;
  }
  f.suggestion = world_rank >= 0
      ? fmt::format("Rank {} does something the others do not {} (a checkpoint, an evaluation, logging, a data reload "
                    "on one rank), and the others wait for it at the next collective: make it asynchronous, less "
                    "frequent, or shared among the ranks. Up to {} of job time.", world_rank, when, format_ms(excess))
      : !period.empty()
      ? fmt::format("Every rank pauses {} (an epoch's end: data loader workers starting again, an evaluation, a "
                    "checkpoint each rank writes, garbage collection): make that pause cheaper or less frequent. Up to "
                    "{} of job time.", when, format_ms(excess))
      : fmt::format("Every rank is slow {} together, at no regular interval: a pause of the job's own (garbage "
                    "collection, an evaluation, I/O) or of the machine (other processes on the node taking its "
                    "CPUs). Up to {} of job time.", when, format_ms(excess));
  return f;
}

}  // namespace

std::vector<Finding> detect_slow_steps(const DetectorInput& in) {
  const StepSummary& steps = in.steps;
  const Lateness& lateness = in.lateness;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const std::size_t first = static_cast<std::size_t>(std::max(0, steps.warmup_steps));
  if (steps.steps.size() < first + static_cast<std::size_t>(limits.slow_steps_min_steps)) return out;
  std::vector<double> spans;
  for (std::size_t k = first; k < steps.steps.size(); ++k)
    spans.push_back(double(steps.steps[k].end_ns - steps.steps[k].start_ns));
  const double median = median_of(spans);
  const double total = std::accumulate(spans.begin(), spans.end(), 0.0);
  if (median <= 0 || total <= 0) return out;
  std::vector<SlowStep> slow;
  for (std::size_t k = first; k < steps.steps.size(); ++k) {
    const double span = spans[k - first];
    if (span < limits.slow_steps_min_ratio * median || span - median < limits.slow_steps_min_excess_ns) continue;
    SlowStep s{k, span - median};
    if (lateness.measurable())
      for (std::size_t r = 0; r < lateness.peak_lateness_ns.size(); ++r)
        if (k < lateness.peak_lateness_ns[r].size() && lateness.peak_lateness_ns[r][k] > s.late_ns)
          s.late_rank = static_cast<int>(r), s.late_ns = lateness.peak_lateness_ns[r][k];
    if (s.late_ns < 0.5 * s.excess_ns) s.late_rank = -1;
    slow.push_back(s);
  }
  // One finding per late rank (and one for the steps no one rank is late in): a checkpoint on rank 0 and a busy
  // host's stall of every rank are two things, each with its own steps, period and cost.
  std::map<int, std::vector<SlowStep>> by_rank;
  for (const auto& s : slow) by_rank[s.late_rank].push_back(s);
  for (auto& [rank, group] : by_rank) {
    // The same kind of pause: a step a busy host made a few times slower is not one with a checkpoint 50x longer.
    double largest = 0, excess = 0;
    for (const auto& s : group) largest = std::max(largest, s.excess_ns);
    std::erase_if(group, [&](const SlowStep& s) { return s.excess_ns < limits.slow_steps_min_share_of_largest * largest; });
    for (const auto& s : group) excess += s.excess_ns;
    // Occasional, and a real share of the time: many slow steps are the job's rhythm (the straggler's and the
    // step statistics' business), a small share is noise.
    if (double(group.size()) > limits.slow_steps_max_share_of_steps * double(spans.size()) ||
        excess < limits.slow_steps_min_time_share * total)
      continue;
    out.push_back(slow_steps_finding(in, group, rank, median, total, spans.size(), excess));
  }
  return out;
}

}  // namespace collscope::analyzer
