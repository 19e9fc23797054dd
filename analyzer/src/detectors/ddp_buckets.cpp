// DDP buckets: PyTorch DDP allreduces gradients in buckets of bucket_cap_mb while backward runs. Many small
// buckets per step make many small allreduces queued on the group; backward ends only when the last one completes
// (DDP waits for its buckets at backward's end), so the time from the last bucket's issue to its completion is a
// tail every step waits for. Seen in runs whose Python annotation recorded DDP (meta ddp.bucket_cap_mb) on a gloo or custom
// process group (their async allreduces are the buckets: torch.distributed's non-blocking form, iallreduce).
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::analyzer {

std::vector<Finding> detect_ddp_buckets(const DetectorInput& in) {
  const Run& run = in.run;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  if (run.ranks.size() < 2 || steps.steps.empty()) return out;
  const auto cap = run::ddp_bucket_cap_mb(run);
  if (!cap) return out;
  const double cap_mb = cap->value;
  // Buckets per step, their bytes, and when the step's last one was issued and completed (aligned ns).
  const std::size_t nsteps = steps.steps.size();
  std::vector<int> count(nsteps, 0);
  std::vector<double> bytes(nsteps, 0), last_done(nsteps, 0), last_issued(nsteps, 0);
  std::vector<double> sizes;
  for (const auto& i : in.matched.instances) {
    if (i.op != store::Op::Iallreduce || i.ranks < 2) continue;
    const auto backend = run.communicators[i.comm].backend;
    if (backend != store::Backend::Gloo && backend != store::Backend::Torch) continue;
    const int step = steps.step_at(i.first_arrival_ns);
    if (step < 0) continue;
    const auto k = static_cast<std::size_t>(step);
    ++count[k];
    bytes[k] += double(i.bytes);
    last_done[k] = std::max(last_done[k], double(i.last_completion_ns));
    last_issued[k] = std::max(last_issued[k], double(i.last_arrival_ns));
    sizes.push_back(double(i.bytes));
  }
  std::vector<double> per_step, bytes_per_step, tails;
  for (std::size_t k = static_cast<std::size_t>(std::max(0, steps.warmup_steps)); k < nsteps; ++k) {
    if (count[k] == 0) continue;
    per_step.push_back(count[k]);
    bytes_per_step.push_back(bytes[k]);
    tails.push_back(std::max(0.0, last_done[k] - last_issued[k]));
  }
  if (per_step.empty()) return out;
  const double buckets = median_of(per_step), step_bytes = median_of(bytes_per_step), bucket_bytes = median_of(sizes);
  const double tail_ns = median_of(tails);
  const double cap_bytes = cap_mb * 1048576.0;
  // Many buckets, each small, and the cap smaller than a step's gradients: the cap is what splits them.
  // (Not gated on the tail: its size varies with the machine's load, the split does not.)
  if (buckets < limits.ddp_min_buckets_per_step || bucket_bytes >= double(limits.fusable_message_bytes) ||
      cap_bytes >= step_bytes)
    return out;
  // DDP's default (25 MB) unless a step's gradients need less; always above the value in effect.
  double suggested = std::max(25.0, std::ceil(step_bytes / 1048576.0));
  if (suggested <= cap_mb) return out;
  Finding f;
  f.kind = FindingKind::LatencyBound;
  f.severity = Severity::Warning;
  f.title = fmt::format("DDP sends {:.0f} buckets of {} per step (bucket_cap_mb {:g}); the last completes {} after its issue",
                        buckets, format_bytes(bucket_bytes), cap_mb, format_ms(tail_ns));
  // The cost: the tail the steps wait for, measured. Larger buckets can save more than that (the small ones also
  // cost CPU during backward: on the test job, 72.8 -> 64.3 ms per step for a 4.5 ms tail; docs/performance.md).
  f.cost_ns = tail_ns * double(tails.size());
  f.evidence = {{"buckets_per_step", buckets},           {"bucket_bytes", bucket_bytes},
                {"gradient_bytes_per_step", step_bytes}, {"bucket_cap_mb", cap_mb},
                {"last_bucket_tail_ns", tail_ns},        {"suggested_bucket_cap_mb", suggested}};
  f.evidence_text = fmt::format(
      "each step's {} of gradients travel in {:.0f} allreduces of about {} (DDP's buckets, capped at {:g} MB); "
      "the step's last one completes {} after it was issued (median over {} steps), and backward ends only then.",
      format_bytes(step_bytes), buckets, format_bytes(bucket_bytes), cap_mb, format_ms(tail_ns), tails.size());
  f.suggestion = fmt::format(
      "Give DDP larger buckets: DistributedDataParallel(..., bucket_cap_mb={:g}) (now {:g}) so that fewer, larger "
      "allreduces carry the gradients (each small one costs its latency and CPU time on the group's threads while "
      "backward computes); try values around it with `collscope tune`.",
      suggested, cap_mb);
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
