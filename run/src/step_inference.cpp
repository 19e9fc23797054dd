// Step inference from the collectives of the reference communicator: first an exactly repeating call pattern,
// then the payload bytes every step reduces. Both must leave time outside communication in each step (compute);
// a loop that only communicates (a benchmark) has no steps.
#include "step_inference.hpp"

#include <collscope/run/format.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/wait_states.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

namespace collscope::run::detail {
namespace {

// One call of the reference communicator, by seq, from the first rank that recorded it.
struct RefCall {
  std::int32_t seq;
  store::Op op;
  std::int64_t bytes;
  std::int32_t datatype;
  Reduction reduction;
  std::int64_t start_ns, end_ns;  // rank index 0's call (raw); 0 when it has none
};

std::vector<RefCall> reference_calls(const Run& run, const MatchedRun& matched, int ref) {
  std::size_t calls = 0;
  for (const auto& per_rank : matched.call_index) calls = std::max(calls, per_rank[ref].size());
  std::vector<RefCall> out;
  out.reserve(calls);
  for (std::size_t s = 0; s < calls; ++s)
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const auto& idx = matched.call_index[r][ref];
      if (s >= idx.size() || idx[s] < 0) continue;
      const auto& c = run.ranks[r].collectives[idx[s]];
      const bool own = r == 0;
      out.push_back({static_cast<std::int32_t>(s), c.op, c.bytes, c.datatype, c.reduction, own ? c.start_ns : 0,
                     own ? c.end_ns : 0});
      break;
    }
  return out;
}

// Smallest period p (in calls) with which the (op, bytes) sequence repeats for >= min_match of the calls; the
// share matched in `match`.
int find_period(const std::vector<std::pair<int, std::int64_t>>& sig, double min_match, double& match) {
  const std::size_t n = sig.size();
  for (std::size_t p = 1; p <= n / 2; ++p) {
    std::size_t same = 0;
    for (std::size_t i = 0; i + p < n; ++i) same += sig[i] == sig[i + p];
    const double share = double(same) / double(n - p);
    if (share >= min_match) {
      match = share;
      return static_cast<int>(p);
    }
  }
  return 0;
}

// Greedy split of `bytes` into runs summing to exactly `total`; a run that overshoots is dropped (a call of another
// kind in the middle, a metric averaged once per epoch) and the next run starts after it. Ends: index of each
// run's last call.
struct Split {
  std::vector<std::size_t> starts, ends;  // index of each run's first and last call
  std::size_t overshoots = 0;
};
Split split_by_total(const std::vector<std::int64_t>& bytes, std::size_t from, std::int64_t total, std::size_t give_up_after) {
  Split out;
  std::int64_t acc = 0;
  std::size_t start = from;
  for (std::size_t i = from; i < bytes.size(); ++i) {
    if (acc == 0) start = i;
    acc += bytes[i];
    if (acc == total) {
      out.starts.push_back(start);
      out.ends.push_back(i);
      acc = 0;
    } else if (acc > total) {
      ++out.overshoots;
      acc = 0;
      if (out.ends.size() < 2 && out.overshoots >= give_up_after) return out;
    }
  }
  return out;
}

struct Boundaries {
  std::vector<std::int32_t> first_seq;  // per step: seq of its first call (reference communicator)
  std::vector<std::int32_t> last_seq;   // per step: seq of its last call
  double match = 0;                     // how exactly the pattern holds, 0..1
  std::string pattern;                  // for the basis line
};

// The calls that repeat with the smallest period p, grouped `multiple` periods to a step (a step may make the
// same call several times: 4 identical allreduces are one period-1 pattern). The first step starts where the
// gap before the call (compute, on rank index 0) is longest, in the median over the steps.
Boundaries by_call_pattern(const std::vector<RefCall>& calls, const StepInferenceLimits& limits, int multiple,
                           int& period) {
  Boundaries out;
  std::vector<std::pair<int, std::int64_t>> sig;
  std::vector<const RefCall*> payload;
  for (const auto& c : calls) {
    if (is_control_reduction(c.reduction)) continue;  // readiness bit vectors: a background loop's, not a step's
    sig.emplace_back(static_cast<int>(c.op), c.bytes);
    payload.push_back(&c);
  }
  const int p = find_period(sig, limits.min_pattern_match, out.match);
  const std::size_t step_calls = static_cast<std::size_t>(p) * static_cast<std::size_t>(multiple);
  if (p == 0 || sig.size() / step_calls < 2) return out;
  period = static_cast<int>(step_calls);
  std::size_t offset = 0;
  double longest = -1;
  for (std::size_t o = 0; o < step_calls; ++o) {
    std::vector<double> gaps;
    for (std::size_t j = o; j < payload.size(); j += step_calls)
      if (j > 0 && payload[j]->start_ns != 0 && payload[j - 1]->end_ns != 0)
        gaps.push_back(double(payload[j]->start_ns - payload[j - 1]->end_ns));
    const double g = median_of(gaps);
    if (g > longest) longest = g, offset = o;
  }
  for (std::size_t j = offset; j + step_calls <= payload.size(); j += step_calls) {
    out.first_seq.push_back(payload[j]->seq);
    out.last_seq.push_back(payload[j + step_calls - 1]->seq);
  }
  std::map<std::pair<int, std::int64_t>, int> kinds;
  for (std::size_t i = 0; i < step_calls; ++i) ++kinds[sig[offset + i]];
  for (const auto& [k, n] : kinds)
    out.pattern += fmt::format("{}{} {} x{}", out.pattern.empty() ? "" : ", ", store::op_name(static_cast<store::Op>(k.first)),
                               format_bytes(double(k.second)), n);
  return out;
}

Boundaries by_payload_bytes(const Run& run, const std::vector<RefCall>& calls, const StepInferenceLimits& limits,
                            std::int64_t& per_step) {
  Boundaries out;
  // The payload class carrying the most bytes: (op, datatype, reduction) of data-carrying reductions and
  // collectives; control traffic (bitwise/logical reductions) and empty calls are not steps' work.
  std::map<std::tuple<int, std::int32_t, int>, std::int64_t> class_bytes;
  for (const auto& c : calls)
    if (c.bytes > 0 && !is_control_reduction(c.reduction) && c.op != store::Op::Barrier)
      class_bytes[{static_cast<int>(c.op), c.datatype, static_cast<int>(c.reduction)}] += c.bytes;
  if (class_bytes.empty()) return out;
  const auto best = std::max_element(class_bytes.begin(), class_bytes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  std::vector<std::int64_t> bytes;
  std::vector<std::int32_t> seqs;
  for (const auto& c : calls)
    if (c.bytes > 0 && std::tuple(static_cast<int>(c.op), c.datatype, static_cast<int>(c.reduction)) == best)
      bytes.push_back(c.bytes), seqs.push_back(c.seq);
  const std::int64_t all = std::accumulate(bytes.begin(), bytes.end(), std::int64_t{0});
  if (bytes.size() < 2) return out;
  // Candidate totals: the first calls' sums (after up to max_leading_calls calls before the first step). The
  // smallest total that splits the stream exactly, again and again, is the step.
  Split found;
  std::int64_t found_total = 0;
  for (std::size_t from = 0; from < std::min<std::size_t>(bytes.size(), limits.max_leading_calls) && found.ends.empty(); ++from) {
    std::int64_t total = 0;
    for (std::size_t i = from; i < bytes.size() && i < from + static_cast<std::size_t>(limits.max_calls_per_step); ++i) {
      total += bytes[i];
      if (total * 2 > all) break;
      if (found_total != 0 && total >= found_total) break;
      Split s = split_by_total(bytes, from, total, 3);
      const std::size_t tried = s.ends.size() + s.overshoots;
      if (s.ends.size() < 2 || double(s.ends.size()) < limits.min_boundary_hits * double(tried)) continue;
      if (double(total) * double(s.ends.size()) < limits.min_bytes_covered * double(all)) continue;
      found = std::move(s);
      found_total = total;
      break;  // totals grow with i: the first that works is the smallest from this start
    }
  }
  if (found.ends.empty()) return out;
  per_step = found_total;
  out.match = double(found.ends.size()) / double(found.ends.size() + found.overshoots);
  for (std::size_t k = 0; k < found.ends.size(); ++k) {
    out.first_seq.push_back(seqs[found.starts[k]]);
    out.last_seq.push_back(seqs[found.ends[k]]);
  }
  out.pattern = fmt::format("{} of {}{} per step", format_bytes(double(found_total)),
                            store::op_name(static_cast<store::Op>(std::get<0>(best))),
                            std::get<1>(best) > 0 && static_cast<std::size_t>(std::get<1>(best)) < run.strings.size()
                                ? " " + run.strings[std::get<1>(best)]
                                : std::string());
  return out;
}

// Per rank: the union of its collective calls inside [a, b), raw ns, from calls sorted by start.
std::int64_t time_in_calls(const std::vector<std::pair<std::int64_t, std::int64_t>>& sorted, std::int64_t a, std::int64_t b) {
  std::int64_t total = 0, covered = a;
  auto it = std::lower_bound(sorted.begin(), sorted.end(), std::pair(a, INT64_MIN));
  if (it != sorted.begin()) --it;  // a call begun before a may reach into the window
  for (; it != sorted.end() && it->first < b; ++it) {
    const std::int64_t s = std::max(it->first, covered), e = std::min(it->second, b);
    if (e > s) total += e - s, covered = e;
  }
  return total;
}

}  // namespace

namespace {

// Per rank index, one window per step, from the boundaries. Call pattern: from a step's first call to the next
// step's first call (the last step ends with its last call). Payload bytes: from the end of the previous step's
// last payload call (when the previous step's reduction completed) to the end of this step's last one; the first
// step starts at its first payload call, so its compute before that is not seen (first_step_partial).
std::vector<std::vector<StepWindow>> windows_of(const Run& run, const MatchedRun& matched, int ref,
                                                const Boundaries& b, StepMethod method) {
  const std::size_t steps = b.first_seq.size(), nranks = run.ranks.size();
  std::vector<std::vector<StepWindow>> out(nranks);
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& idx = matched.call_index[r][ref];
    const auto& cs = run.ranks[r].collectives;
    auto call = [&](std::int32_t seq) -> const CollectiveCall* {
      return static_cast<std::size_t>(seq) < idx.size() && idx[seq] >= 0 ? &cs[idx[seq]] : nullptr;
    };
    for (std::size_t k = 0; k < steps; ++k) {
      if (method == StepMethod::CallPattern) {
        const CollectiveCall* a = call(b.first_seq[k]);
        const CollectiveCall* z = k + 1 < steps ? call(b.first_seq[k + 1]) : call(b.last_seq[k]);
        if (!a || !z) break;
        out[r].push_back({a->start_ns, k + 1 < steps ? z->start_ns : z->end_ns});
      } else {
        const CollectiveCall* a = k == 0 ? call(b.first_seq[0]) : call(b.last_seq[k - 1]);
        const CollectiveCall* z = call(b.last_seq[k]);
        if (!a || !z) break;
        out[r].push_back({k == 0 ? a->start_ns : a->end_ns, z->end_ns});
      }
    }
  }
  std::size_t complete = steps;
  for (const auto& w : out) complete = std::min(complete, w.size());
  for (auto& w : out) w.resize(complete);
  return out;
}

// Median step time, and the time outside MPI that 90 % of the steps have at least (ns), over ranks
// and steps: a step computes every time, not every other time (grouping 4 calls of a 4-call step 2 or 3 at a time
// gives windows without compute).
std::pair<double, double> step_and_outside(const Run& run, const std::vector<std::vector<StepWindow>>& windows,
                                           std::size_t first, std::vector<double>& durations) {
  std::vector<double> outside;
  durations.clear();
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    // Time inside MPI (run/wait_states.hpp): a polling loop's MPI_Test calls are in MPI, not compute; point-to-point
    // calls too.
    std::vector<std::pair<std::int64_t, std::int64_t>> sorted;
    for (const auto& piece : mpi_pieces(run.ranks[r]))
      if (piece.span.length() > 0) sorted.emplace_back(piece.span.start_ns, piece.span.end_ns);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t k = first; k < windows[r].size(); ++k) {
      const auto& w = windows[r][k];
      const double d = double(w.end_ns - w.start_ns);
      durations.push_back(d);
      outside.push_back(d - double(time_in_calls(sorted, w.start_ns, w.end_ns)));
    }
  }
  std::sort(outside.begin(), outside.end());
  return {median_of(durations), outside.empty() ? 0.0 : outside[outside.size() / 10]};
}

}  // namespace

InferredSteps infer_steps(const Run& run, const MatchedRun& matched, const StepInferenceLimits& limits) {
  InferredSteps out;
  const std::size_t nranks = run.ranks.size();
  const int ref = matched.reference_comm;
  if (nranks == 0 || ref < 0) {
    out.basis = "no collectives to infer steps from";
    return out;
  }
  if (const auto bench = benchmark_in_command(run); !bench.empty()) {
    out.basis = fmt::format("{} is a benchmark: its loops repeat calls to time them, they are not training steps", bench);
    return out;
  }
  const auto calls = reference_calls(run, matched, ref);
  const std::string comm_name = run.communicators[ref].shown_name().empty() ? "the reference communicator" : run.communicators[ref].shown_name();
  // Candidates in order: the repeating calls, one to 16 periods a step; then the payload bytes per step. The first
  // whose steps leave time outside communication (compute) wins: a loop that only communicates (a benchmark
  // timing a collective, a background thread's polling) has iterations, not steps.
  std::string rejected;
  std::vector<double> durations;
  for (int candidate = 0; candidate <= 16; ++candidate) {
    int period = 0;
    std::int64_t per_step = 0;
    const StepMethod method = candidate < 16 ? StepMethod::CallPattern : StepMethod::PayloadBytes;
    const Boundaries b = method == StepMethod::CallPattern ? by_call_pattern(calls, limits, candidate + 1, period)
                                                           : by_payload_bytes(run, calls, limits, per_step);
    if (b.first_seq.empty()) {
      if (method == StepMethod::CallPattern) candidate = 15;  // no (longer) pattern: go to the payload bytes
      continue;
    }
    auto windows = windows_of(run, matched, ref, b, method);
    if (windows.front().size() < 2) continue;
    const bool partial = method == StepMethod::PayloadBytes;
    const auto [median_step, least_outside] = step_and_outside(run, windows, partial ? 1 : 0, durations);
    if (least_outside < limits.min_outside_share * median_step || least_outside < limits.min_outside_ns) {
      if (rejected.empty())
        rejected = fmt::format(
            "{} repeat on {} every {}, but back to back (10 % of the repetitions have {} or less outside "
            "communication): a loop that only communicates, such as a benchmark, has no training steps",
            b.pattern, comm_name, format_duration(median_step), format_duration(least_outside));
      continue;
    }
    // Confidence: how exactly the pattern holds × how regular the step times are × how many steps back it × how
    // much of the reference communicator's active time the steps cover (a pattern in the first seconds of an
    // hour of other traffic is not the job's steps).
    const std::size_t complete = windows.front().size();
    double active = 0, covered = 0;
    for (std::size_t r = 0; r < nranks; ++r) {
      std::int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (auto j : matched.call_index[r][ref])
        if (j >= 0) lo = std::min(lo, run.ranks[r].collectives[j].start_ns), hi = std::max(hi, run.ranks[r].collectives[j].end_ns);
      if (hi > lo) active += double(hi - lo), covered += double(windows[r].back().end_ns - windows[r].front().start_ns);
    }
    const double time_share = active > 0 ? std::min(1.0, covered / active) : 0;
    std::vector<double> deviation;
    for (double d : durations) deviation.push_back(std::fabs(d - median_step));
    const double spread = median_step > 0 ? median_of(deviation) / median_step : 1;  // median absolute deviation
    const double regularity = std::clamp(1.0 - 2.0 * spread, 0.0, 1.0);
    const double count = std::min(1.0, double(complete) / 8.0);
    out.confidence = b.match * regularity * (0.6 + 0.4 * count) * std::min(1.0, time_share / 0.5);
    out.windows = std::move(windows);
    out.method = method;
    out.period_calls = period;
    out.bytes_per_step = per_step;
    out.first_step_partial = partial;
    out.basis = fmt::format(
        "{} on {}: {} steps, the pattern holds at {:.0f} % of step ends, step times within ±{:.0f} % (median absolute "
        "deviation), the steps span {:.0f} % of the time that communicator is active",
        method == StepMethod::CallPattern ? "the same calls each step (" + b.pattern + ")"
                                          : "the same payload each step (" + b.pattern + ")",
        comm_name, complete, 100 * b.match, 100 * spread, 100 * time_share);
    if (partial)
      out.basis += "; the first step starts at its first payload call (its compute before that is not seen) and is not measured";
    return out;
  }
  out.basis = !rejected.empty() ? rejected
                                : fmt::format("no repeating pattern in the {} calls on {} (neither the same calls nor the "
                                              "same payload bytes recur)", calls.size(), comm_name);
  return out;
}

}  // namespace collscope::run::detail
