// Horovod's fusion buffer and cycle time: collectives waiting for the cycle with near-empty buffers, or buffers
// that stay under-filled.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {


std::vector<Finding> detect_fusion_and_cycle_time(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const auto workload = run::describe_workload(run);
  const auto settings = run::job_settings(run, workload);
  if (!settings.horovod_applies) return out;
  // The knobs in effect: the job's, else Horovod's defaults (an unset knob is its default).
  const auto& knobs = settings.horovod;
  const std::optional<std::int64_t> threshold = knobs.fusion_threshold_bytes.value;
  const double cycle_ms = knobs.cycle_time_ms.value;
  if (*threshold <= 0 || cycle_ms <= 0) return out;
  const double cycle_ns = cycle_ms * 1e6;
  // Fill of fused collectives: the fusion buffers (address reused with many sizes), else the allreduces themselves.
  double fused_bytes = 0, fused_uses = 0;
  for (const auto& r : run.ranks)
    for (const auto& b : r.buffers)
      if (b.uses >= 10 && b.bytes_max > b.bytes_min) fused_bytes += double(b.bytes_total), fused_uses += double(b.uses);
  const int ref = m.reference_comm;
  if (ref < 0) return out;
  if (fused_uses == 0)
    for (std::size_t i = m.comm_first[ref]; i < m.comm_first[ref + 1]; ++i)
      if (m.instances[i].op == store::Op::Allreduce) fused_bytes += double(m.instances[i].bytes), fused_uses += 1;
  if (fused_uses == 0) return out;
  const double fill = fused_bytes / fused_uses / double(*threshold);
  // Gaps before each payload collective of the reference communicator on each rank (since the call before it): a
  // cycle-time stall makes them cluster just under the cycle time (tensors ready, Horovod sleeping the rest of the
  // cycle). Gaps before control traffic are idle cycling, not waiting: with nothing ready Horovod just cycles.
  double gaps_total = 0, matched_total = 0;
  std::int64_t gaps = 0, matched_gaps = 0;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& idx = m.call_index[r][ref];
    const auto& calls = run.ranks[r].collectives;
    for (std::size_t s = 1; s < idx.size(); ++s) {
      if (idx[s] < 0 || idx[s - 1] < 0) continue;
      if (run::is_control_reduction(calls[idx[s]].reduction) || calls[idx[s]].bytes <= 0) continue;
      const double gap = double(calls[idx[s]].start_ns - calls[idx[s - 1]].end_ns);
      if (gap <= 0) continue;
      ++gaps;
      gaps_total += gap;
      if (gap >= 0.3 * cycle_ns && gap <= 1.3 * cycle_ns) ++matched_gaps, matched_total += gap;
    }
  }
  if (gaps == 0) return out;
  const double nranks = double(run.ranks.size());
  const double wall = steps.steps.empty() ? m.wall_ns : steps.mean_step_ns * double(steps.steps.size());
  const double stall_ns = matched_total / nranks;
  const bool stall = fill < limits.stall_max_fill && matched_gaps >= limits.stall_min_gap_share * double(gaps) && wall > 0 &&
                     stall_ns >= limits.stall_min_wall_share * wall &&
                     cycle_ms >= 1.0;
  if (stall) {
    const double suggested = std::max(0.5, std::round(cycle_ms / 5 * 10) / 10);
    if (suggested >= cycle_ms) return out;  // never the value in effect
    Finding f;
    f.kind = FindingKind::CycleTimeStall;
    f.severity = stall_ns >= limits.stall_critical_wall_share * wall ? Severity::Critical : Severity::Warning;
    f.title = fmt::format("cycle-time stall: collectives wait for the {:.1f} ms Horovod cycle with buffers {:.0f} % full",
                          cycle_ms, 100 * fill);
    f.cost_ns = stall_ns * (1.0 - suggested / cycle_ms);
    f.evidence = {{"cycle_time_ms", cycle_ms},        {"fusion_threshold_bytes", double(*threshold)},
                  {"mean_fill_pct", 100 * fill},      {"gaps_matching_cycle", double(matched_gaps)},
                  {"gaps", double(gaps)},             {"stall_ns", stall_ns},
                  {"suggested_cycle_time_ms", suggested}};
    f.evidence_text = fmt::format(
        "{} of {} gaps between collectives are {:.1f}–{:.1f} ms (the cycle time is {:.1f} ms), {} per rank in all, "
        "while fused collectives carry on average {} of the {} threshold.",
        matched_gaps, gaps, 0.3 * cycle_ms, 1.3 * cycle_ms, cycle_ms, format_ms(stall_ns), format_bytes(fused_bytes / fused_uses),
        format_bytes(double(*threshold)));
    f.suggestion = fmt::format("Lower the cycle time: HOROVOD_CYCLE_TIME={:.1f} (ms); the buffers are not the limit.{}",
                               suggested, detail::predicted_step_clause(in, {.cycle_time_ms = suggested}, f));
    out.push_back(std::move(f));
  } else if (knobs.fusion_threshold_bytes.set_by_job() && fill < limits.underfilled_max_fill && fused_uses >= 10 &&
             matched_gaps < limits.stall_min_gap_share * double(gaps)) {
    // Only a threshold the job set: Horovod allocates its default buffer lazily, and a job that fills 4 % of a
    // default 128 MiB is not misconfigured.
    Finding f;
    f.kind = FindingKind::UnderfilledFusion;
    f.severity = Severity::Info;
    f.title = fmt::format("fusion buffer under-filled: fused collectives use {:.1f} % of the {} threshold", 100 * fill,
                          format_bytes(double(*threshold)));
    f.evidence = {{"mean_fill_pct", 100 * fill}, {"fusion_threshold_bytes", double(*threshold)},
                  {"fused_collectives", fused_uses}};
    f.evidence_text = fmt::format("{:.0f} fused collectives carry on average {}.", fused_uses, format_bytes(fused_bytes / fused_uses));
    f.suggestion = fmt::format(
        "Tensors are sent before more are ready: raise HOROVOD_CYCLE_TIME a little (now {:.1f} ms) so that more tensors "
        "share a collective, or lower HOROVOD_FUSION_THRESHOLD to the fill actually reached ({}) to save memory.",
        cycle_ms, format_bytes(fused_bytes / fused_uses));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace collscope::analyzer
