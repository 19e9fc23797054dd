// Attaches the analyzer's results to a loaded run. The viewer never re-implements the analysis: clock
// offsets, findings, per-op statistics and steps all come from collscope::analyzer.
#include "run_analysis.hpp"

#ifdef COLLSCOPE_GUI_HAVE_ANALYZER
#include <collscope/analyzer/analysis.hpp>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace collscope::gui {

#ifndef COLLSCOPE_GUI_HAVE_ANALYZER

bool analysis_available() { return false; }
std::shared_ptr<const RunData> analyze_loaded_run(const RunData& run) { return std::make_shared<RunData>(run); }

#else

namespace {

// Shifts every rank's events by delta[rank index] (ns) and renormalises run time 0 to the first event.
void shift_clocks(RunData& run, const std::vector<std::int64_t>& delta) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (auto& e : run.collectives) {
    e.start_ns += delta[e.rank_index];
    e.end_ns += delta[e.rank_index];
    first = std::min(first, e.start_ns);
  }
  for (auto* spans : {&run.nvtx, &run.gpu})
    for (auto& s : *spans) {
      const auto d = delta[run.lanes[s.lane].rank_index];
      s.start_ns += d;
      s.end_ns += d;
      first = std::min(first, s.start_ns);
    }
  if (first == std::numeric_limits<std::int64_t>::max()) first = 0;
  run.origin_ns += first;
  run.duration_ns = 0;
  for (auto& e : run.collectives) {
    e.start_ns -= first;
    e.end_ns -= first;
    run.duration_ns = std::max(run.duration_ns, e.end_ns);
  }
  for (auto* spans : {&run.nvtx, &run.gpu})
    for (auto& s : *spans) {
      s.start_ns -= first;
      s.end_ns -= first;
      run.duration_ns = std::max(run.duration_ns, s.end_ns);
    }
  // A constant shift per lane keeps every lane sorted; the prefix maxima and instance times move.
  for (const auto& lane : run.lanes) {
    auto& ends = const_cast<EventVector<std::int64_t>&>(run.max_end(lane.kind));
    for (std::uint32_t i = lane.begin; i < lane.end; ++i)
      ends[i] = i == lane.begin ? run.end_of(lane.kind, i) : std::max(ends[i - 1], run.end_of(lane.kind, i));
  }
  for (auto& inst : run.instances) {
    inst.first_arrival_ns = std::numeric_limits<std::int64_t>::max();
    inst.last_arrival_ns = std::numeric_limits<std::int64_t>::min();
    inst.last_end_ns = std::numeric_limits<std::int64_t>::min();
    for (std::uint32_t m = 0; m < inst.member_count; ++m) {
      const auto& e = run.collectives[run.instance_members[inst.members_begin + m]];
      inst.first_arrival_ns = std::min(inst.first_arrival_ns, e.start_ns);
      if (e.start_ns > inst.last_arrival_ns) {
        inst.last_arrival_ns = e.start_ns;
        inst.last_rank_index = e.rank_index;
      }
      inst.last_end_ns = std::max(inst.last_end_ns, e.end_ns);
    }
  }
}

// Instances are sorted by (comm key, seq): binary search.
const CollectiveInstance* find_instance(const RunData& run, std::uint64_t key, std::int64_t seq) {
  auto it = std::lower_bound(run.instances.begin(), run.instances.end(), std::pair(key, seq),
                             [](const CollectiveInstance& i, const std::pair<std::uint64_t, std::int64_t>& k) {
                               return std::pair(i.comm_key, i.seq) < k;
                             });
  return it != run.instances.end() && it->comm_key == key && it->seq == seq ? &*it : nullptr;
}

// The evidence to zoom to: the named collective, else the instance the finding's ranks held up the
// longest (their worst late arrival), else the whole run. Padded so the neighbours are visible.
std::pair<std::int64_t, std::int64_t> evidence_range(const RunData& run, const analyzer::Finding& f) {
  const CollectiveInstance* best = nullptr;
  if (f.comm_key && f.seq) best = find_instance(run, *f.comm_key, *f.seq);
  if (!best && !f.ranks.empty()) {
    std::int64_t worst = -1;
    for (const auto& inst : run.instances) {
      const int world = run.ranks[inst.last_rank_index].world_rank;
      if (std::find(f.ranks.begin(), f.ranks.end(), world) == f.ranks.end()) continue;
      if (f.comm_key && inst.comm_key != *f.comm_key) continue;
      const auto held = inst.last_arrival_ns - inst.first_arrival_ns;
      if (held > worst) worst = held, best = &inst;
    }
  }
  if (!best) return {0, run.duration_ns};
  const auto width = std::max<std::int64_t>(best->last_end_ns - best->first_arrival_ns, 1000);
  return {std::max<std::int64_t>(0, best->first_arrival_ns - width), best->last_end_ns + width};
}

}  // namespace

bool analysis_available() { return true; }

std::shared_ptr<const RunData> analyze_loaded_run(const RunData& loaded) {
  const auto a = analyzer::analyze_run(loaded.dir);
  auto run = std::make_shared<RunData>(loaded);
  run->analyzed = true;

  std::vector<std::int64_t> delta(run->ranks.size(), 0);
  for (std::size_t i = 0; i < a.run.ranks.size() && i < a.clocks.offset_ns.size(); ++i) {
    const int r = run->rank_index_of_world(a.run.ranks[i].world_rank);
    if (r < 0) continue;
    delta[r] = a.clocks.offset_ns[i] - run->ranks[r].clock_offset_ns;
    run->ranks[r].clock_offset_ns = a.clocks.offset_ns[i];
  }
  shift_clocks(*run, delta);

  for (const auto& problem : a.run.problems)
    if (std::find(run->warnings.begin(), run->warnings.end(), problem) == run->warnings.end())
      run->warnings.push_back(problem);

  run->findings.clear();
  for (const auto& f : a.findings) {
    Finding out;
    out.kind = std::string(analyzer::finding_kind_name(f.kind));
    out.severity = std::string(analyzer::severity_name(f.severity));
    out.summary = f.evidence_text.empty() ? f.title : f.title + ": " + f.evidence_text;
    out.suggestion = f.suggestion;
    out.cost_ns = static_cast<std::int64_t>(f.cost_ns);
    out.world_ranks = f.ranks;
    std::tie(out.start_ns, out.end_ns) = evidence_range(*run, f);
    run->findings.push_back(std::move(out));
  }

  run->statistics.clear();
  for (const auto& s : a.op_sizes) {
    StatisticsRow row;
    row.op = s.op;
    // The sizes seen in the bucket, never its power-of-two bounds (400 B is not "256 B").
    row.size_bucket = s.min_bytes == s.max_bytes ? format_bytes(double(s.min_bytes))
                                                 : fmt::format("{} – {}", format_bytes(double(s.min_bytes)), format_bytes(double(s.max_bytes)));
    row.count = s.instances;
    row.total_ns = static_cast<std::int64_t>(s.total_duration_ns);
    row.busbw_gbps = s.median_busbw_gbps;
    run->statistics.push_back(std::move(row));
  }

  if (!a.steps.steps.empty()) {
    run->steps.clear();
    for (const auto& s : a.steps.steps)
      run->steps.push_back({s.index, s.start_ns - run->origin_ns, s.end_ns - run->origin_ns});
  }
  return run;
}

#endif

}  // namespace collscope::gui
