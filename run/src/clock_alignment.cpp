// Clock alignment: realtime anchors first, then the ends of synchronising collectives pull the offsets together.
#include <collscope/run/clock_alignment.hpp>

#include <algorithm>
#include <cmath>

#include <collscope/run/call_index.hpp>
#include <collscope/run/statistics.hpp>

namespace collscope::run {

ClockAlignment ClockAligner::align(const Run& run) const {
  const std::size_t n = run.ranks.size();
  ClockAlignment out;
  out.offset_ns.assign(n, 0);
  out.anchor_offset_ns.assign(n, 0);
  out.residual_ns.assign(n, 0);
  if (n == 0) return out;
  // realtime − monotonic per rank, relative to rank index 0: puts every rank on rank 0's monotonic clock.
  auto anchor = [](const RankTrace& r) -> std::int64_t {
    if (r.realtime_start_ns == 0 || r.monotonic_start_ns == 0) return 0;
    return r.realtime_start_ns - r.monotonic_start_ns;
  };
  const std::int64_t base = anchor(run.ranks[0]);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t a = anchor(run.ranks[i]);
    out.anchor_offset_ns[i] = (a == 0 || base == 0) ? 0 : a - base;
  }
  out.offset_ns = out.anchor_offset_ns;

  // Candidate instances: synchronising ops with every member present, on communicators of 2+ ranks.
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

  // Each pass: per instance, every member's end minus the instance's median end; each rank moves by the median
  // of its residuals. Medians keep one slow/noisy instance or one shifted rank from dragging the others.
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
  for (int pass = 0; pass < 60; ++pass) {
    compute_residuals();
    std::int64_t largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (residuals[i].empty()) continue;
      const std::int64_t move = median_of(residuals[i]);
      out.offset_ns[i] -= move;
      largest = std::max(largest, std::abs(move));
    }
    // Keep rank index 0 on its anchor so aligned times stay on its monotonic clock.
    const std::int64_t drift = out.offset_ns[0] - out.anchor_offset_ns[0];
    for (auto& o : out.offset_ns) o -= drift;
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
