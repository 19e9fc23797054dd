// Attaches the analyzer's results to a loaded run. The viewer never re-implements the analysis: steps, findings
// and per-op statistics come from collscope::analyzer, computed on the very run, clock alignment and matching the
// timeline draws (analyzer::analyze_matched), so nothing is read, aligned or matched twice.
#include "run_analysis.hpp"

#ifdef COLLSCOPE_GUI_HAVE_ANALYZER
#include <collscope/analyzer/analysis.hpp>
#endif
#include <collscope/run/steps.hpp>

#include <algorithm>

namespace collscope::gui {
namespace {

std::vector<Step> steps_in_run_time(const TimelineModel& model, const run::StepSummary& summary) {
  std::vector<Step> out;
  out.reserve(summary.steps.size());
  for (const auto& s : summary.steps) out.push_back({s.index, model.run_time(s.start_ns), model.run_time(s.end_ns)});
  return out;
}

#ifdef COLLSCOPE_GUI_HAVE_ANALYZER

// The instance that shows a finding best: the collective it names, else the one its ranks held up the longest
// (their worst late arrival, on its communicator when it names one); kNoInstance when none.
std::uint32_t evidence_instance(const TimelineModel& model, const analyzer::Finding& f) {
  const auto& r = model.run();
  int comm = -1;
  if (f.comm_key)
    for (std::size_t c = 0; c < r.communicators.size(); ++c)
      if (r.communicators[c].key == *f.comm_key) comm = static_cast<int>(c);
  if (comm >= 0 && f.seq) {
    const auto id = model.instance_of(comm, static_cast<std::int32_t>(*f.seq));
    if (id != kNoInstance) return id;
  }
  if (f.ranks.empty()) return kNoInstance;
  const auto& instances = model.matched().instances;
  std::uint32_t best = kNoInstance;
  std::int64_t worst = -1;
  for (std::uint32_t i = 0; i < instances.size(); ++i) {
    const auto& inst = instances[i];
    if (comm >= 0 && inst.comm != comm) continue;
    if (std::find(f.ranks.begin(), f.ranks.end(), inst.last_arriver) == f.ranks.end()) continue;
    const auto held = inst.last_arrival_ns - inst.first_arrival_ns;
    if (held > worst) worst = held, best = i;
  }
  return best;
}

Finding to_view(const TimelineModel& model, const analyzer::Finding& f) {
  Finding out;
  out.kind = std::string(analyzer::finding_kind_name(f.kind));
  out.severity = std::string(analyzer::severity_name(f.severity));
  out.summary = f.evidence_text.empty() ? f.title : f.title + ": " + f.evidence_text;
  out.suggestion = f.suggestion;
  out.cost_ns = static_cast<std::int64_t>(f.cost_ns);
  out.world_ranks = f.ranks;
  out.start_ns = 0;
  out.end_ns = model.duration_ns();
  const auto instance = evidence_instance(model, f);
  if (instance == kNoInstance) return out;
  // Zoom to the instance padded by its own width, so the neighbours are visible; select the call of the first
  // rank the finding names (else the last arriver's).
  const auto& inst = model.matched().instances[instance];
  const auto width = std::max<std::int64_t>(inst.last_completion_ns - inst.first_arrival_ns, 1000);
  out.start_ns = std::max<std::int64_t>(0, model.run_time(inst.first_arrival_ns) - width);
  out.end_ns = model.run_time(inst.last_completion_ns) + width;
  const auto members = model.instance_members(instance);
  for (const int world : f.ranks.empty() ? std::vector<int>{inst.last_arriver} : f.ranks) {
    for (const auto m : members)
      if (model.run().ranks[model.rank_of_collective(m)].world_rank == world) {
        out.evidence = m;
        break;
      }
    if (out.evidence != kNoInstance) break;
  }
  if (out.evidence == kNoInstance && !members.empty()) out.evidence = members.front();
  return out;
}

#endif

}  // namespace

#ifdef COLLSCOPE_GUI_HAVE_ANALYZER

bool analysis_available() { return true; }

std::shared_ptr<const RunData> analyze_loaded_run(const RunData& loaded) {
  const auto& model = loaded.model();
  const auto a = analyzer::analyze_matched(model.run(), model.clocks(), model.matched());
  auto out = std::make_shared<RunData>();
  out->dir = loaded.dir;
  out->timeline = loaded.timeline;
  out->warnings = loaded.warnings;
  out->analyzed = true;
  out->steps = steps_in_run_time(model, a.steps);
  out->summaries = std::make_shared<const RunSummaries>(summarize(model, out->steps));
  for (const auto& f : a.findings) out->findings.push_back(to_view(model, f));
  for (const auto& s : a.op_sizes)
    out->statistics.push_back({.op = s.op,
                               .size_bucket_bytes = s.size_bucket_bytes,
                               .min_bytes = s.min_bytes,
                               .max_bytes = s.max_bytes,
                               .count = s.instances,
                               .total_ns = static_cast<std::int64_t>(s.total_duration_ns),
                               .busbw_gbps = s.median_busbw_gbps});
  return out;
}

#else

bool analysis_available() { return false; }

std::shared_ptr<const RunData> analyze_loaded_run(const RunData& loaded) {
  const auto& model = loaded.model();
  auto out = std::make_shared<RunData>();
  out->dir = loaded.dir;
  out->timeline = loaded.timeline;
  out->warnings = loaded.warnings;
  out->steps = steps_in_run_time(model, run::StepDetector().detect(model.run(), model.clocks(), model.matched()));
  out->summaries = std::make_shared<const RunSummaries>(summarize(model, out->steps));
  return out;
}

#endif

}  // namespace collscope::gui
