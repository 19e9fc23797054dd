// Exposed communication: transfer time in a step that no compute overlaps.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

std::vector<Finding> detect_exposed_communication(const DetectorInput& in) {
  const Run& run = in.run;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  if (steps.steps.empty() || steps.mean_step_ns <= 0 || run.ranks.size() < 2) return out;
  const double share = steps.mean_exposed_ns / steps.mean_step_ns;
  if (share < limits.exposed_min_share) return out;
  const bool has_gpu = std::any_of(run.ranks.begin(), run.ranks.end(), [](const auto& r) { return !r.gpu_activities.empty(); });
  const bool has_cpu_compute = steps.cpu_compute_ranges;
  // A run imported from a Horovod Timeline records Horovod's own activities, never the framework's compute: the
  // timeline cannot tell whether compute hid the communication, so no claim either way.
  const bool imported = std::any_of(run.ranks.begin(), run.ranks.end(),
                                    [](const auto& r) { return r.meta_value("import_format").has_value(); });
  if (imported && !has_gpu) return out;
  Finding f;
  f.kind = FindingKind::ExposedCommunication;
  f.severity = share >= limits.exposed_warning_share ? Severity::Warning : Severity::Info;
  f.title = fmt::format("{:.0f} % of each step is communication not overlapped with compute", 100 * share);
  f.cost_ns = steps.mean_exposed_ns * double(steps.steps.size());
  f.evidence = {{"exposed_comm_per_step_ns", steps.mean_exposed_ns}, {"comm_per_step_ns", steps.mean_comm_ns},
                {"wait_per_step_ns", steps.mean_wait_ns}, {"step_time_ns", steps.mean_step_ns},
                {"share_of_step_pct", 100 * share}};
  f.evidence_text = fmt::format(
      "per step {} in collectives, of which {} waiting for other ranks and {} transfer not hidden behind {}; step {}.",
      format_ms(steps.mean_comm_ns), format_ms(steps.mean_wait_ns), format_ms(steps.mean_exposed_ns),
      has_gpu ? "GPU kernels" : has_cpu_compute ? "compute (NVTX ranges such as forward/backward that hold no call of their own thread)"
                                                : "compute (no GPU activity or NVTX compute ranges recorded: all of it counts as exposed)",
      format_ms(steps.mean_step_ns));
  f.suggestion = "Overlap communication with the backward pass: start gradient allreduces as buckets become ready "
                 "(Horovod/DDP do this), use non-blocking collectives, or a larger batch per step.";
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
