// Steps: NVTX step ranges, or the period of the collective pattern on the reference communicator.
#include <collscope/run/steps.hpp>

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>

#include <collscope/run/call_index.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/wait_states.hpp>

#include "step_inference.hpp"

namespace collscope::run {
namespace {

using Window = detail::StepWindow;

// CPU compute of `rank`: its innermost NVTX ranges other than steps that hold no collective call of their own
// thread (a range around a blocking call does not hide it; forward/backward on the main thread while a
// background thread communicates does).
std::vector<Window> cpu_compute_windows(const StepNames& step_names, const RankTrace& rank) {
  std::vector<const NvtxRange*> ranges;
  for (const auto& n : rank.nvtx_ranges)
    if (n.end_ns > n.start_ns && !step_names.contains(n.name)) ranges.push_back(&n);
  if (ranges.empty()) return {};
  std::sort(ranges.begin(), ranges.end(), [](auto* a, auto* b) {
    return a->thread != b->thread ? a->thread < b->thread : a->start_ns < b->start_ns;
  });
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;  // (thread, start), sorted
  calls.reserve(rank.collectives.size());
  for (const auto& c : rank.collectives) calls.emplace_back(c.thread, c.start_ns);
  std::sort(calls.begin(), calls.end());
  std::vector<Window> out;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = *ranges[i];
    const bool has_child = i + 1 < ranges.size() && ranges[i + 1]->thread == r.thread && ranges[i + 1]->start_ns < r.end_ns;
    if (has_child) continue;
    const auto call = std::lower_bound(calls.begin(), calls.end(), std::pair(r.thread, r.start_ns));
    if (call != calls.end() && call->first == r.thread && call->second < r.end_ns) continue;
    out.push_back({r.start_ns, r.end_ns});
  }
  return out;
}

// GPU compute of `rank`: its kernels that are not NCCL's (NCCL's kernels are its communication).
std::vector<Window> gpu_kernel_windows(const Run& run, const RankTrace& rank) {
  std::vector<Window> out;
  for (const auto& g : rank.gpu_activities)
    if (g.kind == store::GpuActivityKind::Kernel && run.strings[g.name].find("nccl") == std::string::npos)
      out.push_back({g.start_ns, g.end_ns});
  return out;
}

// The union of `windows`: sorted by start, overlapping ones merged.
std::vector<Window> union_of(std::vector<Window> windows) {
  std::sort(windows.begin(), windows.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  std::vector<Window> merged;
  for (const auto& c : windows) {
    if (!merged.empty() && c.start_ns <= merged.back().end_ns) merged.back().end_ns = std::max(merged.back().end_ns, c.end_ns);
    else merged.push_back(c);
  }
  return merged;
}

// Time of [a, b) inside the union `merged` (union_of), ns.
std::int64_t time_inside(const std::vector<Window>& merged, std::int64_t a, std::int64_t b) {
  std::int64_t total = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), a, [](const Window& x, std::int64_t v) { return x.end_ns < v; });
  for (; it != merged.end() && it->start_ns < b; ++it) total += std::max<std::int64_t>(0, std::min(b, it->end_ns) - std::max(a, it->start_ns));
  return total;
}

// Per rank index, the step windows from NVTX step ranges.
std::vector<std::vector<Window>> nvtx_windows(const Run& run, const StepNames& step_names) {
  std::vector<std::vector<Window>> out(run.ranks.size());
  if (step_names.empty()) return out;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    for (const auto& n : run.ranks[r].nvtx_ranges)
      if (step_names.contains(n.name) && n.end_ns > n.start_ns) out[r].push_back({n.start_ns, n.end_ns});
    std::sort(out[r].begin(), out[r].end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  }
  return out;
}

}  // namespace

bool is_step_range_name(std::string_view name, std::string_view range_name) {
  if (range_name.empty() || name.size() < range_name.size()) return false;
  for (std::size_t i = 0; i < range_name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(name[i])) != std::tolower(static_cast<unsigned char>(range_name[i])))
      return false;
  return name.size() == range_name.size() || !std::isalpha(static_cast<unsigned char>(name[range_name.size()]));
}

std::string_view step_method_name(StepMethod m) {
  switch (m) {
    case StepMethod::None: return "none";
    case StepMethod::Nvtx: return "nvtx";
    case StepMethod::CallPattern: return "call_pattern";
    case StepMethod::PayloadBytes: return "payload_bytes";
  }
  return "none";
}

int StepSummary::step_at(std::int64_t t) const {
  auto it = std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t v, const Step& s) { return v < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - steps.begin()) : -1;
}

std::string_view StepSummary::confidence_label() const {
  return confidence >= 0.8 ? "high" : confidence >= 0.5 ? "medium" : "low";
}

StepNames::StepNames(const Run& run, std::string_view range_name) : ids_(run.strings.size(), false) {
  for (std::size_t i = 1; i < run.strings.size(); ++i)
    if (is_step_range_name(run.strings[i], range_name)) ids_[i] = true, ++count_;
}

StepSummary StepDetector::detect(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched) const {
  StepSummary out;
  out.range_name = options_.range_name;
  const std::size_t nranks = run.ranks.size();
  const StepNames step_names(run, options_.range_name);
  auto windows = nvtx_windows(run, step_names);
  std::size_t steps = SIZE_MAX;
  for (const auto& w : windows) steps = std::min(steps, w.size());
  out.source = "nvtx";
  out.method = StepMethod::Nvtx;
  out.confidence = 1;
  bool first_partial = false;
  if (steps == 0 || steps == SIZE_MAX) {
    auto inferred = detail::infer_steps(run, matched);
    out.basis = std::move(inferred.basis);
    // A pattern that barely holds (it covers a sliver of the communicator's time, or its steps are irregular) is
    // no claim of steps: the report says what was seen and that it was not taken as steps.
    if (!inferred.windows.empty() && inferred.confidence < kMinInferredStepConfidence) {
      out.basis = fmt::format("no steps claimed: {} (confidence {:.2f}, below {})", out.basis, inferred.confidence,
                              kMinInferredStepConfidence);
      inferred.windows.clear();
    }
    if (inferred.windows.empty()) {
      out.source = "none";
      out.method = StepMethod::None;
      out.confidence = 0;
      return out;
    }
    windows = std::move(inferred.windows);
    steps = windows.front().size();
    out.source = "inferred";
    out.method = inferred.method;
    out.confidence = inferred.confidence;
    out.period_calls = inferred.period_calls;
    out.bytes_per_step = inferred.bytes_per_step;
    first_partial = inferred.first_step_partial;
  } else {
    out.basis = fmt::format("NVTX ranges named \"{}\" on every rank", options_.range_name);
  }

  out.steps.resize(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    auto& st = out.steps[k];
    st.index = static_cast<int>(k);
    st.rank_duration_ns.assign(nranks, 0);
    st.rank_wait_ns.assign(nranks, 0);
    st.rank_start_ns.assign(nranks, 0);
    st.start_ns = INT64_MAX;
    st.end_ns = INT64_MIN;
  }
  std::vector<double> comm(steps * nranks, 0), exposed(steps * nranks, 0);
  std::vector<double> compute_in_step(steps * nranks, 0), comm_overlap(steps * nranks, 0);
  std::vector<bool> compute_recorded(nranks, false);
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& rank = run.ranks[r];
    const auto& w = windows[r];
    for (std::size_t k = 0; k < steps; ++k) {
      auto& st = out.steps[k];
      st.rank_duration_ns[r] = static_cast<double>(w[k].end_ns - w[k].start_ns);
      st.rank_start_ns[r] = clocks.aligned(static_cast<int>(r), w[k].start_ns);
      st.start_ns = std::min(st.start_ns, clocks.aligned(static_cast<int>(r), w[k].start_ns));
      st.end_ns = std::max(st.end_ns, clocks.aligned(static_cast<int>(r), w[k].end_ns));
    }
    // Compute overlapping communication hides it: GPU kernels that are not NCCL's, and the innermost NVTX ranges
    // (other than steps) of threads that make no collectives, as a Horovod-style job's forward/backward on the
    // main thread while a background thread communicates. Ranges on a thread that makes collectives do not
    // count: a blocking call inside one is not hidden by it.
    std::vector<Window> compute = gpu_kernel_windows(run, rank);
    // The breakdown's compute is GPU kernels alone: an NVTX phase on a CPU holds whatever its thread did, waits
    // included (a Horovod job's optimizer range holds its wait for the allreduces), so it is not compute.
    const std::vector<Window> kernels = union_of(compute);
    compute_recorded[r] = !kernels.empty();
    for (std::size_t k = 0; k < steps; ++k)
      compute_in_step[k * nranks + r] = double(time_inside(kernels, w[k].start_ns, w[k].end_ns));
    for (const auto& range : cpu_compute_windows(step_names, rank)) {
      compute.push_back(range);
      out.cpu_compute_ranges = true;
    }
    const std::vector<Window> merged = union_of(std::move(compute));
    // Time inside MPI (run/wait_states.hpp): a blocking collective's span; a non-blocking one's posting call and
    // its completion calls, the rest of its span being the rank's own work.
    const auto pieces = mpi_pieces(rank, false);
    std::int64_t covered_until = INT64_MIN;  // union of the pieces
    std::size_t k = 0;
    for (const auto& piece : pieces) {
      const auto& call = rank.collectives[piece.call];
      const std::int64_t p_start = piece.span.start_ns, p_end = piece.span.end_ns;
      while (k < steps && p_start >= w[k].end_ns) ++k;
      if (k >= steps) break;
      if (p_start < w[k].start_ns) continue;  // between steps
      const std::int64_t a = std::max(p_start, covered_until);
      const std::int64_t b = std::min(p_end, w[k].end_ns);
      covered_until = std::max(covered_until, p_end);
      // Waiting for the last arriver of the instance: in a blocking call from its entry, in a non-blocking one from
      // the start of its completion calls (posting does not wait).
      std::int64_t wait = 0;
      const std::size_t lo = matched.comm_first[call.comm], hi = matched.comm_first[call.comm + 1];
      std::size_t pos = lo + static_cast<std::size_t>(call.seq);
      if (pos >= hi || matched.instances[pos].seq != call.seq) {
        auto it = std::lower_bound(matched.instances.begin() + lo, matched.instances.begin() + hi, call.seq,
                                   [](const InstanceSummary& s, std::int32_t v) { return s.seq < v; });
        pos = static_cast<std::size_t>(it - matched.instances.begin());
      }
      const bool may_wait = piece.completion || !is_nonblocking(call.op);
      if (may_wait && pos < hi && matched.instances[pos].seq == call.seq)
        wait = std::max<std::int64_t>(0, std::min(matched.instances[pos].last_arrival_ns, clocks.aligned(static_cast<int>(r), p_end)) -
                                             clocks.aligned(static_cast<int>(r), p_start));
      out.steps[k].rank_wait_ns[r] += static_cast<double>(wait);
      if (b <= a) continue;
      comm[k * nranks + r] += static_cast<double>(b - a);
      comm_overlap[k * nranks + r] += static_cast<double>(time_inside(kernels, a, b));
      // Exposed: the transfer part of the call (after the last arrival) that no compute overlaps. Waiting is
      // counted on its own, whether or not compute ran meanwhile.
      const std::int64_t transfer_a = std::max(a, p_start + wait);
      if (b > transfer_a)
        exposed[k * nranks + r] += static_cast<double>(std::max<std::int64_t>(0, b - transfer_a - time_inside(merged, transfer_a, b)));
    }
  }
  double sum_step = 0, sum_comm = 0, sum_exposed = 0, sum_wait = 0;
  std::vector<double> durations;
  for (std::size_t k = 0; k < steps; ++k) {
    auto& st = out.steps[k];
    for (std::size_t r = 0; r < nranks; ++r) {
      st.duration_ns += st.rank_duration_ns[r] / nranks;
      st.comm_ns += comm[k * nranks + r] / nranks;
      st.wait_ns += st.rank_wait_ns[r] / nranks;
      st.exposed_comm_ns += exposed[k * nranks + r] / nranks;
    }
  }
  // A first step seen only from its first payload call is never measured (it lacks its compute).
  out.warmup_steps = std::clamp(std::max(options_.warmup_steps, first_partial ? 1 : 0), 0, static_cast<int>(steps));
  const std::size_t first = static_cast<std::size_t>(out.warmup_steps);
  if (first == steps) return out;  // no measured step yet
  for (std::size_t k = first; k < steps; ++k) {
    const auto& st = out.steps[k];
    sum_step += st.duration_ns;
    sum_comm += st.comm_ns;
    sum_exposed += st.exposed_comm_ns;
    sum_wait += st.wait_ns;
    durations.push_back(st.duration_ns);
  }
  const double measured = static_cast<double>(steps - first);
  out.rank_breakdown.assign(nranks, {});
  for (std::size_t r = 0; r < nranks; ++r) {
    auto& b = out.rank_breakdown[r];
    b.compute_recorded = compute_recorded[r];
    for (std::size_t k = first; k < steps; ++k) {
      const std::size_t i = k * nranks + r;
      b.step_ns += out.steps[k].rank_duration_ns[r] / measured;
      b.compute_ns += compute_in_step[i] / measured;
      b.comm_ns += comm[i] / measured;
      b.overlap_ns += comm_overlap[i] / measured;
    }
    b.other_ns = std::max(0.0, b.step_ns - (b.compute_ns + b.comm_ns - b.overlap_ns));
  }
  out.mean_step_ns = sum_step / measured;
  out.median_step_ns = median_of(durations);
  out.mean_comm_ns = sum_comm / measured;
  out.mean_exposed_ns = sum_exposed / measured;
  out.mean_wait_ns = sum_wait / measured;
  std::int64_t last_end = out.steps[first].end_ns;
  for (std::size_t k = first; k < steps; ++k) last_end = std::max(last_end, out.steps[k].end_ns);
  out.span_ns = last_end - out.steps[first].start_ns;
  if (options_.batch_size > 0 && out.span_ns > 0)
    out.throughput_samples_per_s =
        double(options_.batch_size) * double(nranks) * measured / (double(out.span_ns) / 1e9);
  return out;
}

}  // namespace collscope::run
