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
  // Overlap is a claim about compute: without any recorded (no GPU kernels, no NVTX ranges besides the steps — a
  // CPU job without annotation, a run imported from a Horovod Timeline, a benchmark) nothing says whether compute
  // hid the communication, so no claim either way. (A range around blocking calls on their own thread is such a
  // record: it says the thread computed nothing meanwhile.)
  const StepNames step_names(run, steps.range_name);
  // An imported Horovod Timeline's ranges are Horovod's own activities (queueing, copies, the transfer): no compute.
  const bool imported = std::any_of(run.ranks.begin(), run.ranks.end(), [](const auto& r) {
    return !r.meta_value(std::string(store::meta_key::kImportFormat)).value_or("").empty();
  });
  const bool has_ranges = !imported && std::any_of(run.ranks.begin(), run.ranks.end(), [&](const auto& r) {
    return std::any_of(r.nvtx_ranges.begin(), r.nvtx_ranges.end(),
                       [&](const NvtxRange& x) { return x.end_ns > x.start_ns && !step_names.contains(x.name); });
  });
  if (!has_gpu && !has_ranges) return out;
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
      has_gpu ? "GPU kernels" : "compute (NVTX ranges such as forward/backward that hold no call of their own thread)",
      format_ms(steps.mean_step_ns));
  const auto workload = run::describe_workload(run);
  f.suggestion = workload.horovod
                     ? "Overlap communication with the backward pass: Horovod starts a tensor's allreduce once it is "
                       "ready, so what stays exposed is what is ready last (the first layers' gradients) and what a "
                       "long cycle holds back; a larger batch per step also hides more."
                     : "Overlap communication with compute: start each collective as soon as its data is ready (gradient "
                       "buckets during backward, as PyTorch DDP does; MPI_Iallreduce + MPI_Wait around independent "
                       "work), or a larger batch per step.";
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
