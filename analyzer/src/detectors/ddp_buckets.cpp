// DDP buckets: PyTorch DDP allreduces gradients in buckets of bucket_cap_mb while backward runs. Many small
// buckets per step make many small allreduces queued on the group; backward ends only when the last one completes
// (DDP waits for its buckets at backward's end), so the time from the last bucket's issue to its completion is a
// tail every step waits for. Seen in runs whose Python annotation recorded DDP (meta ddp.*) on a gloo or custom
// process group: from the bucket allreduces themselves when the trace has them (torch.distributed's non-blocking
// form, iallreduce: recorded from gloo on the group's "(C++ calls)" communicator, or by the comm hook with
// COLLSCOPE_DDP_HOOK=1 on the group's own), else from the bucket layout and timers DDP's reducer logged.
#include "detector_support.hpp"

#include <collscope/run/job_settings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace collscope::analyzer {

namespace {

// A step's buckets as the analyzer saw them: how many, their bytes, and the tail backward waits for (ns).
struct BucketPicture {
  double buckets = 0, bucket_bytes = 0, step_bytes = 0, tail_ns = 0;
  std::size_t steps = 0;  // measured steps the tail is over
  std::string source;     // for people: where the numbers come from
};

// From the recorded bucket allreduces: per measured step, their count and bytes, and the time from the step's last
// issue to its last completion (aligned ns). nullopt when none was recorded (COLLSCOPE_GLOO=0, no hook). Where DDP
// logged its bucket layout, a step's allreduces are taken as its buckets only up to the layout's count of each
// size, in issue order: recorded from gloo, the group's C++ allreduces also hold the unused-parameter bitmap of
// find_unused_parameters=True (4 bytes a parameter, every step), which is no bucket, and may be as large as one.
std::optional<BucketPicture> from_allreduces(const DetectorInput& in, const run::DdpSettings& ddp) {
  const Run& run = in.run;
  const StepSummary& steps = in.steps;
  const std::size_t nsteps = steps.steps.size();
  struct Call {
    double issued, done, bytes;
  };
  std::vector<std::vector<Call>> calls(nsteps);
  for (const auto& i : in.matched.instances) {
    if (i.op != store::Op::Iallreduce || i.ranks < 2) continue;
    const auto backend = run.communicators[i.comm].backend;
    if (backend != store::Backend::Gloo && backend != store::Backend::Torch) continue;
    const int step = steps.step_at(i.first_arrival_ns);
    if (step < 0) continue;
    calls[static_cast<std::size_t>(step)].push_back(
        {double(i.last_arrival_ns), double(i.last_completion_ns), double(i.bytes)});
  }
  std::map<double, int> layout;  // bucket bytes -> how many buckets have that size
  for (const auto b : ddp.bucket_bytes) ++layout[double(b)];
  std::vector<double> per_step, bytes_per_step, tails, sizes;
  for (std::size_t k = static_cast<std::size_t>(std::max(0, steps.warmup_steps)); k < nsteps; ++k) {
    auto& step = calls[k];
    std::sort(step.begin(), step.end(), [](const Call& a, const Call& b) { return a.issued < b.issued; });
    std::map<double, int> taken;
    double count = 0, bytes = 0, last_done = 0, last_issued = 0;
    for (const auto& c : step) {
      if (!layout.empty() && taken[c.bytes]++ >= (layout.count(c.bytes) ? layout[c.bytes] : 0)) continue;
      ++count;
      bytes += c.bytes;
      last_done = std::max(last_done, c.done);
      last_issued = std::max(last_issued, c.issued);
      sizes.push_back(c.bytes);
    }
    if (count == 0) continue;
    per_step.push_back(count);
    bytes_per_step.push_back(bytes);
    tails.push_back(std::max(0.0, last_done - last_issued));
  }
  if (per_step.empty()) return std::nullopt;
  return BucketPicture{.buckets = median_of(per_step),
                       .bucket_bytes = median_of(sizes),
                       .step_bytes = median_of(bytes_per_step),
                       .tail_ns = median_of(tails),
                       .steps = tails.size(),
                       .source = fmt::format("the step's last one completes {{}} after it was issued (median over {} "
                                             "steps)",
                                             tails.size())};
}

// From what DDP's reducer logged: its bucket layout, and the part of its bucket allreduces that backward's compute
// did not hide (its mean over the iterations it sampled), for each measured step.
std::optional<BucketPicture> from_reducer(const DetectorInput& in, const run::DdpSettings& ddp) {
  if (ddp.bucket_bytes.empty() || !ddp.least_exposed_comm_ns) return std::nullopt;
  std::vector<double> sizes(ddp.bucket_bytes.begin(), ddp.bucket_bytes.end());
  const std::size_t steps = static_cast<std::size_t>(std::max(0, in.steps.measured_steps()));
  return BucketPicture{.buckets = double(sizes.size()),
                       .bucket_bytes = median_of(sizes),
                       .step_bytes = std::accumulate(sizes.begin(), sizes.end(), 0.0),
                       .tail_ns = *ddp.least_exposed_comm_ns,
                       .steps = steps,
                       .source = fmt::format("the last completes {{}} after backward's compute ends (DDP's own "
                                             "timers: the mean over the {} iterations it sampled, on the rank that "
                                             "waited least)",
                                             ddp.sampled_iterations)};
}

}  // namespace

std::vector<Finding> detect_ddp_buckets(const DetectorInput& in) {
  const Run& run = in.run;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  if (run.ranks.size() < 2 || in.steps.steps.empty()) return out;
  const auto ddp = run::ddp_settings(run);
  if (!ddp) return out;
  const double cap_mb = ddp->bucket_cap_mb.value;
  auto seen = from_allreduces(in, *ddp);
  if (!seen) seen = from_reducer(in, *ddp);
  if (!seen || seen->steps == 0) return out;
  const BucketPicture& p = *seen;
  const double cap_bytes = cap_mb * 1048576.0;
  // Many buckets, each small, and the cap smaller than a step's gradients: the cap is what splits them.
  // (Not gated on the tail: its size varies with the machine's load, the split does not.)
  if (p.buckets < limits.ddp_min_buckets_per_step || p.bucket_bytes >= double(limits.fusable_message_bytes) ||
      cap_bytes >= p.step_bytes)
    return out;
  // DDP's default (25 MB) unless a step's gradients need less; always above the value in effect.
  double suggested = std::max(25.0, std::ceil(p.step_bytes / 1048576.0));
  if (suggested <= cap_mb) return out;
  Finding f;
  f.kind = FindingKind::LatencyBound;
  f.severity = Severity::Warning;
  f.title = fmt::format("DDP sends {:.0f} buckets of {} per step (bucket_cap_mb {:g}); the last completes {} after {}",
                        p.buckets, format_bytes(p.bucket_bytes), cap_mb, format_ms(p.tail_ns),
                        p.source.starts_with("the step's") ? "its issue" : "backward's compute ends");
  // The cost: the tail the steps wait for, measured. Larger buckets can save more than that (the small ones also
  // cost CPU during backward: on the test job, 72.8 -> 64.3 ms per step for a 4.5 ms tail; docs/performance.md).
  f.cost_ns = p.tail_ns * double(p.steps);
  f.evidence = {{"buckets_per_step", p.buckets},           {"bucket_bytes", p.bucket_bytes},
                {"gradient_bytes_per_step", p.step_bytes}, {"bucket_cap_mb", cap_mb},
                {"bucket_fill_pct", 100.0 * p.bucket_bytes / cap_bytes},
                {"last_bucket_tail_ns", p.tail_ns},        {"suggested_bucket_cap_mb", suggested}};
  // How much of the allreduces backward's compute hides, by DDP's own timers (ns, means over its sampled steps).
  if (ddp->backward_comm_ns && ddp->backward_overlap_ns && *ddp->backward_comm_ns > 0) {
    f.evidence["backward_comm_ns"] = *ddp->backward_comm_ns;
    f.evidence["backward_overlap_pct"] = 100.0 * std::min(1.0, *ddp->backward_overlap_ns / *ddp->backward_comm_ns);
  }
  f.evidence_text = fmt::format(
      "each step's {} of gradients travel in {:.0f} allreduces of about {} (DDP's buckets, capped at {:g} MB: "
      "{:.0f} % of the cap, as a bucket closes with the tensor that reaches it); {}, and backward ends only then.",
      format_bytes(p.step_bytes), p.buckets, format_bytes(p.bucket_bytes), cap_mb,
      100.0 * p.bucket_bytes / cap_bytes, fmt::format(fmt::runtime(p.source), format_ms(p.tail_ns)));
  f.suggestion = fmt::format(
      "Give DDP larger buckets: DistributedDataParallel(..., bucket_cap_mb={:g}) (now {:g}) so that fewer, larger "
      "allreduces carry the gradients (each small one costs its latency and CPU time on the group's threads while "
      "backward computes); try values around it with `collscope tune`.",
      suggested, cap_mb);
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
