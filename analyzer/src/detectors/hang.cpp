// Hangs: where each rank was when a hung job was killed (calls in flight), and who never arrived.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

namespace {

std::string comm_label(const Run& run, int comm) {
  const auto& name = run.communicators[comm].shown_name();
  return name.empty() ? fmt::format("comm {:#x}", run.communicators[comm].key) : name;
}

// "allreduce #12 on MPI_COMM_WORLD (1024 x MPI_FLOAT)"
std::string call_text(const Run& run, const CollectiveCall& c) {
  std::string shape;
  if (c.count > 0) shape = fmt::format(" ({} x {}", c.count, run.strings[c.datatype].empty() ? "?" : run.strings[c.datatype]);
  if (c.root >= 0) shape += fmt::format("{}root {}", shape.empty() ? " (" : ", ", c.root);
  if (!shape.empty()) shape += ")";
  return fmt::format("{} #{} on {}{}", store::op_name(c.op), c.seq, comm_label(run, c.comm), shape);
}

}  // namespace

// Hangs, from the calls each rank was still inside when the job was killed (calls_in_flight, schema 1.1). Each
// (communicator, call) where members wait is a group: its waiting ranks, and the members that never got there.
// A missing member that is not itself waiting anywhere (computing, blocked outside collectives, gone) is the
// cause. When every missing member is waiting elsewhere the ranks wait for each other in a cycle: one finding
// describes it, blaming the rank the step evidence names (`step_evidence`), else the ranks of the smallest group
// (the odd ones out).
std::vector<Finding> detect_hangs(const Run& run, const MatchedRun& m, const std::vector<Mismatch>& step_evidence) {
  struct Group {
    int comm;
    std::int32_t seq;
    std::vector<std::pair<int, const CallInFlight*>> calls;  // (world rank, its call)
    std::vector<int> waiting, missing;  // world ranks, sorted
    double waited_ns = 0;
  };
  std::map<std::pair<int, std::int32_t>, Group> by_call;
  std::set<int> waiting_anywhere;
  for (std::size_t ri = 0; ri < run.ranks.size(); ++ri)
    for (const auto& f : run.ranks[ri].calls_in_flight) {
      auto& g = by_call.try_emplace({f.call.comm, f.call.seq}, Group{f.call.comm, f.call.seq, {}, {}, {}, 0}).first->second;
      g.calls.emplace_back(run.ranks[ri].world_rank, &f);
      g.waiting.push_back(run.ranks[ri].world_rank);
      g.waited_ns = std::max(g.waited_ns, double(f.call.end_ns - f.call.start_ns));
      waiting_anywhere.insert(run.ranks[ri].world_rank);
    }
  if (by_call.empty()) return {};
  auto calls_made = [&](int ri, int comm) {  // calls of rank index `ri` on `comm` that returned (highest seq + 1)
    return static_cast<std::int64_t>(m.call_index[ri][comm].size());
  };
  std::vector<Group> groups;
  for (auto& [key, g] : by_call) {
    std::sort(g.waiting.begin(), g.waiting.end());
    for (int member : run.communicators[g.comm].members) {
      if (std::binary_search(g.waiting.begin(), g.waiting.end(), member)) continue;
      const int ri = run.rank_index(member);
      if (ri >= 0 && calls_made(ri, g.comm) > g.seq) continue;  // it made this call and moved on
      g.missing.push_back(member);
    }
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.waiting.size() > b.waiting.size(); });

  auto group_text = [&](const Group& g) {
    return fmt::format("rank(s) {} inside {} for up to {}{}", fmt::join(g.waiting, ","), call_text(run, g.calls.front().second->call),
                       format_ms(g.waited_ns), g.missing.empty() ? "" : fmt::format(", waiting for rank(s) {}", fmt::join(g.missing, ",")));
  };
  auto where_is = [&](int world) -> std::string {
    const int ri = run.rank_index(world);
    if (ri < 0) return fmt::format("rank {} left no trace file", world);
    // Not inside one long call: computing, making short calls elsewhere, blocked outside collectives, or gone.
    const auto& calls = run.ranks[ri].collectives;
    const auto last = std::max_element(calls.begin(), calls.end(), [](auto& a, auto& b) { return a.end_ns < b.end_ns; });
    return fmt::format("rank {} was inside no collective for long{}", world,
                       last == calls.end() ? std::string(" and made none")
                                           : fmt::format("; its last to return was {}", call_text(run, *last)));
  };
  auto base = [&](const Group& g, std::vector<int> ranks) {
    Finding f;
    f.kind = FindingKind::Mismatch;
    f.severity = Severity::Critical;
    f.ranks = std::move(ranks);
    f.comm_key = run.communicators[g.comm].key;
    f.comm_name = run.communicators[g.comm].name;
    f.seq = g.seq;
    f.cost_ns = g.waited_ns;
    f.evidence = {{"seq", double(g.seq)}, {"waited_ns", g.waited_ns}, {"ranks_waiting", double(g.waiting.size())},
                  {"communicator_size", double(run.communicators[g.comm].size)}};
    return f;
  };
  std::vector<Finding> out;

  // Different collectives at one position: the ranks with the less common call are the odd ones out.
  for (const auto& g : groups) {
    struct Shape {
      std::vector<int> ranks;
      const CollectiveCall* call;
    };
    std::map<std::tuple<int, std::int64_t, int, int>, Shape> shapes;  // (op, count, datatype, root)
    for (const auto& [world, f] : g.calls)
      shapes.try_emplace({int(f->call.op), f->call.count, f->call.datatype, f->call.root}, Shape{{}, &f->call})
          .first->second.ranks.push_back(world);
    if (shapes.size() < 2) continue;
    const auto majority = std::max_element(shapes.begin(), shapes.end(), [](auto& x, auto& y) { return x.second.ranks.size() < y.second.ranks.size(); });
    std::vector<int> odd;
    std::string detail;
    for (auto& [key, shape] : shapes) {
      std::sort(shape.ranks.begin(), shape.ranks.end());
      if (&shape != &majority->second) odd.insert(odd.end(), shape.ranks.begin(), shape.ranks.end());
      detail += fmt::format("{}rank(s) {} inside {}", detail.empty() ? "" : "; ", fmt::join(shape.ranks, ","), call_text(run, *shape.call));
    }
    std::sort(odd.begin(), odd.end());
    Finding f = base(g, odd);
    f.title = fmt::format("hang: different collectives at call #{} on {}: rank(s) {} differ from the others", g.seq,
                          comm_label(run, g.comm), fmt::join(odd, ","));
    f.evidence_text = detail + fmt::format(" when the job was killed (waiting up to {}).", format_ms(g.waited_ns));
    f.suggestion = fmt::format("Every member must make the same collective at the same position: find why rank(s) {} "
                               "call something else there (a rank-dependent branch, different tensor lists or dtypes).",
                               fmt::join(odd, ","));
    out.push_back(std::move(f));
  }
  if (!out.empty()) return out;

  // Members that never came and wait nowhere: the cause.
  for (const auto& g : groups) {
    std::vector<int> free;
    for (int w : g.missing)
      if (!waiting_anywhere.count(w)) free.push_back(w);
    if (free.empty()) continue;
    std::string where;
    for (int w : free) where += (where.empty() ? "" : "; ") + where_is(w);
    Finding f = base(g, free);
    f.title = fmt::format("hang: rank(s) {} never made {} #{} on {}; rank(s) {} wait in it", fmt::join(free, ","),
                          store::op_name(g.calls.front().second->call.op), g.seq, comm_label(run, g.comm), fmt::join(g.waiting, ","));
    f.evidence_text = fmt::format("{} when the job was killed; {}.", group_text(g), where);
    f.suggestion = fmt::format(
        "Every member must make the same collectives in the same order: find why rank(s) {} did not reach call #{} on "
        "{} (a conditional collective, a rank-dependent branch, an exception or early exit on that rank).",
        fmt::join(free, ","), g.seq, comm_label(run, g.comm));
    out.push_back(std::move(f));
  }
  if (!out.empty()) return out;

  // Every member inside its call (a long collective the job was killed in): nobody is missing, no hang to name.
  if (std::all_of(groups.begin(), groups.end(), [](const Group& g) { return g.missing.empty(); })) return out;
  // A cycle: everyone that others wait for waits itself.
  std::string cycle;
  for (const auto& g : groups) cycle += (cycle.empty() ? "" : "; ") + group_text(g);
  const Group* blamed_group = nullptr;
  std::vector<int> blamed;
  for (const auto& mm : step_evidence)
    for (const auto& g : groups)
      if (!blamed_group && run.communicators[g.comm].key == mm.comm_key) blamed_group = &g, blamed = mm.ranks;
  if (!blamed_group) {
    blamed = groups.back().waiting;  // the smallest group: the odd ones out
    blamed_group = &groups.front();  // where the most ranks wait for them
    for (const auto& g : groups)
      if (std::includes(g.missing.begin(), g.missing.end(), blamed.begin(), blamed.end())) {
        blamed_group = &g;
        break;
      }
  }
  Finding f = base(*blamed_group, blamed);
  f.title = fmt::format("hang (deadlock): rank(s) {} and the others wait for each other; rank(s) {} never made {} #{} on {}",
                        fmt::join(blamed, ","), fmt::join(blamed, ","), store::op_name(blamed_group->calls.front().second->call.op),
                        blamed_group->seq, comm_label(run, blamed_group->comm));
  f.evidence_text = fmt::format("when the job was killed: {}.", cycle);
  f.suggestion = fmt::format(
      "Every member must make the same collectives in the same order: rank(s) {} took a different path (a collective "
      "the others do not make, or one skipped); check the code around call #{} on {}.",
      fmt::join(blamed, ","), blamed_group->seq, comm_label(run, blamed_group->comm));
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
