// Process-set imbalance: two sets doing the same collectives, one much slower.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {


std::vector<Finding> detect_process_set_imbalance(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const int ref = m.reference_comm;
  struct Work {
    int comm;
    std::size_t calls;
    double bytes;
    double time;  // sum over instances of transfer + waiting inside the set
  };
  std::vector<Work> sets;
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    if (static_cast<int>(c) == ref || run.communicators[c].members.size() < 2) continue;
    Work w{static_cast<int>(c), m.comm_first[c + 1] - m.comm_first[c], 0, 0};
    for (std::size_t i = m.comm_first[c]; i < m.comm_first[c + 1]; ++i) {
      w.bytes += double(m.instances[i].bytes);
      w.time += double(m.instances[i].last_completion_ns - m.instances[i].first_arrival_ns);
    }
    if (w.calls > 0) sets.push_back(w);
  }
  const double wall = m.wall_ns;
  for (std::size_t a = 0; a < sets.size(); ++a)
    for (std::size_t b = 0; b < sets.size(); ++b) {
      const auto& fast = sets[a];
      const auto& slow = sets[b];
      if (a == b || run.communicators[fast.comm].size != run.communicators[slow.comm].size) continue;
      // Different sets of ranks only: communicators with the same members (one per thread under
      // MPI_THREAD_MULTIPLE, duplicates for libraries) are the same ranks, so no set of ranks is slower.
      if (run.communicators[fast.comm].members == run.communicators[slow.comm].members) continue;
      // Same work: same number of calls and bytes within 10 %.
      if (std::fabs(double(fast.calls) - double(slow.calls)) > 0.1 * double(slow.calls) ||
          std::fabs(fast.bytes - slow.bytes) > 0.1 * std::max(1.0, slow.bytes))
        continue;
      if (slow.time < limits.process_set_min_ratio * fast.time || slow.time - fast.time < limits.process_set_min_wall_share * wall) continue;
      Finding f;
      f.kind = FindingKind::ProcessSetImbalance;
      f.severity = Severity::Warning;
      const auto& sc = run.communicators[slow.comm];
      const auto& fc = run.communicators[fast.comm];
      f.comm_key = sc.key;
      f.comm_name = sc.name;
      f.ranks = sc.members;
      f.title = fmt::format("process set {} ({}) takes {:.1f}x as long as {} ({}) for the same collectives",
                            sc.shown_name().empty() ? "comm" : sc.shown_name(), fmt::join(sc.members, ","),
                            slow.time / fast.time, fc.shown_name().empty() ? "comm" : fc.shown_name(),
                            fmt::join(fc.members, ","));
      f.cost_ns = slow.time - fast.time;
      f.evidence = {{"slow_set_time_ns", slow.time}, {"fast_set_time_ns", fast.time},
                    {"calls", double(slow.calls)}, {"bytes", slow.bytes}};
      f.evidence_text = fmt::format("{} calls, {} each set; {} vs {} inside the collectives.", slow.calls,
                                    format_bytes(slow.bytes), format_ms(slow.time), format_ms(fast.time));
      f.suggestion = "Ranks of the slow set are slower or worse connected: check their placement (same node/NIC), "
                     "the straggler finding for its ranks, and balance the work between the sets.";
      out.push_back(std::move(f));
    }
  return out;
}

}  // namespace collscope::analyzer
