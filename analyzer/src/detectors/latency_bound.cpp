// Latency-bound: many small collectives per step whose cost is their latency, not their bytes (what fusion fixes).
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

using detail::carries_payload;
using detail::fusion_threshold_of;
using detail::next_pow2;

std::vector<Finding> detect_latency_bound(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  // Fusable traffic: payload collectives from 1 KiB (below: control messages such as Horovod's readiness
  // negotiation, which fusion does not touch) up to 1 MiB (above: bandwidth dominates the cost).
  const std::int64_t kControlBytes = limits.control_message_bytes, kFusableBytes = limits.fusable_message_bytes;
  double total_ns = 0, small_ns = 0, small_bytes = 0;
  std::int64_t small = 0;
  std::vector<double> small_durations;
  double best_algbw = 0;  // bytes/ns of the largest messages: what fused traffic would get
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.bytes < kControlBytes) continue;
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
  const double nsteps = steps.steps.empty() ? 1.0 : double(steps.steps.size());
  const double small_per_step = double(small) / nsteps;
  const double share = small_ns / total_ns;
  // Many separate messages per step: what fusion would merge (a fused job sends a few per step).
  if (share < limits.latency_bound_min_share || small_per_step < limits.latency_bound_min_per_step || (steps.steps.empty() && small < 100)) return out;
  const auto threshold = fusion_threshold_of(run);
  const double bytes_per_step = small_bytes / nsteps;
  std::int64_t suggested = std::clamp<std::int64_t>(next_pow2(static_cast<std::int64_t>(bytes_per_step)), 1 << 20, 256 << 20);
  // A threshold that already holds a step's tensors is not what splits them (the cycle time or the job is).
  if (threshold && *threshold >= next_pow2(static_cast<std::int64_t>(bytes_per_step))) return out;
  if (threshold && *threshold > 0) suggested = std::min<std::int64_t>(256 << 20, std::max(suggested, next_pow2(*threshold * 4)));
  const double latency_ns = median_of(small_durations);
  // Fused: about one collective per step carrying the same bytes at the bandwidth of large messages.
  const double fused_ns = nsteps * latency_ns + (best_algbw > 0 ? small_bytes / best_algbw : 0.0);
  Finding f;
  f.kind = FindingKind::LatencyBound;
  f.severity = share >= limits.latency_bound_critical_share ? Severity::Critical : Severity::Warning;
  f.title = fmt::format("latency-bound: {:.0f} small collectives per step take {:.0f} % of communication time",
                        small_per_step, 100 * share);
  f.cost_ns = std::max(0.0, small_ns - fused_ns);
  f.evidence = {{"small_collectives", double(small)},
                {"small_collectives_per_step", small_per_step},
                {"small_message_limit_bytes", double(kFusableBytes)},
                {"small_time_ns", small_ns},
                {"share_of_comm_time_pct", 100 * share},
                {"median_small_duration_ns", latency_ns},
                {"small_bytes_per_step", bytes_per_step},
                {"suggested_fusion_threshold_bytes", double(suggested)}};
  if (threshold) f.evidence["fusion_threshold_bytes"] = double(*threshold);
  f.evidence_text = fmt::format(
      "{} collectives under {} ({:.0f} per step, {} per step in all) took {} = {:.0f} % of the time in collectives; "
      "each costs about {} whatever its size{}.",
      small, format_bytes(kFusableBytes), small_per_step, format_bytes(bytes_per_step), format_ms(small_ns), 100 * share,
      format_ms(latency_ns), threshold ? fmt::format("; the fusion threshold is {}", format_bytes(double(*threshold))) : "");
  f.suggestion = fmt::format(
      "Raise the fusion threshold: HOROVOD_FUSION_THRESHOLD={} ({}) so that a step's tensors travel in one "
      "collective (or bucket gradients to that size); saves about {}.",
      suggested, format_bytes(double(suggested)), format_ms(f.cost_ns));
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
