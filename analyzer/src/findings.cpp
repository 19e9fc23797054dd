// The detectors. Each turns numbers from matching and steps into a Finding with evidence, cost and a suggestion.
#include <collscope/analyzer/findings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <regex>


namespace collscope::analyzer {

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::Straggler: return "straggler";
    case FindingKind::LatencyBound: return "latency_bound";
    case FindingKind::LowBandwidth: return "low_bandwidth";
    case FindingKind::ExposedCommunication: return "exposed_communication";
    case FindingKind::UnderfilledFusion: return "underfilled_fusion";
    case FindingKind::CycleTimeStall: return "cycle_time_stall";
    case FindingKind::ProcessSetImbalance: return "process_set_imbalance";
    case FindingKind::Mismatch: return "mismatch";
  }
  return "unknown";
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "info";
}

namespace {

constexpr std::int64_t kSmallMessageBytes = 64 << 10;  // below this a collective is latency-dominated (shm/IB)



std::int64_t next_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

double run_wall_ns(const MatchedRun& m) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& i : m.instances) lo = std::min(lo, i.first_arrival_ns), hi = std::max(hi, i.last_completion_ns);
  return hi > lo ? double(hi - lo) : 0.0;
}


bool carries_payload(store::Op op) { return op != store::Op::Barrier && op != store::Op::Unknown; }

}  // namespace

namespace {

// Per rank index: how much later than the other ranks it starts the phases of a step (NVTX ranges inside the
// "step" ranges, matched by name and step index), ns per step. Catches a straggler whose lateness is absorbed
// outside collectives: a Horovod-style background thread negotiates readiness, so every collective starts on
// all ranks together and only the phases before it show who was late.
std::vector<double> phase_lag_per_step(const Run& run, std::size_t steps) {
  const std::size_t n = run.ranks.size();
  std::vector<double> lag(n, 0);
  const StepNames step_names(run);
  if (step_names.empty() || steps == 0 || n < 2) return lag;
  // offsets[name][rank][step] = start of the first range of that name in the step − step start (ns), −1 if none
  std::map<int, std::vector<std::vector<double>>> offsets;
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<NvtxRange> windows;
    for (const auto& x : run.ranks[r].nvtx_ranges)
      if (step_names.contains(x.name) && x.end_ns > x.start_ns) windows.push_back(x);
    std::sort(windows.begin(), windows.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    if (windows.size() < steps) return std::vector<double>(n, 0);
    for (const auto& x : run.ranks[r].nvtx_ranges) {
      if (step_names.contains(x.name)) continue;
      auto it = std::upper_bound(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(steps), x.start_ns,
                                 [](std::int64_t v, const NvtxRange& w) { return v < w.start_ns; });
      if (it == windows.begin()) continue;
      --it;
      if (x.start_ns >= it->end_ns) continue;
      const std::size_t k = static_cast<std::size_t>(it - windows.begin());
      auto& per_rank = offsets[x.name];
      if (per_rank.empty()) per_rank.assign(n, std::vector<double>(steps, -1));
      auto& slot = per_rank[r][k];
      const double off = double(x.start_ns - it->start_ns);
      if (slot < 0 || off < slot) slot = off;
    }
  }
  for (const auto& [name, per_rank] : offsets) {
    for (std::size_t r = 0; r < n; ++r) {
      std::vector<double> lags;
      for (std::size_t k = 0; k < steps; ++k) {
        if (per_rank[r][k] < 0) continue;
        std::vector<double> others;
        for (std::size_t o = 0; o < n; ++o)
          if (o != r && per_rank[o][k] >= 0) others.push_back(per_rank[o][k]);
        if (others.empty()) continue;
        lags.push_back(per_rank[r][k] - median_of(others));
      }
      // A phase every rank has in (nearly) every step; a rank-specific range says nothing by its start.
      // Median over steps: one slow step (a page fault, a descheduled thread) is not a straggler.
      if (!lags.empty() && lags.size() >= steps * 9 / 10) lag[r] = std::max(lag[r], median_of(lags));
    }
  }
  return lag;
}

// Per rank index: the median over steps of what the rank held the others up in that step's synchronising
// collectives (ns). A straggler is late step after step; one long stall (a descheduled process on a busy host)
// can outweigh that in the run's total but not in the median. Empty when the run has no steps.
std::vector<double> median_blame_per_step(const Run& run, const MatchedRun& m, const StepSummary& steps) {
  const std::size_t n = run.ranks.size(), nsteps = steps.steps.size();
  if (nsteps == 0) return {};
  std::vector<std::vector<double>> per_step(n, std::vector<double>(nsteps, 0));
  std::map<int, std::size_t> index_of;  // world rank → rank index
  for (std::size_t r = 0; r < n; ++r) index_of[run.ranks[r].world_rank] = r;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !store::is_synchronising(i.op)) continue;
    auto it = std::upper_bound(steps.steps.begin(), steps.steps.end(), i.last_arrival_ns,
                               [](std::int64_t t, const Step& s) { return t < s.start_ns; });
    if (it == steps.steps.begin()) continue;
    --it;
    if (i.last_arrival_ns >= it->end_ns) continue;
    const auto r = index_of.find(i.last_arriver);
    if (r == index_of.end()) continue;
    per_step[r->second][static_cast<std::size_t>(it - steps.steps.begin())] +=
        double(i.last_arrival_ns - i.second_last_arrival_ns);
  }
  std::vector<double> out(n);
  for (std::size_t r = 0; r < n; ++r) out[r] = median_of(per_step[r]);
  return out;
}

}  // namespace

std::vector<Finding> detect_stragglers(const Run& run, const MatchedRun& m, const StepSummary& steps) {
  std::vector<Finding> out;
  const std::size_t n = run.ranks.size();
  if (n < 2) return out;
  const double nsteps = steps.steps.empty() ? 1.0 : double(steps.steps.size());
  // Two signals of lateness per rank (ns over the run): what it held up in collectives, and how late it starts
  // the step's phases. Each must single out one rank (3x any other) on its own; the larger one that does wins.
  const auto lag = phase_lag_per_step(run, steps.steps.size());
  auto dominant = [n](const std::vector<double>& v, std::size_t& top, double& others) {
    top = 0;
    for (std::size_t r = 1; r < n; ++r)
      if (v[r] > v[top]) top = r;
    others = 0;
    for (std::size_t r = 0; r < n; ++r)
      if (r != top) others = std::max(others, v[r]);
    return v[top] > 0 && v[top] >= 3 * others;
  };
  std::vector<double> phase_total(n);
  for (std::size_t r = 0; r < n; ++r) phase_total[r] = std::max(0.0, lag[r]) * nsteps;
  std::size_t top_c = 0, top_p = 0;
  double others_c = 0, others_p = 0;
  const bool by_collectives = dominant(m.blame_ns_by_rank, top_c, others_c);
  const bool by_phases = dominant(phase_total, top_p, others_p);
  if (!by_collectives && !by_phases) return out;
  const bool from_phases = by_phases && (!by_collectives || phase_total[top_p] > m.blame_ns_by_rank[top_c]);
  const std::size_t top = from_phases ? top_p : top_c;
  const double others = from_phases ? others_p : others_c;
  const double blame = from_phases ? phase_total[top_p] : m.blame_ns_by_rank[top_c];
  const double step_ns = steps.steps.empty() ? run_wall_ns(m) : steps.mean_step_ns;
  const double per_step = blame / nsteps;
  const int world_rank = run.ranks[top].world_rank;
  std::int64_t late = 0, sync = 0;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !store::is_synchronising(i.op)) continue;
    ++sync;
    if (i.last_arriver == world_rank && i.last_arrival_ns - i.second_last_arrival_ns > 20000) ++late;
  }
  // A straggler holds the others up by a real share of the step, repeatedly, and far more than any other rank.
  // Phase starts carry the compute noise of every rank (a shared, busy host shifts them by several ms), so they
  // need a larger share of the step than the waiting measured inside collectives.
  const double min_share = from_phases ? 0.15 : 0.05;
  if (step_ns <= 0 || per_step < min_share * step_ns || per_step < 200e3) return out;
  if (!from_phases) {
    // The phase lag is already a median over steps; the collectives' blame must be repeated too.
    const auto typical = median_blame_per_step(run, m, steps);
    if (!typical.empty() && typical[top] < std::max(min_share * step_ns, 200e3)) return out;
  }
  Finding f;
  f.kind = FindingKind::Straggler;
  f.severity = per_step >= 0.2 * step_ns ? Severity::Critical : Severity::Warning;
  f.ranks = {world_rank};
  f.title = fmt::format("rank {} is a straggler: the others wait {} per step for it", world_rank, format_ms(per_step));
  f.cost_ns = blame;
  f.evidence = {{"delay_per_step_ns", per_step},
                {"delay_total_ns", blame},
                {"next_rank_delay_total_ns", others},
                {"late_arrivals", double(late)},
                {"synchronising_collectives", double(sync)},
                {"step_time_ns", step_ns},
                {"step_time_without_straggler_ns", std::max(0.0, step_ns - per_step)},
                {"share_of_step_pct", 100 * per_step / step_ns}};
  f.evidence["from_step_phases"] = from_phases ? 1 : 0;
  f.evidence_text = fmt::format(
      "rank {}{} arrived last (by > 20 us) at {} of {} synchronising collectives{}; it alone held the others up {} "
      "in total, {} per step ({:.0f} % of the {} step); the next worst rank {}. Without it a step would take about {}.",
      world_rank, run.ranks[top].host.empty() ? "" : " on " + run.ranks[top].host, late, sync,
      from_phases ? " and starts the phases of each step (NVTX ranges) later than the others" : "", format_ms(blame), format_ms(per_step),
      100 * per_step / step_ns, format_ms(step_ns), format_ms(others), format_ms(std::max(0.0, step_ns - per_step)));
  f.suggestion = fmt::format(
      "Find what makes rank {} slow before it communicates (input pipeline, CPU binding, a slower GPU or host, noisy "
      "neighbours); balancing it saves about {} per step.",
      world_rank, format_ms(per_step));
  out.push_back(std::move(f));
  return out;
}

// The fusion threshold of the job: env HOROVOD_FUSION_THRESHOLD, else "--fusion-threshold N" on its command line.
static std::optional<std::int64_t> fusion_threshold_of(const Run& run) {
  if (auto v = run.env_int("HOROVOD_FUSION_THRESHOLD")) return v;
  static const std::regex pattern(R"(--fusion[-_]threshold[= ]+([0-9]+))");
  for (const auto& r : run.ranks) {
    auto cmd = r.meta_value(std::string(store::meta_key::kCommandLine));
    std::smatch match;
    if (cmd && std::regex_search(*cmd, match, pattern)) return std::stoll(match[1].str());
  }
  return std::nullopt;
}

std::vector<Finding> detect_latency_bound(const Run& run, const MatchedRun& m, const StepSummary& steps) {
  std::vector<Finding> out;
  // Fusable traffic: payload collectives from 1 KiB (below: control messages such as Horovod's readiness
  // negotiation, which fusion does not touch) up to 1 MiB (above: bandwidth dominates the cost).
  constexpr std::int64_t kControlBytes = 1 << 10, kFusableBytes = 1 << 20;
  double total_ns = 0, small_ns = 0, small_bytes = 0;
  std::int64_t small = 0;
  std::vector<double> small_durations;
  double best_algbw = 0;  // bytes/ns of the largest messages: what fused traffic would get
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.bytes < kControlBytes) continue;
    total_ns += double(i.duration_ns);
    best_algbw = std::max(best_algbw, i.algbw_gbps());
    if (i.bytes < kFusableBytes) {
      ++small;
      small_ns += double(i.duration_ns);
      small_bytes += double(i.bytes);
      if (small_durations.size() < 100000) small_durations.push_back(double(i.duration_ns));
    }
  }
  if (total_ns <= 0 || small == 0) return out;
  const double nsteps = steps.steps.empty() ? 1.0 : double(steps.steps.size());
  const double small_per_step = double(small) / nsteps;
  const double share = small_ns / total_ns;
  // Many separate messages per step: what fusion would merge (a fused job sends a few per step).
  if (share < 0.5 || small_per_step < 16 || (steps.steps.empty() && small < 100)) return out;
  const auto threshold = fusion_threshold_of(run);
  const double bytes_per_step = small_bytes / nsteps;
  std::int64_t suggested = std::clamp<std::int64_t>(next_pow2(static_cast<std::int64_t>(bytes_per_step)), 1 << 20, 256 << 20);
  // A threshold that already holds a step's tensors is not what splits them (the cycle time or the job is).
  if (threshold && *threshold >= next_pow2(static_cast<std::int64_t>(bytes_per_step))) return out;
  if (threshold && *threshold > 0) suggested = std::min<std::int64_t>(256 << 20, std::max(suggested, next_pow2(*threshold * 4)));
  const double latency_ns = median_of(small_durations);
  // Fused: about one collective per step carrying the same bytes at the bandwidth of large messages.
  const double fused_ns = nsteps * latency_ns + (best_algbw > 0 ? small_bytes / best_algbw : 0.0);
  Finding f;
  f.kind = FindingKind::LatencyBound;
  f.severity = share >= 0.8 ? Severity::Critical : Severity::Warning;
  f.title = fmt::format("latency-bound: {:.0f} small collectives per step take {:.0f} % of communication time",
                        small_per_step, 100 * share);
  f.cost_ns = std::max(0.0, small_ns - fused_ns);
  f.evidence = {{"small_collectives", double(small)},
                {"small_collectives_per_step", small_per_step},
                {"small_message_limit_bytes", double(kFusableBytes)},
                {"small_time_ns", small_ns},
                {"share_of_comm_time_pct", 100 * share},
                {"median_small_duration_ns", latency_ns},
                {"small_bytes_per_step", bytes_per_step},
                {"suggested_fusion_threshold_bytes", double(suggested)}};
  if (threshold) f.evidence["fusion_threshold_bytes"] = double(*threshold);
  f.evidence_text = fmt::format(
      "{} collectives under {} ({:.0f} per step, {} per step in all) took {} = {:.0f} % of the time in collectives; "
      "each costs about {} whatever its size{}.",
      small, format_bytes(kFusableBytes), small_per_step, format_bytes(bytes_per_step), format_ms(small_ns), 100 * share,
      format_ms(latency_ns), threshold ? fmt::format("; the fusion threshold is {}", format_bytes(double(*threshold))) : "");
  f.suggestion = fmt::format(
      "Raise the fusion threshold: HOROVOD_FUSION_THRESHOLD={} ({}) so that a step's tensors travel in one "
      "collective (or bucket gradients to that size); saves about {}.",
      suggested, format_bytes(double(suggested)), format_ms(f.cost_ns));
  out.push_back(std::move(f));
  return out;
}

std::vector<Finding> detect_low_bandwidth(const Run& run, const MatchedRun& m, const AnalysisOptions& options) {
  std::vector<Finding> out;
  struct Bucket {
    std::vector<double> busbw;
    std::vector<double> durations;  // ns, per instance (parallel to busbw)
    double duration = 0;
    std::int64_t bytes = 0;
  };
  std::map<std::tuple<int, int, int>, Bucket> buckets;  // (comm, op, log2 bytes)
  double total_ns = 0;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.duration_ns <= 0) continue;
    total_ns += double(i.duration_ns);
    if (i.bytes < kSmallMessageBytes) continue;
    auto& b = buckets[{i.comm, static_cast<int>(i.op), static_cast<int>(std::log2(double(i.bytes)))}];
    b.busbw.push_back(i.busbw_gbps());
    b.durations.push_back(double(i.duration_ns));
    b.duration += double(i.duration_ns);
    b.bytes = std::max(b.bytes, i.bytes);
  }
  for (auto& [key, b] : buckets) {
    if (b.busbw.size() < 8) continue;
    auto sorted = b.busbw;
    std::sort(sorted.begin(), sorted.end());
    const double best = sorted[sorted.size() * 95 / 100];  // p95: the best this size reaches here, not one outlier
    const double median = sorted[sorted.size() / 2];
    const auto [comm, op, log2bytes] = key;
    const auto& cname = run.communicators[comm].name;
    const double link = options.link_gbps;
    const bool below_link = link > 0 && b.bytes >= (1 << 20) && median < 0.5 * link;
    const bool below_best = median < 0.5 * best;
    if (!below_link && !below_best) continue;
    const double target = below_link ? link : best;
    // Time above what the target bandwidth would have taken, instance by instance: a slow instance is also a
    // long one, so weighting by the bucket's mean duration would undercount it.
    double cost = 0;
    for (std::size_t k = 0; k < b.busbw.size(); ++k)
      if (b.busbw[k] < target) cost += (1.0 - b.busbw[k] / target) * b.durations[k];
    if (cost < 0.05 * total_ns || cost < 1e6) continue;
    Finding f;
    f.kind = FindingKind::LowBandwidth;
    f.severity = Severity::Warning;
    f.comm_key = run.communicators[comm].key;
    f.comm_name = cname;
    f.ranks = run.communicators[comm].members;
    const std::string size = format_bytes(std::ldexp(1.0, log2bytes));
    f.title = fmt::format("{} of {}..{} on {} reach {:.2f} GB/s bus bandwidth, {} {:.2f} GB/s",
                          store::op_name(static_cast<store::Op>(op)), size, format_bytes(std::ldexp(1.0, log2bytes + 1)),
                          cname.empty() ? "comm" : cname, median, below_link ? "link" : "best seen", target);
    f.cost_ns = cost;
    f.evidence = {{"median_busbw_gbps", median}, {"best_busbw_gbps", best}, {"instances", double(b.busbw.size())},
                  {"time_ns", b.duration}, {"size_bucket_bytes", std::ldexp(1.0, log2bytes)}};
    if (link > 0) f.evidence["link_gbps"] = link;
    f.evidence_text = fmt::format("{} instances, median busbw {:.2f} GB/s, p95 {:.2f} GB/s{}; {} spent in them.",
                                  b.busbw.size(), median, best, link > 0 ? fmt::format(", link {:.1f} GB/s", link) : "",
                                  format_ms(b.duration));
    f.suggestion = below_link
                       ? "Check the transport actually used (NCCL_DEBUG=INFO: IB/NVLink vs sockets, NCCL_IB_HCA, "
                         "NCCL_SOCKET_IFNAME), NIC/GPU affinity and NCCL_ALGO/NCCL_PROTO for this size."
                       : "The same size sometimes runs much faster: look for contention (other jobs, concurrent "
                         "collectives on other communicators) and pin NCCL_ALGO/NCCL_PROTO for this size.";
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> detect_exposed_communication(const Run& run, const StepSummary& steps) {
  std::vector<Finding> out;
  if (steps.steps.empty() || steps.mean_step_ns <= 0 || run.ranks.size() < 2) return out;
  const double share = steps.mean_exposed_ns / steps.mean_step_ns;
  if (share < 0.2) return out;
  const bool has_gpu = std::any_of(run.ranks.begin(), run.ranks.end(), [](const auto& r) { return !r.gpu_activities.empty(); });
  const bool has_cpu_compute = steps.cpu_compute_ranges;
  // A run imported from a Horovod Timeline records Horovod's own activities, never the framework's compute: the
  // timeline cannot tell whether compute hid the communication, so no claim either way.
  const bool imported = std::any_of(run.ranks.begin(), run.ranks.end(),
                                    [](const auto& r) { return r.meta_value("import_format").has_value(); });
  if (imported && !has_gpu) return out;
  Finding f;
  f.kind = FindingKind::ExposedCommunication;
  f.severity = share >= 0.4 ? Severity::Warning : Severity::Info;
  f.title = fmt::format("{:.0f} % of each step is communication not overlapped with compute", 100 * share);
  f.cost_ns = steps.mean_exposed_ns * double(steps.steps.size());
  f.evidence = {{"exposed_comm_per_step_ns", steps.mean_exposed_ns}, {"comm_per_step_ns", steps.mean_comm_ns},
                {"wait_per_step_ns", steps.mean_wait_ns}, {"step_time_ns", steps.mean_step_ns},
                {"share_of_step_pct", 100 * share}};
  f.evidence_text = fmt::format(
      "per step {} in collectives, of which {} waiting for other ranks and {} transfer not hidden behind {}; step {}.",
      format_ms(steps.mean_comm_ns), format_ms(steps.mean_wait_ns), format_ms(steps.mean_exposed_ns),
      has_gpu ? "GPU kernels" : has_cpu_compute ? "compute (NVTX ranges such as forward/backward that hold no call of their own thread)"
                                                : "compute (no GPU activity or NVTX compute ranges recorded: all of it counts as exposed)",
      format_ms(steps.mean_step_ns));
  f.suggestion = "Overlap communication with the backward pass: start gradient allreduces as buckets become ready "
                 "(Horovod/DDP do this), use non-blocking collectives, or a larger batch per step.";
  out.push_back(std::move(f));
  return out;
}

std::vector<Finding> detect_fusion_and_cycle_time(const Run& run, const MatchedRun& m, const StepSummary& steps) {
  std::vector<Finding> out;
  const auto cycle_text = run.env("HOROVOD_CYCLE_TIME");
  const auto threshold = fusion_threshold_of(run);
  if (!cycle_text || !threshold || *threshold <= 0) return out;
  double cycle_ms = 0;
  try {
    cycle_ms = std::stod(*cycle_text);
  } catch (const std::exception&) {
    return out;
  }
  if (cycle_ms <= 0) return out;
  const double cycle_ns = cycle_ms * 1e6;
  // Fill of fused collectives: the fusion buffers (address reused with many sizes), else the allreduces themselves.
  double fused_bytes = 0, fused_uses = 0;
  for (const auto& r : run.ranks)
    for (const auto& b : r.buffers)
      if (b.uses >= 10 && b.bytes_max > b.bytes_min) fused_bytes += double(b.bytes_total), fused_uses += double(b.uses);
  const int ref = m.reference_comm;
  if (ref < 0) return out;
  if (fused_uses == 0)
    for (std::size_t i = m.comm_first[ref]; i < m.comm_first[ref + 1]; ++i)
      if (m.instances[i].op == store::Op::Allreduce) fused_bytes += double(m.instances[i].bytes), fused_uses += 1;
  if (fused_uses == 0) return out;
  const double fill = fused_bytes / fused_uses / double(*threshold);
  // Gaps between consecutive collectives of the reference communicator on each rank: a cycle-time stall makes
  // them cluster just under the cycle time (Horovod sleeps the rest of the cycle).
  double gaps_total = 0, matched_total = 0;
  std::int64_t gaps = 0, matched_gaps = 0;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& idx = m.call_index[r][ref];
    const auto& calls = run.ranks[r].collectives;
    for (std::size_t s = 1; s < idx.size(); ++s) {
      if (idx[s] < 0 || idx[s - 1] < 0) continue;
      const double gap = double(calls[idx[s]].start_ns - calls[idx[s - 1]].end_ns);
      if (gap <= 0) continue;
      ++gaps;
      gaps_total += gap;
      if (gap >= 0.3 * cycle_ns && gap <= 1.3 * cycle_ns) ++matched_gaps, matched_total += gap;
    }
  }
  if (gaps == 0) return out;
  const double nranks = double(run.ranks.size());
  const double wall = steps.steps.empty() ? run_wall_ns(m) : steps.mean_step_ns * double(steps.steps.size());
  const double stall_ns = matched_total / nranks;
  const bool stall = fill < 0.25 && matched_gaps >= 0.3 * double(gaps) && wall > 0 && stall_ns >= 0.1 * wall &&
                     cycle_ms >= 1.0;
  if (stall) {
    const double suggested = std::max(0.5, std::round(cycle_ms / 5 * 10) / 10);
    Finding f;
    f.kind = FindingKind::CycleTimeStall;
    f.severity = stall_ns >= 0.25 * wall ? Severity::Critical : Severity::Warning;
    f.title = fmt::format("cycle-time stall: collectives wait for the {:.1f} ms Horovod cycle with buffers {:.0f} % full",
                          cycle_ms, 100 * fill);
    f.cost_ns = stall_ns * (1.0 - suggested / cycle_ms);
    f.evidence = {{"cycle_time_ms", cycle_ms},        {"fusion_threshold_bytes", double(*threshold)},
                  {"mean_fill_pct", 100 * fill},      {"gaps_matching_cycle", double(matched_gaps)},
                  {"gaps", double(gaps)},             {"stall_ns", stall_ns},
                  {"suggested_cycle_time_ms", suggested}};
    f.evidence_text = fmt::format(
        "{} of {} gaps between collectives are {:.1f}–{:.1f} ms (the cycle time is {:.1f} ms), {} per rank in all, "
        "while fused collectives carry on average {} of the {} threshold.",
        matched_gaps, gaps, 0.3 * cycle_ms, 1.3 * cycle_ms, cycle_ms, format_ms(stall_ns), format_bytes(fused_bytes / fused_uses),
        format_bytes(double(*threshold)));
    f.suggestion = fmt::format("Lower the cycle time: HOROVOD_CYCLE_TIME={:.1f} (ms); the buffers are not the limit.", suggested);
    out.push_back(std::move(f));
  } else if (fill < 0.05 && fused_uses >= 10 && matched_gaps < 0.3 * double(gaps)) {
    Finding f;
    f.kind = FindingKind::UnderfilledFusion;
    f.severity = Severity::Info;
    f.title = fmt::format("fusion buffer under-filled: fused collectives use {:.1f} % of the {} threshold", 100 * fill,
                          format_bytes(double(*threshold)));
    f.evidence = {{"mean_fill_pct", 100 * fill}, {"fusion_threshold_bytes", double(*threshold)},
                  {"fused_collectives", fused_uses}};
    f.evidence_text = fmt::format("{:.0f} fused collectives carry on average {}.", fused_uses, format_bytes(fused_bytes / fused_uses));
    f.suggestion = fmt::format(
        "Tensors are sent before more are ready: raise HOROVOD_CYCLE_TIME a little (now {:.1f} ms) so that more tensors "
        "share a collective, or lower HOROVOD_FUSION_THRESHOLD to the fill actually reached ({}) to save memory.",
        cycle_ms, format_bytes(fused_bytes / fused_uses));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> detect_process_set_imbalance(const Run& run, const MatchedRun& m) {
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
  const double wall = run_wall_ns(m);
  for (std::size_t a = 0; a < sets.size(); ++a)
    for (std::size_t b = 0; b < sets.size(); ++b) {
      const auto& fast = sets[a];
      const auto& slow = sets[b];
      if (a == b || run.communicators[fast.comm].size != run.communicators[slow.comm].size) continue;
      // Same work: same number of calls and bytes within 10 %.
      if (std::fabs(double(fast.calls) - double(slow.calls)) > 0.1 * double(slow.calls) ||
          std::fabs(fast.bytes - slow.bytes) > 0.1 * std::max(1.0, slow.bytes))
        continue;
      if (slow.time < 1.5 * fast.time || slow.time - fast.time < 0.05 * wall) continue;
      Finding f;
      f.kind = FindingKind::ProcessSetImbalance;
      f.severity = Severity::Warning;
      const auto& sc = run.communicators[slow.comm];
      const auto& fc = run.communicators[fast.comm];
      f.comm_key = sc.key;
      f.comm_name = sc.name;
      f.ranks = sc.members;
      f.title = fmt::format("process set {} ({}) takes {:.1f}x as long as {} ({}) for the same collectives",
                            sc.name.empty() ? "comm" : sc.name, fmt::join(sc.members, ","), slow.time / fast.time,
                            fc.name.empty() ? "comm" : fc.name, fmt::join(fc.members, ","));
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

namespace {

std::string comm_label(const Run& run, int comm) {
  const auto& name = run.communicators[comm].name;
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

std::vector<Finding> detect_mismatches(const Run& run, const MatchedRun& m) {
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
    f.title = fmt::format("collective mismatch on {} at seq {}: rank(s) {} diverge", f.comm_name.empty() ? "comm" : f.comm_name,
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

std::vector<Finding> detect_findings(const Run& run, const MatchedRun& m, const StepSummary& steps, const AnalysisOptions& options) {
  std::vector<Finding> all;
  auto add = [&](std::vector<Finding> v) { all.insert(all.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end())); };
  add(detect_mismatches(run, m));
  add(detect_stragglers(run, m, steps));
  add(detect_latency_bound(run, m, steps));
  add(detect_low_bandwidth(run, m, options));
  add(detect_exposed_communication(run, steps));
  add(detect_fusion_and_cycle_time(run, m, steps));
  add(detect_process_set_imbalance(run, m));
  std::stable_sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    const bool am = a.kind == FindingKind::Mismatch, bm = b.kind == FindingKind::Mismatch;
    if (am != bm) return am;
    return a.cost_ns > b.cost_ns;
  });
  return all;
}

}  // namespace collscope::analyzer
