// Collective mismatch: members of a communicator making different calls at one position, or a different number.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

namespace {

// A call skipped before a hang: the tracer records calls when they return, so the ranks stuck in the call the
// skipping rank never makes leave no row for it, and the counts may agree. The NVTX steps tell them apart: the
// skipping rank ends a step without its usual call on the communicator while a member is still inside that step.
std::vector<Mismatch> skipped_calls_from_steps(const Run& run) {
  std::vector<Mismatch> out;
  const StepNames step_names(run);
  if (step_names.empty()) return out;
  const std::size_t n = run.ranks.size();
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ended(n);  // ended step windows, raw ns
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<NvtxRange> steps;
    for (const auto& x : run.ranks[r].nvtx_ranges)
      if (step_names.contains(x.name)) steps.push_back(x);
    std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    for (const auto& x : steps) {
      if (x.end_ns <= x.start_ns) break;  // still open: the rank never finished this step
      ended[r].push_back({x.start_ns, x.end_ns});
    }
  }
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    const auto members = member_indices(run, run.communicators[c]);
    if (members.size() < 2 || std::count(members.begin(), members.end(), -1) > 0) continue;
    for (int r : members) {
      if (ended[r].size() < 2) continue;
      // Calls on c per ended step of rank r.
      std::vector<int> per_step(ended[r].size(), 0);
      std::vector<int> before_end(ended[r].size(), 0);
      std::vector<std::int64_t> starts;
      for (const auto& call : run.ranks[r].collectives)
        if (call.comm == static_cast<int>(c)) starts.push_back(call.start_ns);
      std::sort(starts.begin(), starts.end());
      for (std::size_t k = 0; k < ended[r].size(); ++k) {
        const auto lo = std::lower_bound(starts.begin(), starts.end(), ended[r][k].first);
        const auto hi = std::lower_bound(starts.begin(), starts.end(), ended[r][k].second);
        per_step[k] = static_cast<int>(hi - lo);
        before_end[k] = static_cast<int>(hi - starts.begin());
      }
      const int usual = per_step[0];
      if (usual == 0) continue;
      for (std::size_t k = 1; k < per_step.size(); ++k) {
        // Only communicators called the same number of times every step (not a background thread's cycles).
        if (per_step[k] > usual) break;
        if (per_step[k] == usual) continue;
        // Someone of this communicator never finished step k: it waits in the call rank r skipped.
        bool member_stuck = false;
        for (int o : members)
          if (o != r && ended[o].size() <= k) member_stuck = true;
        if (!member_stuck) break;
        Mismatch mm;
        mm.comm = static_cast<int>(c);
        mm.comm_key = run.communicators[c].key;
        mm.seq = before_end[k];
        mm.ranks = {run.ranks[r].world_rank};
        mm.what = fmt::format(
            "rank {} finished step {} with {} call(s) on this communicator instead of {} (first missing seq {}), "
            "while other members never finished that step: they hang in the call it skipped",
            run.ranks[r].world_rank, k, per_step[k], usual, mm.seq);
        out.push_back(std::move(mm));
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<Finding> detect_mismatches(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  // The step evidence names a rank that skipped a call; calls in flight at the kill say who waited where. Count
  // differences on a communicator already explained are only the symptom.
  auto mismatches = skipped_calls_from_steps(run);
  std::vector<Finding> out = detect_hangs(run, m, mismatches);
  std::set<std::uint64_t> explained;
  for (const auto& f : out)
    if (f.comm_key) explained.insert(*f.comm_key);
  for (const auto& x : m.mismatches) {
    auto same = std::find_if(mismatches.begin(), mismatches.end(), [&](const Mismatch& y) { return y.comm == x.comm; });
    if (same == mismatches.end()) mismatches.push_back(x);
  }
  for (const auto& mm : mismatches) {
    if (explained.count(mm.comm_key)) continue;
    Finding f;
    f.kind = FindingKind::Mismatch;
    f.severity = Severity::Critical;
    f.ranks = mm.ranks;
    f.comm_key = mm.comm_key;
    f.comm_name = run.communicators[mm.comm].name;
    f.seq = mm.seq;
    const std::string& shown = run.communicators[mm.comm].shown_name();  // for people; comm_name stays the key
    f.title = fmt::format("collective mismatch on {} at seq {}: rank(s) {} diverge", shown.empty() ? "comm" : shown,
                          mm.seq, fmt::join(mm.ranks, ","));
    f.evidence = {{"seq", double(mm.seq)}, {"communicator_size", double(run.communicators[mm.comm].size)}};
    f.evidence_text = fmt::format("communicator key {:#x}: {}", mm.comm_key, mm.what);
    f.cost_ns = 0;  // a hang: the rest of the job
    f.suggestion = fmt::format(
        "Every member must make the same collectives in the same order: check the code path of rank(s) {} around call "
        "{} on this communicator (inconsistent process-set configuration, a conditional collective, different tensor "
        "lists per rank).",
        fmt::join(mm.ranks, ","), mm.seq);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace collscope::analyzer
