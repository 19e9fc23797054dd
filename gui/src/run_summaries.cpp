// Summaries for the views that scale to thousands of ranks (see run_summaries.hpp): one pass over the matched
// instances, each rank's call found through the call index (no matching here).
#include <collscope/gui/run_summaries.hpp>

#include <collscope/gui/run_data.hpp>
#include <collscope/run/call_index.hpp>

#include <algorithm>
#include <cmath>

namespace collscope::gui {
namespace {

// Index of the column [starts[k], starts[k+1]) holding t, clamped to the columns.
int column_of(const std::vector<std::int64_t>& starts, std::int64_t t) {
  const auto it = std::upper_bound(starts.begin(), starts.end(), t);
  const int k = static_cast<int>(it - starts.begin()) - 1;
  return std::clamp(k, 0, static_cast<int>(starts.size()) - 2);
}

// Adds the time of [from, to) to the buckets it overlaps, for rank r.
void spread_over_buckets(const RankActivity& act, std::vector<float>& into, int r, std::int64_t from, std::int64_t to) {
  if (to <= from) return;
  const std::int64_t end = act.bucket_ns * act.buckets;
  from = std::clamp<std::int64_t>(from, 0, end);
  to = std::clamp<std::int64_t>(to, 0, end);
  float* row = into.data() + static_cast<std::size_t>(r) * act.buckets;
  for (std::int64_t b = from / act.bucket_ns; b < act.buckets && b * act.bucket_ns < to; ++b) {
    const std::int64_t lo = std::max(from, b * act.bucket_ns), hi = std::min(to, (b + 1) * act.bucket_ns);
    if (hi > lo) row[b] += static_cast<float>(hi - lo);
  }
}

float percentile_of_nonzero(const std::vector<float>& values, double p) {
  std::vector<float> v;
  for (const float x : values)
    if (x > 0) v.push_back(x);
  if (v.empty()) return 1;
  auto at = v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size() - 1, static_cast<std::size_t>(p * double(v.size()))));
  std::nth_element(v.begin(), at, v.end());
  return std::max(*at, 1.0f);
}

}  // namespace

RunSummaries summarize(const TimelineModel& m, const std::vector<Step>& steps, int activity_buckets) {
  const auto& run = m.run();
  const auto& matched = m.matched();
  const int n = static_cast<int>(run.ranks.size());
  const std::int64_t duration = std::max<std::int64_t>(m.duration_ns(), 1);
  RunSummaries out;

  auto& act = out.activity;
  act.ranks = n;
  act.buckets = activity_buckets > 0 ? activity_buckets : std::clamp(4'000'000 / std::max(1, n), 256, 4096);
  act.bucket_ns = std::max<std::int64_t>(1, (duration + act.buckets - 1) / act.buckets);
  act.late_ns.assign(static_cast<std::size_t>(n) * act.buckets, 0.f);
  act.wait_ns.assign(act.late_ns.size(), 0.f);

  auto& heat = out.heat;
  heat.ranks = n;
  heat.from_steps = steps.size() >= 2;
  if (heat.from_steps) {
    for (const auto& s : steps) heat.step_start_ns.push_back(s.start_ns);
    heat.step_start_ns.push_back(std::max(steps.back().end_ns, steps.back().start_ns + 1));
  } else {
    const int columns = std::min(act.buckets, 1000);
    for (int k = 0; k <= columns; ++k) heat.step_start_ns.push_back(duration * k / columns);
  }
  heat.steps = static_cast<int>(heat.step_start_ns.size()) - 1;
  heat.late_ns.assign(static_cast<std::size_t>(n) * heat.steps, 0.f);

  const int lens_comm = matched.reference_comm;
  std::vector<std::vector<int>> members(run.communicators.size());
  for (std::size_t c = 0; c < run.communicators.size(); ++c) members[c] = run::member_indices(run, run.communicators[c]);
  std::vector<std::pair<int, std::int64_t>> arrivals;  // rank index, run time
  for (std::uint32_t i = 0; i < matched.instances.size(); ++i) {
    const auto& inst = matched.instances[i];
    arrivals.clear();
    for (const int r : members[inst.comm]) {
      if (r < 0) continue;
      const auto& v = matched.call_index[r][inst.comm];
      if (inst.seq < 0 || static_cast<std::size_t>(inst.seq) >= v.size() || v[inst.seq] < 0) continue;
      arrivals.emplace_back(r, m.run_time(r, run.ranks[r].collectives[v[inst.seq]].start_ns));
    }
    if (arrivals.empty()) continue;
    const std::int64_t first = m.run_time(inst.first_arrival_ns), last = m.run_time(inst.last_arrival_ns);
    const int column = column_of(heat.step_start_ns, first);
    for (const auto& [r, a] : arrivals) {
      // Over time: the rank is late from the first arrival to its own, and waits from its own to the last one.
      spread_over_buckets(act, act.late_ns, r, first, a);
      spread_over_buckets(act, act.wait_ns, r, a, last);
      heat.late_ns[static_cast<std::size_t>(r) * heat.steps + column] += static_cast<float>(a - first);
    }
    if (lens_comm < 0 || inst.comm == lens_comm) {
      LensRow row;
      row.instance = i;
      row.start_ns = first;
      row.spread_ns = last - first;
      row.held_ns = inst.last_arrival_ns - inst.second_last_arrival_ns;
      row.last_rank = run.rank_index(inst.last_arriver);
      row.ranks = static_cast<int>(arrivals.size());
      for (const auto& [r, a] : arrivals) {
        const auto bin = row.spread_ns > 0 ? std::min<std::int64_t>(kLensBins - 1, (a - first) * kLensBins / row.spread_ns) : 0;
        auto& count = row.arrivals[static_cast<std::size_t>(bin)];
        if (count < 0xffff) ++count;
      }
      out.lens.push_back(row);
    }
    if (inst.ranks >= 2 && inst.bytes > 0 && inst.duration_ns > 0 && inst.op != store::Op::Barrier) {
      out.busbw_gbps.t_ns.push_back(first);
      out.busbw_gbps.value.push_back(static_cast<float>(inst.busbw_gbps()));
    }
  }
  heat.scale_ns = percentile_of_nonzero(heat.late_ns, 0.99);
  std::sort(out.lens.begin(), out.lens.end(), [](const LensRow& a, const LensRow& b) { return a.start_ns < b.start_ns; });
  {  // busbw points in time order
    std::vector<std::size_t> order(out.busbw_gbps.t_ns.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return out.busbw_gbps.t_ns[a] < out.busbw_gbps.t_ns[b]; });
    CounterSeries sorted;
    for (const auto k : order) {
      sorted.t_ns.push_back(out.busbw_gbps.t_ns[k]);
      sorted.value.push_back(out.busbw_gbps.value[k]);
      sorted.max = std::max(sorted.max, out.busbw_gbps.value[k]);
    }
    out.busbw_gbps = std::move(sorted);
  }
  for (const auto& s : steps) {
    out.step_ns.t_ns.push_back(s.start_ns);
    out.step_ns.value.push_back(static_cast<float>(s.end_ns - s.start_ns));
    out.step_ns.max = std::max(out.step_ns.max, out.step_ns.value.back());
  }
  if (!out.step_ns.value.empty()) {
    std::vector<float> sorted(out.step_ns.value);
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    out.step_ns.median = sorted[sorted.size() / 2];
  }
  return out;
}

RangeTotals range_totals(const TimelineModel& m, std::int64_t t0, std::int64_t t1) {
  RangeTotals out;
  if (t1 < t0) std::swap(t0, t1);
  out.duration_ns = t1 - t0;
  out.ranks = static_cast<int>(m.run().ranks.size());
  double busy = 0, wait = 0;
  for (const auto& lane : m.lanes()) {
    if (lane.kind != LaneKind::Collectives) continue;
    for (std::uint32_t pos = m.first_ending_after(lane, t0); pos < lane.end && m.start_at(lane, pos) < t1; ++pos) {
      const auto e = m.collective_at(lane, pos);
      busy += double(std::max<std::int64_t>(0, std::min(e.end_ns, t1) - std::max(e.start_ns, t0)));
      if (e.instance != kNoInstance) {
        const std::int64_t last = m.run_time(m.matched().instances[e.instance].last_arrival_ns);
        wait += double(std::max<std::int64_t>(0, std::min({last, e.end_ns, t1}) - std::max(e.start_ns, t0)));
      }
      if (e.start_ns < t0) continue;
      ++out.calls;
      out.bytes += e.bytes;
      ++out.calls_by_op[static_cast<std::size_t>(e.op) % store::kOpCount];
    }
  }
  if (out.ranks > 0) {
    out.busy_ns_per_rank = busy / out.ranks;
    out.wait_ns_per_rank = wait / out.ranks;
  }
  return out;
}

}  // namespace collscope::gui
