// DDP's other knobs, each advised only when the trace shows the problem it fixes, and never at the value already in
// effect (recorded from the DDP object and torch by the Python annotation: run/job_settings.hpp, DdpSettings):
//   find_unused_parameters=True while DDP found no unused parameter: a search of the autograd graph every forward
//     that finds nothing;
//   torch.set_num_threads: a host's ranks compute with more intra-op threads than the CPUs they may run on, and the
//     training threads wait for a CPU;
//   gradient accumulation under no_sync: the bucket allreduces that backward's compute does not hide are a large
//     share of the step, the buckets are not small (else bucket_cap_mb first), and the job does not accumulate.
// Not advised: gradient_as_bucket_view (the copy into buckets it saves is not in any trace) and static_graph (a
// wrong one breaks training; no trace proves the graph is the same every iteration).
#include "detector_support.hpp"

#include <collscope/run/job_settings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::analyzer {

namespace {

// The share of the traced time the annotated (training) threads of the ranks on `host` waited runnable for a CPU:
// the run-queue delay between each such thread's first and last scheduler sample, over that elapsed time, summed
// over the ranks. nullopt when no thread has two samples.
std::optional<double> run_queue_share(const Run& run, const std::string& host) {
  double waited = 0, elapsed = 0;
  for (const auto& r : run.ranks) {
    if (r.host != host || r.cpu_samples.size() < 2) continue;
    // Samples are ordered by thread then time; the thread with the most samples is the training loop's.
    std::size_t best_begin = 0, best_n = 0;
    for (std::size_t i = 0; i < r.cpu_samples.size();) {
      std::size_t j = i;
      while (j < r.cpu_samples.size() && r.cpu_samples[j].thread == r.cpu_samples[i].thread) ++j;
      if (j - i > best_n) best_begin = i, best_n = j - i;
      i = j;
    }
    if (best_n < 2) continue;
    const auto& a = r.cpu_samples[best_begin];
    const auto& b = r.cpu_samples[best_begin + best_n - 1];
    waited += double(b.runq_ns - a.runq_ns);
    elapsed += double(b.t_ns - a.t_ns);
  }
  if (!(elapsed > 0)) return std::nullopt;
  return waited / elapsed;
}

// Backward passes per step on the first rank (NVTX "backward" ranges inside "step" ranges, annotated thread).
double backward_passes_per_step(const Run& run, const StepSummary& steps) {
  if (run.ranks.empty() || steps.steps.empty()) return 0;
  const auto name = std::find(run.strings.begin(), run.strings.end(), "backward");
  if (name == run.strings.end()) return 0;
  const auto id = std::int32_t(name - run.strings.begin());
  std::size_t passes = 0;
  for (const auto& r : run.ranks[0].nvtx_ranges) passes += r.name == id ? 1 : 0;
  return double(passes) / double(steps.steps.size());
}

Finding unused_parameters(const run::DdpSettings& ddp) {
  Finding f;
  f.kind = FindingKind::FrameworkSetting;
  f.severity = Severity::Info;
  f.title = "DDP searches the autograd graph for unused parameters every iteration and finds none";
  f.evidence = {{"unused_parameter_bytes", 0.0}, {"sampled_iterations", double(ddp.sampled_iterations)}};
  f.evidence_text = fmt::format(
      "find_unused_parameters=True, and DDP's reducer found 0 bytes of unused parameters in each of the {} iterations "
      "it sampled (the first 10, then every 100th); the search runs at the end of every forward.",
      ddp.sampled_iterations);
  f.suggestion =
      "DistributedDataParallel(..., find_unused_parameters=False) (now True): every parameter gets a gradient in "
      "the iterations DDP looked at; keep True only if some iterations leave parameters out (control flow in "
      "forward), which DDP would then report as an error.";
  return f;
}

}  // namespace

std::vector<Finding> detect_ddp_knobs(const DetectorInput& in) {
  const Run& run = in.run;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  if (run.ranks.size() < 2) return out;
  const auto ddp = run::ddp_settings(run);
  if (!ddp) return out;

  if (ddp->find_unused_parameters && ddp->find_unused_parameters->value &&
      !(ddp->static_graph && ddp->static_graph->value) && ddp->unused_parameter_bytes == 0 &&
      ddp->sampled_iterations >= limits.ddp_min_sampled_iterations)
    out.push_back(unused_parameters(*ddp));

  // Intra-op threads: more than the host's CPUs, and the training threads waiting for a CPU.
  for (const auto& host : ddp->hosts) {
    if (host.cpus <= 0 || host.threads <= host.cpus || !ddp->num_threads) continue;
    const auto waiting = run_queue_share(run, host.host);
    if (!waiting || *waiting < limits.ddp_threads_min_run_queue_share) continue;
    const int suggested = std::max(1, host.cpus / host.ranks);
    if (suggested >= ddp->num_threads->value) continue;  // never the value in effect (or more threads)
    Finding f;
    f.kind = FindingKind::FrameworkSetting;
    f.severity = Severity::Warning;
    f.ranks.clear();
    for (const auto& r : run.ranks)
      if (r.host == host.host) f.ranks.push_back(r.world_rank);
    f.title = fmt::format("{} ranks on {} compute with {} torch threads on {} CPUs; their training threads wait for a "
                          "CPU {:.0f} % of the time",
                          host.ranks, host.host.empty() ? "one host" : host.host, host.threads, host.cpus,
                          100 * *waiting);
    // The cost: the training threads' wait for a CPU over the measured steps (what fewer threads give back at most).
    f.cost_ns = *waiting * steps.median_step_ns * double(std::max(0, steps.measured_steps()));
    f.evidence = {{"ranks_on_host", double(host.ranks)},
                  {"torch_threads_on_host", double(host.threads)},
                  {"cpus", double(host.cpus)},
                  {"run_queue_pct", 100 * *waiting},
                  {"num_threads", double(ddp->num_threads->value)},
                  {"suggested_num_threads", double(suggested)}};
    f.evidence_text = fmt::format(
        "torch.get_num_threads() is {} on the first rank ({} intra-op threads over the host's {} ranks) and the ranks "
        "may run on {} CPUs; the threads that run the training loop were runnable but waiting for a CPU {:.0f} % "
        "of their traced time (their scheduler counters).",
        ddp->num_threads->value, host.threads, host.ranks, host.cpus, 100 * *waiting);
    f.suggestion = fmt::format(
        "torch.set_num_threads({}) in each rank (now {}; or OMP_NUM_THREADS={} in its environment): {} CPUs over {} "
        "ranks, so that the ranks' threads do not take each other's CPUs.",
        suggested, ddp->num_threads->value, suggested, host.cpus, host.ranks);
    out.push_back(std::move(f));
  }

  // Gradient accumulation: exposed bucket allreduces a large share of the step, buckets not the cause, nor ranks
  // that take each other's CPUs (their allreduces wait for a CPU too).
  const bool oversubscribed = !out.empty() && out.back().suggestion.starts_with("torch.set_num_threads");
  if (!oversubscribed && steps.measured_steps() > 0 && steps.median_step_ns > 0 && ddp->least_exposed_comm_ns &&
      !ddp->bucket_bytes.empty()) {
    const double exposed = *ddp->least_exposed_comm_ns, step = steps.median_step_ns;
    double grads = 0;
    for (const auto b : ddp->bucket_bytes) grads += double(b);
    const double bucket = double(ddp->bucket_bytes[ddp->bucket_bytes.size() / 2]);
    const bool small_buckets = double(ddp->bucket_bytes.size()) >= limits.ddp_min_buckets_per_step &&
                               bucket < double(limits.fusable_message_bytes) &&
                               ddp->bucket_cap_mb.value * 1048576.0 < grads;
    const double passes = backward_passes_per_step(run, steps);
    if (!small_buckets && passes > 0 && passes < 1.5 && exposed < step &&
        exposed >= limits.ddp_accumulate_min_exposed_share * step) {
      // k micro-batches per allreduce: the exposed allreduce per sample down to the target share of a step.
      const double compute = step - exposed;
      const double share = limits.ddp_accumulate_target_share;
      const int k = int(std::clamp(std::ceil(exposed * (1 - share) / (share * compute)), 2.0, 16.0));
      Finding f;
      f.kind = FindingKind::ExposedCommunication;
      f.severity = Severity::Warning;
      f.title = fmt::format("DDP's gradient allreduces add {} after backward to every {} step; each step syncs", 
                            format_ms(exposed), format_ms(step));
      f.cost_ns = exposed * (1.0 - 1.0 / k) * double(steps.measured_steps());
      f.evidence = {{"exposed_comm_per_step_ns", exposed}, {"step_time_ns", step},
                    {"share_of_step_pct", 100 * exposed / step}, {"backward_passes_per_step", passes},
                    {"suggested_accumulation_steps", double(k)}};
      f.evidence_text = fmt::format(
          "DDP's timers: its bucket allreduces end {} after backward's compute on the rank that waited least (mean "
          "over the {} iterations it sampled), {:.0f} % of the median step ({}); one backward pass per optimizer "
          "step, so every step pays it.",
          format_ms(exposed), ddp->sampled_iterations, 100 * exposed / step, format_ms(step));
      f.suggestion = fmt::format(
          "Accumulate gradients over {} micro-batches: run the first {} backward passes inside `with model.no_sync():` "
          "and step the optimizer after the last, so DDP allreduces once per {} micro-batches. It changes the "
          "optimisation as a {}× larger batch does (adjust the learning rate). The allreduce time backward does "
          "not hide then comes once per {} micro-batches: {} less per micro-batch from it alone (the optimizer step, "
          "also once per {}, and backward without allreduces beside it save more).",
          k, k - 1, k, k, k, format_ms(exposed * (1.0 - 1.0 / k)), k);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace collscope::analyzer
