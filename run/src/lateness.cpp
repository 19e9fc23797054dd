// Lateness and wait per step and rank, from the synchronising collectives or from the NVTX phases of the steps.
#include <collscope/run/lateness.hpp>

#include <collscope/run/format.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/thread_counters.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace collscope::run {
namespace {

constexpr double kCommonPhaseShare = 0.9;  // a phase every rank has in this share of the steps is a boundary



// Whether every rank has scheduler counters (two samples or more) on its thread `thread[r]`: the causes are
// measured only then, so without them the windows of own time need not be built (a run without CPU samples, before
// schema 1.4 or with COLLSCOPE_CPU_SAMPLE_US=0, saves ranks × steps of them).
bool every_rank_has_counters(const Run& run, const std::vector<std::int64_t>& thread) {
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    if (thread[r] < 0) return false;
    int samples = 0;
    for (const auto& s : run.ranks[r].cpu_samples)
      if (s.thread == thread[r] && ++samples >= 2) break;
    if (samples < 2) return false;
  }
  return true;
}

// Run-queue delay of thread `thread` of rank `r` inside its measured steps' windows (Lateness::step_thread_wait);
// zeros without its counters. With `beside` (another thread of the rank), only the wait beyond that thread's CPU
// time in the window: what it waited for other than its own rank's thread.
RunQueueWait run_queue_in_steps(const Run& run, const ClockAlignment& clocks, const StepSummary& steps, std::size_t r,
                                std::int64_t thread, std::int64_t beside = -1) {
  const ThreadCounters counters(run.ranks[r], thread, clocks.offset_ns[r]);
  std::optional<ThreadCounters> other;
  if (beside >= 0) other.emplace(run.ranks[r], beside, clocks.offset_ns[r]);
  double waited = 0, window = 0;  // ns, over the measured steps
  std::vector<double> shares;
  for (std::size_t k = static_cast<std::size_t>(steps.warmup_steps); k < steps.steps.size(); ++k) {
    const Step& st = steps.steps[k];
    if (r >= st.rank_start_ns.size() || r >= st.rank_duration_ns.size() || !(st.rank_duration_ns[r] > 0)) continue;
    const std::int64_t a = st.rank_start_ns[r], b = a + static_cast<std::int64_t>(st.rank_duration_ns[r]);
    const auto d = counters.over(a, b);
    if (!d) continue;
    double wait = d->second;
    if (other) {
      const auto o = other->over(a, b);
      if (!o) continue;
      wait -= o->first;
    }
    wait = std::max(0.0, wait);
    waited += wait;
    window += st.rank_duration_ns[r];
    shares.push_back(std::clamp(wait / st.rank_duration_ns[r], 0.0, 1.0));
  }
  if (shares.empty() || !(window > 0)) return {};
  return {waited / double(shares.size()), std::clamp(waited / window, 0.0, 1.0), median_of(shares)};
}

// Each rank's thread `thread[r]` (Lateness::step_thread_wait) and, where another thread makes most of its
// synchronising collectives (a background communication thread: Horovod's, a fusion thread), that one
// (Lateness::comm_thread_wait).
void step_run_queue(const Run& run, const ClockAlignment& clocks, const StepSummary& steps,
                    const std::vector<std::int64_t>& thread, Lateness& out) {
  const std::size_t nranks = run.ranks.size();
  if (steps.measured_steps() <= 0) return;
  out.step_thread_wait.assign(nranks, {});
  out.comm_thread_wait.assign(nranks, {});
  for (std::size_t r = 0; r < nranks; ++r) {
    out.step_thread_wait[r] = run_queue_in_steps(run, clocks, steps, r, thread[r]);
    const std::int64_t comm = sync_thread(run.ranks[r]);
    if (comm >= 0 && comm != thread[r])
      out.comm_thread_wait[r] = run_queue_in_steps(run, clocks, steps, r, comm, thread[r]);
  }
}

// Own time of each rank in each step (aligned [start, end) windows) → on CPU / run queue / off CPU, then each
// rank's median excess over the others. `windows[r][k]`: the rank's own part of step k.
void causes_from_windows(const Run& run, const ClockAlignment& clocks, const StepSummary& steps,
                         const std::vector<std::int64_t>& thread, const OwnWindows& windows, Lateness& out) {
  if (!every_rank_has_counters(run, thread)) return;
  out.counters_thread = thread;
  step_run_queue(run, clocks, steps, thread, out);
  out.causes = causes_over_windows(run, clocks, thread, windows, static_cast<std::size_t>(out.first_measured));
}

void from_collectives(const Run& run, const ClockAlignment& clocks, const MatchedRun& m, const StepSummary& steps,
                      Lateness& out) {
  const std::size_t nranks = run.ranks.size();
  std::vector<std::int64_t> arrival(nranks);
  std::vector<int> present;
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    std::size_t calls = 0;
    for (std::size_t r = 0; r < nranks; ++r) calls = std::max(calls, m.call_index[r][c].size());
    for (std::size_t s = 0; s < calls; ++s) {
      present.clear();
      std::int64_t last = INT64_MIN, second = INT64_MIN;
      int last_rank = -1;
      bool synchronising = true;
      for (std::size_t r = 0; r < nranks; ++r) {
        const auto& idx = m.call_index[r][c];
        if (s >= idx.size() || idx[s] < 0) continue;
        const auto& call = run.ranks[r].collectives[idx[s]];
        synchronising = synchronising && store::is_synchronising(call.op);
        arrival[r] = clocks.aligned(static_cast<int>(r), call.start_ns);
        present.push_back(static_cast<int>(r));
        if (arrival[r] > last) second = last, last = arrival[r], last_rank = static_cast<int>(r);
        else if (arrival[r] > second) second = arrival[r];
      }
      if (present.size() < 2 || !synchronising) continue;
      const int k = steps.steps.empty() ? 0 : steps.step_at(last);
      if (k < 0) continue;  // between steps (set-up broadcasts, evaluation)
      out.lateness_ns[last_rank][k] += double(last - second);
      for (int r : present) out.wait_ns[r][k] += double(last - arrival[r]);
    }
  }
  // Causes: each rank's own time is the gaps between its calls on the thread that makes its synchronising ones.
  const std::size_t buckets = out.lateness_ns.empty() ? 0 : out.lateness_ns[0].size();
  std::vector<std::int64_t> thread(nranks, -1);
  for (std::size_t r = 0; r < nranks; ++r) thread[r] = sync_thread(run.ranks[r]);
  if (!every_rank_has_counters(run, thread)) return;
  OwnWindows windows(
      nranks, std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>(buckets));
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& calls = run.ranks[r].collectives;
    std::int64_t prev_end = INT64_MIN;
    for (const auto& c : calls) {
      if (c.thread != thread[r]) continue;
      const std::int64_t a = clocks.aligned(static_cast<int>(r), c.start_ns);
      if (prev_end != INT64_MIN && a > prev_end) {
        // The gap's part inside the step it ends in: a step marked by NVTX begins after the last call of the one
        // before ends, so the gap of its compute starts a little before it.
        const int k = steps.steps.empty() ? 0 : steps.step_at(a);
        std::int64_t from = prev_end;
        if (k >= 0 && !steps.steps.empty()) {
          const Step& st = steps.steps[static_cast<std::size_t>(k)];
          from = std::max(from, r < st.rank_start_ns.size() ? st.rank_start_ns[r] : st.start_ns);
        }
        if (k >= 0 && a > from) windows[r][static_cast<std::size_t>(k)].emplace_back(from, a);
      }
      prev_end = std::max(prev_end, clocks.aligned(static_cast<int>(r), c.end_ns));
    }
  }
  causes_from_windows(run, clocks, steps, thread, windows, out);
}

// Phase boundaries: (name id, is_end); the step's own start and end use name id -1.
using Boundary = std::pair<std::int32_t, bool>;

std::string boundary_text(const Run& run, const Boundary& b) {
  if (b.first < 0) return b.second ? "the step's end" : "the step's start";
  return fmt::format("the {} of {}", b.second ? "end" : "start", run.strings[b.first]);
}

std::string segment_label(const Run& run, const Boundary& a, const Boundary& b) {
  const auto name = [&](const Boundary& x) { return run.strings[x.first]; };
  if (a.first >= 0 && a.first == b.first && !a.second && b.second) return "in " + name(a);
  if (a.first >= 0 && b.first >= 0 && a.second && !b.second) return fmt::format("between {} and {}", name(a), name(b));
  if (a.first < 0 && !a.second && b.first >= 0 && !b.second) return "before " + name(b);
  if (b.first < 0 && b.second && a.first >= 0 && a.second) return "after " + name(a);
  return fmt::format("from {} to {}", boundary_text(run, a), boundary_text(run, b));
}

// False when the steps have no phase every rank has (then the collectives are the source).
bool from_phases(const Run& run, const ClockAlignment& clocks, const StepSummary& steps, Lateness& out) {
  const std::size_t nranks = run.ranks.size(), nsteps = steps.steps.size();
  if (steps.method != StepMethod::Nvtx || nranks < 2 || nsteps == 0) return false;
  const StepNames step_names(run, steps.range_name);
  // times[name][rank][step] = (first start, last end) inside the rank's step window, aligned; (0, 0) if absent.
  std::map<std::int32_t, std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>> times;
  for (std::size_t r = 0; r < nranks; ++r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> windows;  // aligned, in step order
    for (const auto& st : steps.steps)
      windows.emplace_back(st.rank_start_ns[r], st.rank_start_ns[r] + static_cast<std::int64_t>(st.rank_duration_ns[r]));
    for (const auto& x : run.ranks[r].nvtx_ranges) {
      if (step_names.contains(x.name) || x.end_ns <= x.start_ns) continue;
      const std::int64_t a = clocks.aligned(static_cast<int>(r), x.start_ns), z = clocks.aligned(static_cast<int>(r), x.end_ns);
      auto it = std::upper_bound(windows.begin(), windows.end(), a, [](std::int64_t v, const auto& w) { return v < w.first; });
      if (it == windows.begin()) continue;
      --it;
      if (a >= it->second) continue;
      const std::size_t k = static_cast<std::size_t>(it - windows.begin());
      auto& per_rank = times[x.name];
      if (per_rank.empty()) per_rank.assign(nranks, std::vector<std::pair<std::int64_t, std::int64_t>>(nsteps, {0, 0}));
      auto& slot = per_rank[r][k];
      if (slot.first == 0 || a < slot.first) slot.first = a;
      slot.second = std::max(slot.second, z);
    }
  }
  // Phases every rank has in nearly every step; a rank's own range (extra work only it does) is no boundary.
  std::vector<Boundary> bounds = {{-1, false}, {-1, true}};
  for (const auto& [name, per_rank] : times) {
    bool common = true;
    for (std::size_t r = 0; r < nranks && common; ++r) {
      std::size_t have = 0;
      for (const auto& slot : per_rank[r]) have += slot.first != 0;
      common = double(have) >= kCommonPhaseShare * double(nsteps);
    }
    if (common) bounds.push_back({name, false}), bounds.push_back({name, true});
  }
  if (bounds.size() == 2) return false;
  auto time_at = [&](const Boundary& b, std::size_t r, std::size_t k) -> std::int64_t {
    const auto& st = steps.steps[k];
    if (b.first < 0) return b.second ? st.rank_start_ns[r] + static_cast<std::int64_t>(st.rank_duration_ns[r]) : st.rank_start_ns[r];
    const auto& slot = times[b.first][r][k];
    return slot.first == 0 ? 0 : (b.second ? slot.second : slot.first);
  };
  // Boundaries in step order: by their median offset from the step's start.
  std::vector<std::pair<double, Boundary>> ordered;
  for (const auto& b : bounds) {
    std::vector<double> offsets;
    for (std::size_t k = 0; k < nsteps; ++k)
      for (std::size_t r = 0; r < nranks; ++r)
        if (const auto t = time_at(b, r, k)) offsets.push_back(double(t - steps.steps[k].rank_start_ns[r]));
    ordered.emplace_back(median_of(offsets), b);
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  // lag[b][r][k]; NaN where the rank has no such boundary in that step.
  const double none = std::nan("");
  std::vector<std::vector<std::vector<double>>> lag(ordered.size(), std::vector<std::vector<double>>(nranks, std::vector<double>(nsteps, none)));
  std::vector<double> others;
  for (std::size_t bi = 0; bi < ordered.size(); ++bi)
    for (std::size_t k = 0; k < nsteps; ++k)
      for (std::size_t r = 0; r < nranks; ++r) {
        const auto t = time_at(ordered[bi].second, r, k);
        if (t == 0) continue;
        others.clear();
        for (std::size_t o = 0; o < nranks; ++o)
          if (o != r)
            if (const auto u = time_at(ordered[bi].second, o, k)) others.push_back(double(u));
        if (!others.empty()) lag[bi][r][k] = double(t) - median_of(others);
      }
  // Each rank's synchronisation point: the boundary where it is furthest behind in the median step (one boundary
  // per rank, not the largest lag of each step, which the noise of every boundary would inflate).
  std::vector<double> v;
  auto median_lag_at = [&](std::size_t bi, std::size_t r) {
    v.clear();
    for (std::size_t k = static_cast<std::size_t>(out.first_measured); k < nsteps; ++k)
      if (!std::isnan(lag[bi][r][k])) v.push_back(lag[bi][r][k]);
    return median_of(v);
  };
  std::vector<std::vector<double>> median_lag(ordered.size(), std::vector<double>(nranks, 0));
  for (std::size_t bi = 0; bi < ordered.size(); ++bi)
    for (std::size_t r = 0; r < nranks; ++r) median_lag[bi][r] = median_lag_at(bi, r);
  std::size_t latest_rank = 0, latest_boundary = 0;
  for (std::size_t r = 0; r < nranks; ++r) {
    std::size_t worst = 0;
    for (std::size_t bi = 1; bi < ordered.size(); ++bi)
      if (median_lag[bi][r] > median_lag[worst][r]) worst = bi;
    for (std::size_t k = 0; k < nsteps; ++k)
      out.lateness_ns[r][k] = std::isnan(lag[worst][r][k]) ? 0.0 : std::max(0.0, lag[worst][r][k]);
    if (median_lag[worst][r] > median_lag[latest_boundary][latest_rank]) latest_rank = r, latest_boundary = worst;
  }
  for (std::size_t r = 0; r < nranks; ++r)
    for (std::size_t k = 0; k < nsteps; ++k) {
      double peak = 0;
      for (std::size_t bi = 0; bi < ordered.size(); ++bi)
        if (!std::isnan(lag[bi][r][k])) peak = std::max(peak, lag[bi][r][k]);
      out.peak_lateness_ns[r][k] = peak;
    }
  for (std::size_t k = 0; k < nsteps; ++k) {
    double latest = 0;
    for (std::size_t r = 0; r < nranks; ++r) latest = std::max(latest, out.lateness_ns[r][k]);
    for (std::size_t r = 0; r < nranks; ++r) out.wait_ns[r][k] = latest - out.lateness_ns[r][k];
  }
  // Where the ranks fall behind: the change of each rank's median lag from one boundary to the next.
  for (std::size_t bi = 0; bi + 1 < ordered.size(); ++bi) {
    LagSegment seg;
    seg.label = segment_label(run, ordered[bi].second, ordered[bi + 1].second);
    for (std::size_t r = 0; r < nranks; ++r) seg.lag_gain_ns.push_back(median_lag[bi + 1][r] - median_lag[bi][r]);
    out.segments.push_back(std::move(seg));
  }
  // Causes: every rank's own part of a step is where the latest rank falls behind: the segments between
  // consecutive boundaries over which its median lag grows, on the thread that marks the steps.
  {
    std::vector<std::int64_t> thread(nranks, -1);
    OwnWindows windows(
        nranks, std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>(nsteps));
    for (std::size_t r = 0; r < nranks; ++r) {
      thread[r] = step_thread(run.ranks[r], step_names);
      // Behind already at the step's start: it fell behind between steps (data loading, the input pipeline),
      // from the previous step's end to this one's start.
      if (ordered.front().second == Boundary{-1, false} && median_lag.front()[latest_rank] > 0)
        for (std::size_t k = 1; k < nsteps; ++k) {
          const std::int64_t a = time_at({-1, true}, r, k - 1), b = time_at({-1, false}, r, k);
          if (b > a) windows[r][k].emplace_back(a, b);
        }
      for (std::size_t bi = 0; bi + 1 < ordered.size(); ++bi) {
        if (!(median_lag[bi + 1][latest_rank] > median_lag[bi][latest_rank])) continue;
        for (std::size_t k = 0; k < nsteps; ++k) {
          const std::int64_t a = time_at(ordered[bi].second, r, k), b = time_at(ordered[bi + 1].second, r, k);
          if (a != 0 && b > a) windows[r][k].emplace_back(a, b);
        }
      }
    }
    causes_from_windows(run, clocks, steps, thread, windows, out);
  }
  std::string names;
  for (const auto& [offset, b] : ordered)
    if (b.first >= 0 && !b.second) names += (names.empty() ? "" : ", ") + run.strings[b.first];
  out.basis = fmt::format("from the NVTX phases of each step ({}): a rank's lateness is its lag behind the others "
                          "at the phase boundary where it is furthest behind",
                          names);
  return true;
}

}  // namespace

std::string_view lateness_source_name(LatenessSource s) {
  switch (s) {
    case LatenessSource::None: return "none";
    case LatenessSource::Collectives: return "collectives";
    case LatenessSource::Phases: return "phases";
  }
  return "none";
}

namespace {

// Takes each rank's tracer flush time inside its step window off its lateness in that step (never below 0).
void discount_tracer_flushes(const Run& run, const ClockAlignment& clocks, const StepSummary& steps, Lateness& out) {
  const std::size_t nranks = run.ranks.size();
  out.tracer_flush_ns.assign(nranks, 0);
  if (out.source == LatenessSource::None) return;
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& flushes = run.ranks[r].tracer_flushes;
    if (flushes.empty()) continue;
    for (std::size_t k = 0; k < out.lateness_ns[r].size(); ++k) {
      // The whole run when there are no steps (one bucket).
      std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
      if (k < steps.steps.size() && r < steps.steps[k].rank_start_ns.size()) {
        lo = steps.steps[k].rank_start_ns[r];
        hi = lo + static_cast<std::int64_t>(steps.steps[k].rank_duration_ns[r]);
      }
      double inside = 0;
      for (const auto& f : flushes) {
        const std::int64_t a = std::max(lo, clocks.aligned(static_cast<int>(r), f.start_ns));
        const std::int64_t b = std::min(hi, clocks.aligned(static_cast<int>(r), f.end_ns));
        if (b > a) inside += double(b - a);
      }
      out.tracer_flush_ns[r] += inside;
      out.lateness_ns[r][k] = std::max(0.0, out.lateness_ns[r][k] - inside);
      out.peak_lateness_ns[r][k] = std::max(0.0, out.peak_lateness_ns[r][k] - inside);
    }
  }
}

}  // namespace

std::vector<LatenessCauses> causes_over_windows(const Run& run, const ClockAlignment& clocks,
                                                const std::vector<std::int64_t>& thread, const OwnWindows& windows,
                                                std::size_t first_bucket) {
  const std::size_t nranks = run.ranks.size();
  const std::size_t nsteps = windows.empty() ? 0 : windows[0].size();
  const double none = std::nan("");
  // [kind][rank][bucket]: 0 on CPU, 1 run queue, 2 off CPU, 3 own time, 4 instructions retired (where counted).
  std::vector<std::vector<std::vector<double>>> v(5, std::vector<std::vector<double>>(nranks, std::vector<double>(nsteps, none)));
  for (std::size_t r = 0; r < nranks; ++r) {
    const ThreadCounters counters(run.ranks[r], thread[r], clocks.offset_ns[r]);
    for (std::size_t k = 0; k < nsteps; ++k) {
      double cpu = 0, runq = 0, own = 0, instructions = 0;
      bool covered = true, counted = counters.has_instructions();
      for (const auto& [a, b] : windows[r][k]) {
        const auto d = counters.over(a, b);
        if (!d) { covered = false; break; }
        cpu += d->first, runq += d->second, own += double(b - a);
        if (const auto i = counters.instructions_over(a, b)) instructions += *i;
        else counted = false;
      }
      if (!covered || windows[r][k].empty()) continue;
      v[0][r][k] = cpu, v[1][r][k] = runq, v[2][r][k] = own - cpu - runq, v[3][r][k] = own;
      if (counted) v[4][r][k] = instructions;
    }
  }
  std::vector<LatenessCauses> causes(nranks);
  std::vector<double> others, excess;
  for (std::size_t r = 0; r < nranks; ++r) {
    double* fields[4] = {&causes[r].on_cpu_ns, &causes[r].run_queue_ns, &causes[r].off_cpu_ns, &causes[r].own_ns};
    for (int kind = 0; kind < 4; ++kind) {
      excess.clear();
      for (std::size_t k = first_bucket; k < nsteps; ++k) {
        if (std::isnan(v[kind][r][k])) continue;
        if (kind == 3) { excess.push_back(v[kind][r][k]); continue; }
        others.clear();
        for (std::size_t o = 0; o < nranks; ++o)
          if (o != r && !std::isnan(v[kind][o][k])) others.push_back(v[kind][o][k]);
        if (!others.empty()) excess.push_back(v[kind][r][k] - median_of(others));
      }
      *fields[kind] = median_of(excess);
    }
    // Instructions: its count over the median other rank's in each bucket, less 1; the median over the buckets.
    excess.clear();
    for (std::size_t k = first_bucket; k < nsteps; ++k) {
      if (std::isnan(v[4][r][k])) continue;
      others.clear();
      for (std::size_t o = 0; o < nranks; ++o)
        if (o != r && !std::isnan(v[4][o][k])) others.push_back(v[4][o][k]);
      if (!others.empty() && median_of(others) > 0) excess.push_back(v[4][r][k] / median_of(others) - 1);
    }
    if (!excess.empty()) causes[r].extra_instructions = median_of(excess);
  }
  return causes;
}

Lateness measure_lateness(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched, const StepSummary& steps) {
  Lateness out;
  const std::size_t nranks = run.ranks.size();
  const std::size_t buckets = std::max<std::size_t>(1, steps.steps.size());
  out.lateness_ns.assign(nranks, std::vector<double>(buckets, 0));
  out.wait_ns.assign(nranks, std::vector<double>(buckets, 0));
  out.peak_lateness_ns.assign(nranks, std::vector<double>(buckets, 0));
  out.first_measured = steps.steps.empty() ? 0 : std::min<int>(steps.warmup_steps, static_cast<int>(buckets) - 1);
  std::optional<std::string> unknown;  // an importer's word that its source cannot tell arrivals
  for (const auto& r : run.ranks)
    if (!unknown) unknown = r.meta_value(std::string(store::meta_key::kArrivalsUnknown));
  if (from_phases(run, clocks, steps, out)) {
    out.source = LatenessSource::Phases;
  } else if (unknown) {
    out.source = LatenessSource::None;
    out.basis = "not measurable: " + *unknown;
  } else if (collectives_from_background_thread(run)) {
    out.source = LatenessSource::None;
    out.basis = "not measurable: every rank makes all its collectives from one background thread (as Horovod does), "
                "so the ranks meet there in lockstep whatever they compute, and the job marks no phases; NVTX phase "
                "ranges inside its steps would show it (`collscope trace` records them for Python jobs)";
  } else {
    from_collectives(run, clocks, matched, steps, out);
    out.peak_lateness_ns = out.lateness_ns;
    out.source = LatenessSource::Collectives;
    out.basis = "from the synchronising collectives: a rank's lateness is how much later than the second-last it "
                "arrived at those it arrived at last";
  }
  discount_tracer_flushes(run, clocks, steps, out);
  out.median_lateness_ns.assign(nranks, 0);
  out.median_wait_ns.assign(nranks, 0);
  out.total_lateness_ns.assign(nranks, 0);
  out.total_wait_ns.assign(nranks, 0);
  out.steps_latest.assign(nranks, 0);
  out.measured_steps = static_cast<int>(buckets) - out.first_measured;
  for (std::size_t k = static_cast<std::size_t>(out.first_measured); k < buckets; ++k) {
    std::size_t top = 0;
    for (std::size_t r = 1; r < nranks; ++r)
      if (out.lateness_ns[r][k] > out.lateness_ns[top][k]) top = r;
    if (nranks > 0 && out.lateness_ns[top][k] > 0) ++out.steps_latest[top];
  }
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& l = out.lateness_ns[r];
    const auto& w = out.wait_ns[r];
    out.median_lateness_ns[r] = median_of(std::vector<double>(l.begin() + out.first_measured, l.end()));
    out.median_wait_ns[r] = median_of(std::vector<double>(w.begin() + out.first_measured, w.end()));
    for (double x : l) out.total_lateness_ns[r] += x;
    for (double x : w) out.total_wait_ns[r] += x;
  }
  return out;
}

void apply_waits(const Lateness& lateness, StepSummary& steps) {
  if (steps.steps.empty()) return;
  const std::size_t nranks = lateness.wait_ns.size();
  double sum = 0;
  for (std::size_t k = 0; k < steps.steps.size(); ++k) {
    auto& st = steps.steps[k];
    st.wait_ns = 0;
    for (std::size_t r = 0; r < nranks && r < st.rank_wait_ns.size(); ++r) {
      st.rank_wait_ns[r] = lateness.measurable() ? lateness.wait_ns[r][k] : 0;
      st.wait_ns += st.rank_wait_ns[r] / double(nranks);
    }
    if (static_cast<int>(k) >= steps.warmup_steps) sum += st.wait_ns;
  }
  if (steps.measured_steps() > 0) steps.mean_wait_ns = sum / steps.measured_steps();
}

}  // namespace collscope::run
