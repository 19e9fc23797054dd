// Stall: a job killed long after its last payload collective while its ranks kept communicating (Horovod's
// background threads cycle their readiness negotiation forever when one rank never submits a tensor). No call is
// left in flight, so the hang detector sees nothing; the count of calls differs only by what the kill cut off.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace collscope::analyzer {

std::vector<Finding> detect_stall(const DetectorInput& in) {
  const Run& run = in.run;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const std::size_t n = run.ranks.size();
  if (n < 2) return out;
  // Killed: some rank's file was never closed. A job that ended by itself did not stall.
  const bool killed = std::any_of(run.ranks.begin(), run.ranks.end(), [](const auto& r) { return r.monotonic_end_ns == 0; });
  const bool in_flight = std::any_of(run.ranks.begin(), run.ranks.end(), [](const auto& r) { return !r.calls_in_flight.empty(); });
  if (!killed || in_flight) return out;  // calls in flight: the hang detector says who waits where
  // Per rank (aligned): its last payload collective (data-carrying, not control) and its last call of any kind.
  std::int64_t last_payload = INT64_MIN, last_call = INT64_MIN;
  const CollectiveCall* last_payload_call = nullptr;
  std::vector<std::int64_t> rank_last(n, INT64_MIN);
  std::vector<std::int64_t> payload_gaps_end;  // ends of payload calls, rank index 0, for their typical spacing
  for (std::size_t r = 0; r < n; ++r)
    for (const auto& c : run.ranks[r].collectives) {
      const std::int64_t end = in.clocks.aligned(static_cast<int>(r), c.end_ns);
      rank_last[r] = std::max(rank_last[r], end);
      last_call = std::max(last_call, end);
      if (c.bytes <= 0 || run::is_control_reduction(c.reduction) || c.op == store::Op::Barrier) continue;
      if (r == 0) payload_gaps_end.push_back(end);
      if (end > last_payload) last_payload = end, last_payload_call = &c;
    }
  if (!last_payload_call || last_call <= last_payload) return out;
  // The quiet time must dwarf the job's rhythm: the payload calls' typical spacing (or its steps).
  std::sort(payload_gaps_end.begin(), payload_gaps_end.end());
  std::vector<double> spacing;
  for (std::size_t k = 1; k < payload_gaps_end.size(); ++k) spacing.push_back(double(payload_gaps_end[k] - payload_gaps_end[k - 1]));
  const double rhythm = std::max(in.steps.steps.empty() ? median_of(spacing) : in.steps.median_step_ns, 1e6);
  const double quiet = double(last_call - last_payload);
  if (quiet < limits.stalled_min_quiet_ns || quiet < limits.stalled_min_quiet_rhythms * rhythm) return out;
  // Who still made calls in the last part of the quiet time, and who stopped long before the end.
  std::vector<int> cycling, stopped;
  std::int64_t control_calls = 0;
  for (std::size_t r = 0; r < n; ++r) {
    for (const auto& c : run.ranks[r].collectives)
      if (in.clocks.aligned(static_cast<int>(r), c.end_ns) > last_payload) ++control_calls;
    (double(last_call - rank_last[r]) < 0.1 * quiet ? cycling : stopped).push_back(run.ranks[r].world_rank);
  }
  const auto workload = run::describe_workload(run);
  Finding f;
  f.kind = FindingKind::Stall;
  f.severity = Severity::Critical;
  f.ranks = stopped.empty() ? cycling : stopped;
  f.comm_key = run.communicators[last_payload_call->comm].key;
  f.comm_name = run.communicators[last_payload_call->comm].name;
  f.cost_ns = quiet;
  f.evidence = {{"quiet_ns", quiet},
                {"last_payload_ns", double(last_payload - in.clocks.origin_ns)},
                {"calls_after_last_payload", double(control_calls)},
                {"ranks_still_calling", double(cycling.size())},
                {"ranks_stopped", double(stopped.size())}};
  const std::string last = fmt::format("{} #{} of {} at {} into the run", store::op_name(last_payload_call->op),
                                       last_payload_call->seq, format_bytes(double(last_payload_call->bytes)),
                                       format_duration(double(last_payload - in.clocks.origin_ns)));
  if (stopped.empty()) {
    f.title = fmt::format("stalled: no payload collective for {} before the job was killed; rank(s) {} kept "
                          "exchanging control messages, waiting",
                          format_duration(quiet), fmt::join(cycling, ","));
    f.evidence_text = fmt::format(
        "the last payload collective was {}; after it every rank ({}) made only control calls ({} of them, {}) "
        "until the job was killed {} later: each waits for work some rank never submits. No call was in flight, so "
        "the MPI calls cannot say which rank withholds it{}.",
        last, fmt::join(cycling, ","), control_calls,
        workload.horovod ? "Horovod's readiness negotiation cycling" : "bit vectors and flags", format_duration(quiet),
        workload.horovod ? "; Horovod's stall inspector names it in the job's log (\"Missing ranks\", after "
                           "HOROVOD_STALL_CHECK_TIME_SECONDS, 60 s by default)"
                         : "");
    f.suggestion = workload.horovod
                       ? "Find the tensor one rank does not submit: a collective (hvd.allreduce, broadcast) called "
                         "under a rank-dependent condition, or a rank stuck before it. Horovod's log names the tensor "
                         "and the missing ranks; run with HOROVOD_STALL_CHECK_TIME_SECONDS lower to see it sooner."
                       : "Find the work one rank never submits: a collective called under a rank-dependent condition, "
                         "or a rank stuck before it.";
  } else {
    f.title = fmt::format("stalled: rank(s) {} stopped communicating; rank(s) {} kept waiting for {} until the job was killed",
                          fmt::join(stopped, ","), fmt::join(cycling, ","), format_duration(quiet));
    std::string when;
    for (std::size_t r = 0; r < n; ++r)
      if (std::find(stopped.begin(), stopped.end(), run.ranks[r].world_rank) != stopped.end())
        when += fmt::format("{}rank {}: last call {} into the run", when.empty() ? "" : "; ", run.ranks[r].world_rank,
                            format_duration(double(rank_last[r] - in.clocks.origin_ns)));
    f.evidence_text = fmt::format("the last payload collective was {}; {}; the others made {} control calls after it.",
                                  last, when, control_calls);
    f.suggestion = fmt::format("Find what rank(s) {} were doing when they stopped calling (a stack trace of the "
                               "hung job: py-spy dump, gdb): computing forever, blocked on I/O, or outside the "
                               "framework's collectives.",
                               fmt::join(stopped, ","));
  }
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
