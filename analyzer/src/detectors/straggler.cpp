// Straggler: one rank the others wait for, step after step. Lateness and wait are run/lateness.hpp's: from the
// NVTX phases of the steps when the job marks them, else from the synchronising collectives. Named only when it
// is consistent (a sign test over the measured steps) and above the run's noise; then its cause, from the
// rank's CPU samples: more work, a slower or shared CPU, waiting for a CPU, or off a CPU.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace collscope::analyzer {

using detail::binomial_tail;
using detail::format_chance;

namespace {

// The latest rank in the median step, if it passes the size limits (share of the step, dominance, floor).
struct Candidate {
  std::size_t top = 0;
  double late = 0, next = 0, step_ns = 0;
  bool per_step = false;
};

std::optional<Candidate> size_candidate(const DetectorInput& in) {
  const Lateness& lateness = in.lateness;
  const DetectorThresholds& limits = in.limits();
  const std::size_t n = in.run.ranks.size();
  if (n < 2 || !lateness.measurable()) return std::nullopt;
  Candidate c;
  for (std::size_t r = 1; r < n; ++r)
    if (lateness.median_lateness_ns[r] > lateness.median_lateness_ns[c.top]) c.top = r;
  for (std::size_t r = 0; r < n; ++r)
    if (r != c.top) c.next = std::max(c.next, lateness.median_lateness_ns[r]);
  c.late = lateness.median_lateness_ns[c.top];  // per step, median: one long stall is not a straggler
  c.per_step = !in.steps.steps.empty();
  c.step_ns = c.per_step ? in.steps.median_step_ns : in.matched.wall_ns;
  // Late by a real share of the step, and far more than any other rank. The share is of the step, with an
  // absolute floor: a 30 ms straggler in a 400 ms step (7.5 %) is one.
  if (c.step_ns <= 0 || c.late <= 0 || c.late < limits.straggler_dominance * c.next) return std::nullopt;
  if (c.late < limits.straggler_min_share * c.step_ns || c.late < limits.straggler_min_delay_ns) return std::nullopt;
  return c;
}

// Is the candidate late consistently, beyond what chance and the run's own noise give?
struct Consistency {
  bool tested = false;  // enough measured steps for the sign test
  int latest = 0, measured = 0;
  double p = 1;          // chance of being the latest this often if every rank were equally likely to be
  double noise_ns = 0;   // how much its lateness varies from step to step: 1.4826 x its median absolute deviation
  bool consistent = true;
};

Consistency consistency(const DetectorInput& in, const Candidate& c) {
  Consistency out;
  const Lateness& lateness = in.lateness;
  out.measured = lateness.measured_steps;
  out.latest = c.top < lateness.steps_latest.size() ? lateness.steps_latest[c.top] : 0;
  if (!c.per_step || out.measured < in.limits().straggler_min_steps_for_test) return out;
  out.tested = true;
  out.p = binomial_tail(out.latest, out.measured, 1.0 / double(in.run.ranks.size()));
  const auto& per_step = lateness.lateness_ns[c.top];
  std::vector<double> deviations(per_step.begin() + lateness.first_measured, per_step.end());
  for (double& d : deviations) d = std::abs(d - c.late);
  out.noise_ns = 1.4826 * median_of(deviations);
  out.consistent = out.p <= in.limits().straggler_false_positive_rate && c.late > out.noise_ns;
  return out;
}

// SameWorkMoreCpu: more CPU time with nothing to tell more work from a slower CPU; SlowerCpu: the same instructions
// retired in more CPU time (perf events).
enum class Cause { Unknown = 0, MoreWork = 1, SameWorkMoreCpu = 2, WaitingForCpu = 3, OffCpu = 4, SlowerCpu = 5 };

struct CauseReading {
  Cause cause = Cause::Unknown;
  std::optional<run::LatenessCauses> excess;  // from the CPU samples
  std::string own_ranges;                     // NVTX ranges only the late rank runs in its steps
  std::string why;                            // one clause: what the cause rests on
};

CauseReading read_cause(const DetectorInput& in, const Candidate& c) {
  CauseReading out;
  const Run& run = in.run;
  // Work only it does: NVTX ranges (not steps) no other rank has, inside its measured steps.
  std::set<std::int32_t> others;
  for (std::size_t r = 0; r < run.ranks.size(); ++r)
    if (r != c.top)
      for (const auto& x : run.ranks[r].nvtx_ranges) others.insert(x.name);
  const StepNames step_names(run, in.steps.range_name);
  std::map<std::int32_t, double> own;
  for (const auto& x : run.ranks[c.top].nvtx_ranges)
    if (!others.count(x.name) && !step_names.contains(x.name) && x.end_ns > x.start_ns) own[x.name] += double(x.end_ns - x.start_ns);
  const double measured = std::max(1, in.lateness.measured_steps);
  for (const auto& [name, total] : own)
    if (total / measured >= 0.25 * c.late) out.own_ranges += (out.own_ranges.empty() ? "" : ", ") + run.strings[name];
  if (c.top < in.lateness.causes.size()) out.excess = in.lateness.causes[c.top];
  if (!out.excess) {
    if (!out.own_ranges.empty()) {
      out.cause = Cause::MoreWork;
      out.why = fmt::format("it runs {} in its steps, which no other rank does", out.own_ranges);
    } else {
      out.why = "the trace has no CPU samples (schema 1.4+, COLLSCOPE_CPU_SAMPLE_US) to tell why";
    }
    return out;
  }
  const auto& e = *out.excess;
  const double on = std::max(0.0, e.on_cpu_ns), q = std::max(0.0, e.run_queue_ns), off = std::max(0.0, e.off_cpu_ns);
  const std::string split = fmt::format("per step, more than the others: {} on a CPU, {} waiting for one, {} off one",
                                        format_ms(e.on_cpu_ns), format_ms(e.run_queue_ns), format_ms(e.off_cpu_ns));
  // The samples must account for a real part of the lateness (the rest is in boundaries they do not cover).
  if (on + q + off < 0.25 * c.late) {
    out.why = "its CPU samples do not explain it (" + split + ")";
    return out;
  }
  if (off >= on && off >= q) {
    out.cause = Cause::OffCpu;
  } else if (q >= on) {
    out.cause = Cause::WaitingForCpu;
  } else if (e.extra_instructions) {
    // Instructions retired tell more work from a slower CPU whatever the ranks' NVTX ranges say.
    out.cause = *e.extra_instructions >= in.limits().straggler_more_work_instructions ? Cause::MoreWork : Cause::SlowerCpu;
  } else if (!out.own_ranges.empty()) {
    out.cause = Cause::MoreWork;
  } else {
    out.cause = Cause::SameWorkMoreCpu;
  }
  out.why = split;
  if (e.extra_instructions && out.cause != Cause::OffCpu && out.cause != Cause::WaitingForCpu)
    out.why += fmt::format("; it retires {:+.1f} % instructions against the median other rank there (perf events){}",
                           100 * *e.extra_instructions,
                           out.cause == Cause::SlowerCpu ? ": the same work in more CPU time" : ": more work");
  if (out.cause == Cause::MoreWork && !out.own_ranges.empty())
    out.why += fmt::format("; it runs {}, which no other rank does", out.own_ranges);
  return out;
}

std::string_view cause_title(Cause c) {
  switch (c) {
    case Cause::MoreWork: return "more work than the others";
    case Cause::SameWorkMoreCpu: return "more CPU time for the same phases: a slower or shared CPU, or uneven data";
    case Cause::SlowerCpu: return "the same work in more CPU time: a slower or shared CPU";
    case Cause::WaitingForCpu: return "waiting for a CPU";
    case Cause::OffCpu: return "off a CPU (sleeping or blocked)";
    case Cause::Unknown: break;
  }
  return "cause not measured";
}

std::string cause_advice(Cause c, int rank, const std::string& where, const std::string& saving) {
  switch (c) {
    case Cause::MoreWork:
      return fmt::format("Rank {} does more work{}: balance the data or the decomposition; that saves about {} per "
                         "step.", rank, where, saving);
    case Cause::SameWorkMoreCpu:
      return fmt::format("Rank {} needs more CPU time{} than the others. If every rank does the same work (equal "
                         "batches, a data-parallel job), its CPU is slower or shared (a busy hyperthread sibling, a "
                         "slower or stolen virtual CPU): compare the node's cores, bind ranks to distinct physical "
                         "cores (mpirun --bind-to core) and keep other processes off them; if its share of the data "
                         "is larger, balance that. Up to {} per step.", rank, where, saving);
    case Cause::SlowerCpu:
      return fmt::format("Rank {} runs the same instructions as the others in more CPU time{}: its CPU is slower or "
                         "shared (a busy hyperthread sibling, a lower clock, a stolen virtual CPU), not its work. "
                         "Compare the node's cores, bind ranks to distinct physical cores (mpirun --bind-to core) and "
                         "keep other processes off them; balancing the data would not help. Up to {} per step.",
                         rank, where, saving);
    case Cause::WaitingForCpu:
      return fmt::format("Rank {} waits for a CPU{}: more busy threads than cores, or another process on its "
                         "cores. Check the placement: threads per rank against cores (OMP_NUM_THREADS, "
                         "torch.set_num_threads), mpirun --bind-to core / --map-by, other processes on the node. "
                         "Up to {} per step.", rank, where, saving);
    case Cause::OffCpu:
      return fmt::format("Rank {} is off a CPU without work to run{} (sleeping, blocked on I/O or a lock, page "
                         "faults): look at its input pipeline, I/O and sleeps; balancing work would not help. Up to "
                         "{} per step.", rank, where, saving);
    case Cause::Unknown: break;
  }
  return fmt::format("Find what makes rank {} slow{} (input pipeline, CPU binding, a slower GPU or host, noisy "
                     "neighbours); that saves about {} per step.", rank, where, saving);
}

}  // namespace

std::optional<std::string> straggler_within_noise(const DetectorInput& in) {
  const auto c = size_candidate(in);
  if (!c) return std::nullopt;
  const Consistency k = consistency(in, *c);
  if (k.consistent) return std::nullopt;
  const CauseReading cause = read_cause(in, *c);
  return fmt::format("the ranks differ within noise: rank {} is {} late in the median step, but it is the latest in "
                     "{} of {} measured steps (chance {}; named from {}) and its lateness varies by {} from step to "
                     "step (1.4826 x MAD); no straggler named.{}",
                     in.run.ranks[c->top].world_rank, format_ms(c->late), k.latest, k.measured, format_chance(k.p),
                     format_chance(in.limits().straggler_false_positive_rate), format_ms(k.noise_ns),
                     fmt::format(" What there is of it: {} ({}).",
                                                                      cause_title(cause.cause), cause.why));
}

std::vector<Finding> detect_stragglers(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const Lateness& lateness = in.lateness;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const auto candidate = size_candidate(in);
  if (!candidate) return out;
  const Consistency consistent = consistency(in, *candidate);
  if (!consistent.consistent) return out;
  const std::size_t n = run.ranks.size(), top = candidate->top;
  const double late = candidate->late, next = candidate->next, step_ns = candidate->step_ns;
  const bool per_step = candidate->per_step;
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
  const CauseReading cause = read_cause(in, *candidate);
  f.title = fmt::format("rank {} is a straggler ({}): it reaches each step's synchronisation {} after the others{}",
                        world_rank, cause_title(cause.cause), format_ms(late),
                        gains.empty() ? "" : fmt::format(" ({} {})", format_ms(gains[0].first), gains[0].second));
  // Its cost is the median step's lateness on every measured step: a pause it takes in a few steps (a checkpoint)
  // is the slow-steps finding's cost, not counted twice (summed, a 1 s pause every 10 steps made a 3.6 ms
  // straggler cost 3.1 s beside the slow steps' own 3.1 s).
  f.cost_ns = late * double(std::max(1, consistent.measured));
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
                {"from_step_phases", phases ? 1.0 : 0.0},
                {"cause_code", double(static_cast<int>(cause.cause))},
                {"steps_latest", double(consistent.latest)},
                {"steps_measured", double(consistent.measured)},
                {"sign_test_p", consistent.p},
                {"step_noise_ns", consistent.noise_ns}};
  if (cause.excess) {
    f.evidence["on_cpu_excess_per_step_ns"] = cause.excess->on_cpu_ns;
    f.evidence["run_queue_excess_per_step_ns"] = cause.excess->run_queue_ns;
    f.evidence["off_cpu_excess_per_step_ns"] = cause.excess->off_cpu_ns;
    if (cause.excess->extra_instructions) f.evidence["extra_instructions_pct"] = 100 * *cause.excess->extra_instructions;
  }
  if (!gains.empty()) f.evidence["largest_lag_gain_ns"] = gains[0].first;
  const double flushed = top < lateness.tracer_flush_ns.size() ? lateness.tracer_flush_ns[top] : 0.0;
  if (flushed > 0) f.evidence["tracer_flush_discounted_ns"] = flushed;
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
  if (late >= step_ns) {
    // Late by more than a step lasts: it falls behind between the steps' ranges (before its forward), which the
    // step time does not hold; "without it" would be nothing.
    const auto cut = f.evidence_text.rfind(" Without it a step would take");
    if (cut != std::string::npos) f.evidence_text.erase(cut);
    f.evidence_text += fmt::format(" It falls behind between steps (before its step begins: loading data, the "
                                   "input pipeline), by more than the {} a step takes.", format_ms(step_ns));
    f.evidence.erase("step_time_without_straggler_ns");
  }
  f.evidence_text += fmt::format(" Why: {}.", cause.why);
  if (flushed > 0)
    f.evidence_text += fmt::format(" The tracer stopped it for {} in all to write its full buffers out; that time is "
                                   "not counted as lateness.", format_ms(flushed));
  if (consistent.tested)
    f.evidence_text += fmt::format(" It is the latest rank in {} of {} measured steps (chance {} if every rank "
                                   "were equally likely to be).", consistent.latest, consistent.measured,
                                   format_chance(consistent.p));
  f.suggestion = cause_advice(cause.cause, world_rank, gains.empty() ? "" : " " + gains[0].second, format_ms(late));
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
