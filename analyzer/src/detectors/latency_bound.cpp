// Latency-bound: many small collectives per step whose cost is their latency, not their bytes. What merges them
// depends on the job: in Horovod, the fusion threshold when it is smaller than a step's gradients, else the cycle
// time (each cycle sends what is ready: a short cycle splits the gradients into many small fusions); elsewhere,
// bucketing.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::analyzer {

using detail::carries_payload;
using detail::next_pow2;

namespace {

// Median over steps of the time from a step's first to its last small payload collective (ns, rank index 0's
// clock): how long the gradients take to become ready, the window a cycle time can gather them over.
double median_payload_span(const MatchedRun& m, const StepSummary& steps, std::int64_t lo_bytes, std::int64_t hi_bytes) {
  std::vector<std::int64_t> first(steps.steps.size(), INT64_MAX), last(steps.steps.size(), INT64_MIN);
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.bytes < lo_bytes || i.bytes >= hi_bytes) continue;
    auto it = std::upper_bound(steps.steps.begin(), steps.steps.end(), i.first_arrival_ns,
                               [](std::int64_t t, const Step& s) { return t < s.start_ns; });
    if (it == steps.steps.begin()) continue;
    const auto k = static_cast<std::size_t>(it - steps.steps.begin()) - 1;
    first[k] = std::min(first[k], i.first_arrival_ns);
    last[k] = std::max(last[k], i.first_arrival_ns);
  }
  std::vector<double> spans;
  for (std::size_t k = 0; k < first.size(); ++k)
    if (last[k] > first[k]) spans.push_back(double(last[k] - first[k]));
  return median_of(spans);
}

}  // namespace

std::vector<Finding> detect_latency_bound(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const auto workload = run::describe_workload(run);
  // A benchmark sends small messages on purpose: measuring their latency is its job.
  if (!workload.benchmark.empty()) return out;
  // Fusable traffic: payload collectives from 1 KiB (below: control messages such as Horovod's readiness
  // negotiation, which fusion does not touch) up to 1 MiB (above: bandwidth dominates the cost). Non-blocking
  // calls are left out: their span is the job's work, not their latency.
  const std::int64_t kControlBytes = limits.control_message_bytes, kFusableBytes = limits.fusable_message_bytes;
  double total_ns = 0, small_ns = 0, small_bytes = 0;
  std::int64_t small = 0;
  std::vector<double> small_durations;
  double best_algbw = 0;  // bytes/ns of the largest messages: what fused traffic would get
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.bytes < kControlBytes || run::is_nonblocking(i.op)) continue;
    total_ns += double(i.duration_ns);
    best_algbw = std::max(best_algbw, i.algbw_gbps());
    if (i.bytes < kFusableBytes) {
      ++small;
      small_ns += double(i.duration_ns);
      small_bytes += double(i.bytes);
      if (small_durations.size() < 100000) small_durations.push_back(double(i.duration_ns));
    }
  }
  if (total_ns <= 0 || small == 0) return out;
  const bool per_step = !steps.steps.empty();
  const double nsteps = per_step ? double(steps.steps.size()) : 1.0;
  const double small_per_step = double(small) / nsteps;
  const double share = small_ns / total_ns;
  // Many separate messages per step: what fusion would merge (a fused job sends a few per step).
  if (share < limits.latency_bound_min_share || small_per_step < limits.latency_bound_min_per_step || (!per_step && small < 100)) return out;
  const double bytes_per_step = small_bytes / nsteps;
  const double latency_ns = median_of(small_durations);
  // Fused: about one collective per step carrying the same bytes at the bandwidth of large messages.
  const double fused_ns = nsteps * latency_ns + (best_algbw > 0 ? small_bytes / best_algbw : 0.0);
  const double cost_ns = std::max(0.0, small_ns - fused_ns);
  // The small collectives must matter to the job, not only to its communication: HPCC's FFT spent 100 % of its
  // collectives' time in 16 KiB alltoalls, 4.7 ms of a 566 ms run.
  const double wall_ns = per_step ? steps.mean_step_ns * nsteps : m.wall_ns;
  if (small_ns < limits.latency_bound_min_wall_share * wall_ns) return out;
  Finding f;
  f.kind = FindingKind::LatencyBound;
  f.severity = share >= limits.latency_bound_critical_share ? Severity::Critical : Severity::Warning;
  f.title = per_step ? fmt::format("latency-bound: {:.0f} small collectives per step take {:.0f} % of communication "
                                   "time", small_per_step, 100 * share)
                     : fmt::format("latency-bound: {} small collectives take {:.0f} % of communication time", small,
                                   100 * share);
  f.cost_ns = cost_ns;
  f.evidence = {{"small_collectives", double(small)},
                {"small_collectives_per_step", small_per_step},
                {"small_message_limit_bytes", double(kFusableBytes)},
                {"small_time_ns", small_ns},
                {"share_of_comm_time_pct", 100 * share},
                {"median_small_duration_ns", latency_ns},
                {"small_bytes_per_step", bytes_per_step}};
  std::string knobs;
  if (const auto settings = run::job_settings(run, workload); settings.horovod_applies) {
    const auto& k = settings.horovod;
    const std::int64_t threshold = k.fusion_threshold_bytes.value;
    const double cycle_ms = k.cycle_time_ms.value;
    const bool threshold_set = k.fusion_threshold_bytes.set_by_job(), cycle_set = k.cycle_time_ms.set_by_job();
    f.evidence["fusion_threshold_bytes"] = double(threshold);
    f.evidence["cycle_time_ms"] = cycle_ms;
    knobs = fmt::format("; the fusion threshold is {} and the cycle time {:g} ms ({})", format_bytes(double(threshold)),
                        cycle_ms,
                        threshold_set && cycle_set ? "both set by the job"
                        : threshold_set            ? "the cycle time " + k.defaults_text
                        : cycle_set                ? "the threshold " + k.defaults_text
                                                   : k.defaults_text);
    const std::int64_t needed = next_pow2(static_cast<std::int64_t>(bytes_per_step));
    if (threshold < needed) {
      // The threshold splits a step's tensors: raise it to hold them (never to the value in effect).
      std::int64_t suggested = std::clamp<std::int64_t>(needed, 1 << 20, 256 << 20);
      suggested = std::min<std::int64_t>(256 << 20, std::max(suggested, next_pow2(threshold * 4)));
      if (suggested <= threshold) return out;
      f.evidence["suggested_fusion_threshold_bytes"] = double(suggested);
      f.suggestion = fmt::format(
          "Raise the fusion threshold: HOROVOD_FUSION_THRESHOLD={} ({}, now {}) so that a step's tensors travel in "
          "one collective.{}",
          suggested, format_bytes(double(suggested)), format_bytes(double(threshold)),
          detail::predicted_step_clause(in, {.fusion_threshold_bytes = suggested}, f));
    } else {
      // The threshold already holds a step's tensors: each cycle sends what is ready by then, so a short cycle
      // splits them. A cycle that gathers them in about 8 collectives over the time they take to become ready
      // fuses them, while the last ones wait at most one such cycle. (On the Horovod fixtures' job: 9-10 ms; the
      // job measured 1 035 samples/s at a 9 ms cycle against 760 at the default 1 ms.)
      const double span_ms = steps.steps.empty() ? 0 : median_payload_span(m, steps, kControlBytes, kFusableBytes) / 1e6;
      constexpr double kTargetFusionsPerStep = 8;
      double suggested = std::round(std::clamp(span_ms / kTargetFusionsPerStep, 2 * cycle_ms, 50.0) * 2) / 2;
      if (suggested <= cycle_ms) suggested = 2 * cycle_ms;
      f.evidence["suggested_cycle_time_ms"] = suggested;
      if (span_ms > 0) f.evidence["payload_span_per_step_ms"] = span_ms;
      f.suggestion = fmt::format(
          "Raise the cycle time: HOROVOD_CYCLE_TIME={:g} (ms; now {:g}). The fusion threshold ({}) already holds a "
          "step's {} of tensors, so it is not what splits them: each {:g} ms cycle sends whatever is ready{}. Try "
          "values around it with `collscope tune` (samples/spaces/horovod.yaml).{}",
          suggested, cycle_ms, format_bytes(double(threshold)), format_bytes(bytes_per_step),
          cycle_ms,
          span_ms > 0 ? fmt::format(", and the gradients take {} to become ready in a step", format_ms(span_ms * 1e6)) : "",
          detail::predicted_step_clause(in, {.cycle_time_ms = suggested}, f));
    }
  } else if (workload.torch_distributed || workload.fusion_buffers) {
    // A training job's gradients: fewer, larger buckets carry the same bytes (DDP's knob where DDP runs).
    const auto ddp = run::ddp_settings(run);
    f.suggestion = fmt::format(
        "Merge the small collectives: {} (a step's {} fit in one); saves about {}.",
        ddp ? fmt::format("raise DDP's bucket_cap_mb (now {:g} MB) so that fewer, larger buckets carry the gradients",
                          ddp->bucket_cap_mb.value)
            : std::string("pack the tensors into fewer, larger collectives (one flat buffer)"),
        format_bytes(bytes_per_step), format_ms(f.cost_ns));
  } else {
    // A program's own collectives may depend on one another (an FFT's transposes), so no saving is promised:
    // the cost is what their latency took.
    f.suggestion = fmt::format(
        "Send fewer, larger collectives where the algorithm allows: combine consecutive ones into one (one buffer, "
        "or an MPI derived datatype), or start them non-blocking and compute meanwhile. Their latency took about {} "
        "of the {} they spent{}.",
        format_ms(f.cost_ns), format_ms(small_ns), per_step ? "" : " in the run");
  }
  f.evidence_text = fmt::format(
      "{} collectives from {} to {} ({}) took {} = {:.0f} % of the time in collectives; the median one took {}{}.",
      small, format_bytes(double(kControlBytes)), format_bytes(double(kFusableBytes)),
      per_step ? fmt::format("{:.0f} per step, {} per step in all", small_per_step, format_bytes(bytes_per_step))
               : fmt::format("{} in all, no steps found", format_bytes(small_bytes)),
      format_ms(small_ns), 100 * share, format_duration(latency_ns), knobs);
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
