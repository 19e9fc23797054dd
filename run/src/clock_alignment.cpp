// Clock alignment per host: realtime anchors first, then the ends of synchronising collectives pull the hosts
// together.
#include <collscope/run/clock_alignment.hpp>

#include <algorithm>
#include <cmath>

#include <collscope/run/call_index.hpp>
#include <collscope/run/statistics.hpp>

namespace collscope::run {
namespace {

void set_origin(const Run& run, ClockAlignment& clocks) {
  std::int64_t origin = INT64_MAX, first_event = INT64_MAX;
  for (std::size_t i = 0; i < run.ranks.size(); ++i) {
    const auto& r = run.ranks[i];
    const int ri = static_cast<int>(i);
    if (r.monotonic_start_ns != 0) origin = std::min(origin, clocks.aligned(ri, r.monotonic_start_ns));
    for (const auto& c : r.collectives) first_event = std::min(first_event, clocks.aligned(ri, c.start_ns));
    for (const auto& f : r.calls_in_flight) first_event = std::min(first_event, clocks.aligned(ri, f.call.start_ns));
    for (const auto& n : r.nvtx_ranges) first_event = std::min(first_event, clocks.aligned(ri, n.start_ns));
    for (const auto& g : r.gpu_activities) first_event = std::min(first_event, clocks.aligned(ri, g.start_ns));
  }
  // A tracer starts before its first event; a start after it (a clock anchor from another boot) is not used.
  if (origin == INT64_MAX || (first_event != INT64_MAX && origin > first_event)) origin = first_event;
  clocks.origin_ns = origin == INT64_MAX ? 0 : origin;
  if (run.ranks.empty()) return;
  const auto& r0 = run.ranks[0];
  if (r0.realtime_start_ns != 0 && r0.monotonic_start_ns != 0)
    clocks.realtime_origin_ns = clocks.origin_ns + (r0.realtime_start_ns - r0.monotonic_start_ns);
}

}  // namespace

ClockAlignment ClockAligner::align(const Run& run) const {
  ClockAlignment out = align_offsets(run);
  set_origin(run, out);
  return out;
}

ClockAlignment ClockAligner::align_offsets(const Run& run) const {
  const std::size_t n = run.ranks.size();
  ClockAlignment out;
  out.offset_ns.assign(n, 0);
  out.anchor_offset_ns.assign(n, 0);
  out.residual_ns.assign(n, 0);
  if (n == 0) return out;
  // Hosts: ranks naming the same host share a clock. A rank that names none is its own host.
  out.host_of_rank.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& host = run.ranks[i].host;
    const std::string name = host.empty() ? "rank " + std::to_string(run.ranks[i].world_rank) : host;
    auto it = std::find(out.hosts.begin(), out.hosts.end(), name);
    out.host_of_rank[i] = static_cast<int>(it - out.hosts.begin());
    if (it == out.hosts.end()) out.hosts.push_back(name);
  }
  const std::size_t nhosts = out.hosts.size();
  // realtime − monotonic per host (median over its ranks: they read it microseconds apart), relative to rank
  // index 0's host: puts every host on that host's monotonic clock.
  std::vector<std::int64_t> host_offset(nhosts, 0);
  {
    std::vector<std::vector<std::int64_t>> anchors(nhosts);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& r = run.ranks[i];
      if (r.realtime_start_ns != 0 && r.monotonic_start_ns != 0)
        anchors[out.host_of_rank[i]].push_back(r.realtime_start_ns - r.monotonic_start_ns);
    }
    const int base_host = out.host_of_rank[0];
    const bool have_base = !anchors[base_host].empty();
    const std::int64_t base = median_of(anchors[base_host]);
    for (std::size_t h = 0; h < nhosts; ++h)
      host_offset[h] = (!have_base || anchors[h].empty() || static_cast<int>(h) == base_host) ? 0 : median_of(anchors[h]) - base;
  }
  for (std::size_t i = 0; i < n; ++i) out.anchor_offset_ns[i] = host_offset[out.host_of_rank[i]];
  out.offset_ns = out.anchor_offset_ns;
  if (nhosts < 2) return out;  // one clock: exact, nothing to refine

  // Candidate instances: synchronising ops with every member present, on communicators spanning 2+ hosts.
  const auto index = build_call_index(run);
  struct Candidate {
    int comm;
    std::int32_t seq;
  };
  std::vector<Candidate> candidates;
  std::vector<std::vector<int>> members(run.communicators.size());
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    members[c] = member_indices(run, run.communicators[c]);
    if (members[c].size() < 2 || std::count(members[c].begin(), members[c].end(), -1) > 0) continue;
    const int first_host = out.host_of_rank[members[c][0]];
    if (std::all_of(members[c].begin(), members[c].end(), [&](int m) { return out.host_of_rank[m] == first_host; }))
      continue;
    std::size_t calls = SIZE_MAX;
    for (int m : members[c]) calls = std::min(calls, index[m][c].size());
    for (std::size_t s = 0; s < calls; ++s) {
      bool ok = true;
      for (int m : members[c]) {
        const auto j = index[m][c][s];
        if (j < 0 || !store::is_synchronising(run.ranks[m].collectives[j].op)) {
          ok = false;
          break;
        }
      }
      if (ok) candidates.push_back({static_cast<int>(c), static_cast<std::int32_t>(s)});
    }
  }
  if (candidates.empty()) return out;
  std::vector<Candidate> sample;
  const std::size_t want = std::min<std::size_t>(candidates.size(), static_cast<std::size_t>(std::max(1, max_instances_)));
  for (std::size_t k = 0; k < want; ++k) sample.push_back(candidates[k * candidates.size() / want]);
  out.instances_used = static_cast<int>(sample.size());

  // Each pass: per instance, every member's end minus the instance's median end; each host moves by the median
  // of its ranks' residuals. Medians keep one slow/noisy instance or one shifted rank from dragging the others.
  std::vector<std::vector<std::int64_t>> residuals(n);
  std::vector<std::int64_t> ends;
  auto compute_residuals = [&] {
    for (auto& r : residuals) r.clear();
    for (const auto& cand : sample) {
      ends.clear();
      for (int m : members[cand.comm]) ends.push_back(run.ranks[m].collectives[index[m][cand.comm][cand.seq]].end_ns + out.offset_ns[m]);
      const std::int64_t mid = median_of(ends);
      for (std::size_t k = 0; k < members[cand.comm].size(); ++k)
        residuals[members[cand.comm][k]].push_back(ends[k] - mid);
    }
  };
  std::vector<std::vector<std::int64_t>> host_residuals(nhosts);
  for (int pass = 0; pass < 60; ++pass) {
    compute_residuals();
    for (auto& h : host_residuals) h.clear();
    for (std::size_t i = 0; i < n; ++i) {
      auto& h = host_residuals[out.host_of_rank[i]];
      h.insert(h.end(), residuals[i].begin(), residuals[i].end());
    }
    std::int64_t largest = 0;
    for (std::size_t h = 0; h < nhosts; ++h) {
      if (host_residuals[h].empty()) continue;
      const std::int64_t move = median_of(host_residuals[h]);
      host_offset[h] -= move;
      largest = std::max(largest, std::abs(move));
    }
    // Keep rank index 0's host on its own clock.
    const std::int64_t drift = host_offset[out.host_of_rank[0]];
    for (auto& o : host_offset) o -= drift;
    for (std::size_t i = 0; i < n; ++i) out.offset_ns[i] = host_offset[out.host_of_rank[i]];
    if (largest < 50) break;  // ns
  }
  compute_residuals();
  std::vector<double> all;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> abs_res;
    for (auto r : residuals[i]) abs_res.push_back(std::fabs(static_cast<double>(r)));
    out.residual_ns[i] = median_of(abs_res);
    all.push_back(out.residual_ns[i]);
  }
  out.residual_p50_ns = median_of(all);
  return out;
}

}  // namespace collscope::run
