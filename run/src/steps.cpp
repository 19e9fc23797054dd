// Steps: NVTX step ranges, or the period of the collective pattern on the reference communicator.
#include <collscope/run/steps.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include <collscope/run/call_index.hpp>
#include <collscope/run/statistics.hpp>

namespace collscope::run {
namespace {

struct Window {
  std::int64_t start_ns, end_ns;  // raw, rank clock
};

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

// Per step and rank index: how much later than the other ranks (their median) the rank started the step's phases,
// the NVTX ranges inside its step range matched by name, measured from its own step's start; the largest lag over
// the phase names, 0 when not late. Only names every rank has in nearly every step count (a rank-specific range
// says nothing by its start). A Horovod-style job negotiates in a background thread, so its collectives start
// together on all ranks and a straggler shows only here.
void add_phase_lag(const Run& run, const StepNames& step_names, const std::vector<std::vector<Window>>& windows,
                   std::vector<Step>& steps) {
  const std::size_t n = run.ranks.size(), nsteps = steps.size();
  for (auto& st : steps) st.rank_phase_lag_ns.assign(n, 0);
  if (n < 2 || nsteps == 0) return;
  // offsets[name][rank * nsteps + step]: first start of the phase in the step − the step's start (ns), −1 if none.
  std::map<std::int32_t, std::vector<double>> offsets;
  for (std::size_t r = 0; r < n; ++r) {
    const auto& w = windows[r];
    for (const auto& x : run.ranks[r].nvtx_ranges) {
      if (step_names.contains(x.name)) continue;
      auto it = std::upper_bound(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(std::min(nsteps, w.size())), x.start_ns,
                                 [](std::int64_t v, const Window& win) { return v < win.start_ns; });
      if (it == w.begin()) continue;
      --it;
      if (x.start_ns >= it->end_ns) continue;
      auto& per = offsets[x.name];
      if (per.empty()) per.assign(n * nsteps, -1);
      double& slot = per[r * nsteps + static_cast<std::size_t>(it - w.begin())];
      const double off = double(x.start_ns - it->start_ns);
      if (slot < 0 || off < slot) slot = off;
    }
  }
  std::vector<double> others;
  for (const auto& [name, per] : offsets) {
    std::size_t present = 0;
    for (double v : per) present += v >= 0;
    if (present < n * nsteps * 9 / 10) continue;
    for (std::size_t k = 0; k < nsteps; ++k)
      for (std::size_t r = 0; r < n; ++r) {
        if (per[r * nsteps + k] < 0) continue;
        others.clear();
        for (std::size_t o = 0; o < n; ++o)
          if (o != r && per[o * nsteps + k] >= 0) others.push_back(per[o * nsteps + k]);
        if (others.empty()) continue;
        double& lag = steps[k].rank_phase_lag_ns[r];
        lag = std::max(lag, per[r * nsteps + k] - median_of(others));
      }
  }
}

// Smallest period p (in calls) with which the (op, bytes) sequence repeats for >= 90 % of the calls.
int find_period(const std::vector<std::pair<int, std::int64_t>>& sig) {
  const std::size_t n = sig.size();
  for (std::size_t p = 1; p <= n / 3; ++p) {
    std::size_t same = 0;
    for (std::size_t i = 0; i + p < n; ++i) same += sig[i] == sig[i + p];
    if (same >= 0.9 * static_cast<double>(n - p)) return static_cast<int>(p);
  }
  return 0;
}

}  // namespace

bool is_step_range_name(std::string_view name, std::string_view range_name) {
  if (range_name.empty() || name.size() < range_name.size()) return false;
  for (std::size_t i = 0; i < range_name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(name[i])) != std::tolower(static_cast<unsigned char>(range_name[i])))
      return false;
  return name.size() == range_name.size() || !std::isalpha(static_cast<unsigned char>(name[range_name.size()]));
}

StepNames::StepNames(const Run& run, std::string_view range_name) : ids_(run.strings.size(), false) {
  for (std::size_t i = 1; i < run.strings.size(); ++i)
    if (is_step_range_name(run.strings[i], range_name)) ids_[i] = true, ++count_;
}

StepSummary StepDetector::detect(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched) const {
  StepSummary out;
  const std::size_t nranks = run.ranks.size();
  const StepNames step_names(run, options_.range_name);
  auto windows = nvtx_windows(run, step_names);
  std::size_t steps = SIZE_MAX;
  for (const auto& w : windows) steps = std::min(steps, w.size());
  out.source = "nvtx";
  if (steps == 0 || steps == SIZE_MAX) {
    // Inferred: the pattern of the reference communicator's calls on the first rank.
    windows.assign(nranks, {});
    const int ref = nranks > 0 ? matched.reference_comm : -1;
    steps = 0;
    if (ref >= 0) {
      std::size_t calls = SIZE_MAX;
      for (std::size_t r = 0; r < nranks; ++r) calls = std::min(calls, matched.call_index[r][ref].size());
      std::vector<std::pair<int, std::int64_t>> sig;
      for (std::size_t s = 0; s < calls; ++s) {
        const auto j = matched.call_index[0][ref][s];
        const auto& c = run.ranks[0].collectives[j < 0 ? 0 : j];
        sig.emplace_back(static_cast<int>(c.op), c.bytes);
      }
      const int p = find_period(sig);
      if (p > 0 && calls / p >= 2) {
        out.period_calls = p;
        steps = calls / p;
        for (std::size_t r = 0; r < nranks; ++r) {
          const auto& idx = matched.call_index[r][ref];
          const auto& cs = run.ranks[r].collectives;
          for (std::size_t k = 0; k < steps; ++k) {
            const auto a = idx[k * p];
            const auto b = k + 1 < steps ? idx[(k + 1) * p] : idx[(k + 1) * p - 1];
            if (a < 0 || b < 0) continue;
            windows[r].push_back({cs[a].start_ns, k + 1 < steps ? cs[b].start_ns : cs[b].end_ns});
          }
        }
        for (const auto& w : windows) steps = std::min(steps, w.size());
        out.source = "inferred";
      }
    }
    if (steps == 0) {
      out.source = "none";
      return out;
    }
  }

  out.steps.resize(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    auto& st = out.steps[k];
    st.index = static_cast<int>(k);
    st.rank_duration_ns.assign(nranks, 0);
    st.rank_wait_ns.assign(nranks, 0);
    st.rank_lateness_ns.assign(nranks, 0);
    st.start_ns = INT64_MAX;
    st.end_ns = INT64_MIN;
  }
  if (out.source == "nvtx") add_phase_lag(run, step_names, windows, out.steps);
  else for (auto& st : out.steps) st.rank_phase_lag_ns.assign(nranks, 0);
  std::vector<double> comm(steps * nranks, 0), exposed(steps * nranks, 0);
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& rank = run.ranks[r];
    const auto& w = windows[r];
    for (std::size_t k = 0; k < steps; ++k) {
      auto& st = out.steps[k];
      st.rank_duration_ns[r] = static_cast<double>(w[k].end_ns - w[k].start_ns);
      st.start_ns = std::min(st.start_ns, clocks.aligned(static_cast<int>(r), w[k].start_ns));
      st.end_ns = std::max(st.end_ns, clocks.aligned(static_cast<int>(r), w[k].end_ns));
    }
    // Compute overlapping communication hides it: GPU kernels that are not NCCL's, and the innermost NVTX ranges
    // (other than steps) of threads that make no collectives, as a Horovod-style job's forward/backward on the
    // main thread while a background thread communicates. Ranges on a thread that makes collectives do not
    // count: a blocking call inside one is not hidden by it.
    std::vector<Window> compute;
    for (const auto& g : rank.gpu_activities) {
      if (g.kind != store::GpuActivityKind::Kernel) continue;
      const auto& name = run.strings[g.name];
      if (name.find("nccl") != std::string::npos) continue;
      compute.push_back({g.start_ns, g.end_ns});
    }
    for (const auto& w : cpu_compute_windows(step_names, rank)) {
      compute.push_back(w);
      out.cpu_compute_ranges = true;
    }
    std::sort(compute.begin(), compute.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    std::vector<Window> merged;
    for (const auto& c : compute) {
      if (!merged.empty() && c.start_ns <= merged.back().end_ns) merged.back().end_ns = std::max(merged.back().end_ns, c.end_ns);
      else merged.push_back(c);
    }
    auto overlap_with_compute = [&](std::int64_t a, std::int64_t b) {
      std::int64_t total = 0;
      auto it = std::lower_bound(merged.begin(), merged.end(), a, [](const Window& x, std::int64_t v) { return x.end_ns < v; });
      for (; it != merged.end() && it->start_ns < b; ++it) total += std::max<std::int64_t>(0, std::min(b, it->end_ns) - std::max(a, it->start_ns));
      return total;
    };
    std::vector<std::int32_t> order(rank.collectives.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return rank.collectives[a].start_ns < rank.collectives[b].start_ns; });
    std::int64_t covered_until = INT64_MIN;  // union of call intervals
    std::size_t k = 0;
    for (auto j : order) {
      const auto& call = rank.collectives[j];
      while (k < steps && call.start_ns >= w[k].end_ns) ++k;
      if (k >= steps) break;
      if (call.start_ns < w[k].start_ns) continue;  // between steps
      const std::int64_t a = std::max(call.start_ns, covered_until);
      const std::int64_t b = std::min(call.end_ns, w[k].end_ns);
      covered_until = std::max(covered_until, call.end_ns);
      // Waiting for the last arriver of the instance.
      std::int64_t wait = 0;
      const std::size_t lo = matched.comm_first[call.comm], hi = matched.comm_first[call.comm + 1];
      std::size_t pos = lo + static_cast<std::size_t>(call.seq);
      if (pos >= hi || matched.instances[pos].seq != call.seq) {
        auto it = std::lower_bound(matched.instances.begin() + lo, matched.instances.begin() + hi, call.seq,
                                   [](const InstanceSummary& s, std::int32_t v) { return s.seq < v; });
        pos = static_cast<std::size_t>(it - matched.instances.begin());
      }
      std::int64_t lateness = 0;
      if (pos < hi && matched.instances[pos].seq == call.seq) {
        const auto& inst = matched.instances[pos];
        const std::int64_t arrival = clocks.aligned(static_cast<int>(r), call.start_ns);
        wait = std::max<std::int64_t>(0, std::min(inst.last_arrival_ns, clocks.aligned(static_cast<int>(r), call.end_ns)) - arrival);
        if (inst.ranks >= 2) lateness = std::max<std::int64_t>(0, arrival - inst.first_arrival_ns);
      }
      out.steps[k].rank_wait_ns[r] += static_cast<double>(wait);
      out.steps[k].rank_lateness_ns[r] += static_cast<double>(lateness);
      if (b <= a) continue;
      comm[k * nranks + r] += static_cast<double>(b - a);
      // Exposed: the transfer part of the call (after the last arrival) that no compute overlaps. Waiting is
      // counted on its own, whether or not compute ran meanwhile.
      const std::int64_t transfer_a = std::max(a, call.start_ns + wait);
      if (b > transfer_a)
        exposed[k * nranks + r] += static_cast<double>(std::max<std::int64_t>(0, b - transfer_a - overlap_with_compute(transfer_a, b)));
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
  out.warmup_steps = std::clamp(options_.warmup_steps, 0, static_cast<int>(steps));
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
