// Building the replay model from a run: which collectives carry the gradients, what each costs by size, and each
// measured step cut into per-rank compute before, during and after the gradients become ready.
#include <collscope/predict/replay.hpp>
#include <collscope/run/format.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/thread_counters.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace collscope::predict {

using run::median_of;

void CostCurve::add(std::int64_t bytes, double ns) {
  if (bytes > 0 && ns > 0) samples_.emplace_back(double(bytes), ns);
}

void CostCurve::finish() {
  // Medians per power-of-two size class: robust to the odd call that was descheduled. A class of one or two calls
  // says little on a busy host, so it counts only where nothing better is measured.
  std::map<int, std::vector<std::pair<double, double>>> classes;
  for (const auto& [b, t] : samples_) classes[int(std::floor(std::log2(b)))].emplace_back(b, t);
  std::size_t most = 0;
  for (const auto& [k, v] : classes) most = std::max(most, v.size());
  struct Block {
    double bytes, ns, weight;
  };
  std::vector<Block> blocks;
  for (auto& [k, v] : classes) {
    if (v.size() < std::min<std::size_t>(3, most)) continue;
    std::vector<double> bs, ts;
    for (const auto& [b, t] : v) bs.push_back(b), ts.push_back(t);
    blocks.push_back({median_of(bs), median_of(ts), double(v.size())});
  }
  // Times must not fall with size: pool adjacent classes that do (weighted by their calls), so one noisy class
  // neither makes larger buffers look cheaper nor lifts every larger one.
  std::vector<Block> pooled;
  for (const auto& b : blocks) {
    pooled.push_back(b);
    while (pooled.size() >= 2 && pooled[pooled.size() - 2].ns > pooled.back().ns) {
      const Block hi = pooled.back();
      pooled.pop_back();
      Block& lo = pooled.back();
      const double w = lo.weight + hi.weight;
      lo = {(lo.bytes * lo.weight + hi.bytes * hi.weight) / w, (lo.ns * lo.weight + hi.ns * hi.weight) / w, w};
    }
  }
  // Bandwidth must not fall with size either: a buffer of n times the bytes can always go as n buffers of the
  // smaller size, so it costs at most n times as much (subadditive). On a host whose cores are shared, the few
  // large buffers are the ones agreed after the communicating thread had waited for a CPU, and their transfers are
  // descheduled too: real Horovod 0.28.1 on 2 cores (tests/data/horovod-0.28.1-cpu-samples) measured 1.6 GB/s at
  // 256-505 KiB and 0.05 GB/s at 514-972 KiB, which priced a 1 MiB buffer at 43 ms and made every longer cycle
  // look slower, where real runs were 16-38 % faster.
  points_.clear();
  double best_ns_per_byte = std::numeric_limits<double>::infinity();
  for (const auto& b : pooled) {
    const double ns = std::min(b.ns, b.bytes * best_ns_per_byte);
    points_.emplace_back(b.bytes, ns);
    best_ns_per_byte = std::min(best_ns_per_byte, ns / b.bytes);
  }
  // Beyond the largest class: the bandwidth between the last two (ns per byte), else the largest one's own.
  if (!points_.empty()) ns_per_byte_ = points_.back().second / points_.back().first;
  if (points_.size() >= 2) {
    const auto& a = points_[points_.size() - 2];
    const auto& b = points_.back();
    if (b.first > a.first && b.second > a.second) ns_per_byte_ = (b.second - a.second) / (b.first - a.first);
  }
  if (!points_.empty()) ns_per_byte_ = std::min(ns_per_byte_, best_ns_per_byte);
  samples_.clear();
  samples_.shrink_to_fit();
}

double CostCurve::ns(double bytes) const {
  if (points_.empty() || bytes <= 0) return 0;
  if (bytes <= points_.front().first) return points_.front().second;  // latency floor
  if (bytes >= points_.back().first) return points_.back().second + (bytes - points_.back().first) * ns_per_byte_;
  auto hi =
      std::lower_bound(points_.begin(), points_.end(), bytes, [](const auto& p, double b) { return p.first < b; });
  auto lo = hi - 1;
  return lo->second + (bytes - lo->first) / (hi->first - lo->first) * (hi->second - lo->second);
}

namespace {

constexpr double kInstant = 1e12;  // bytes per ns: everything ready at once

struct GradientCall {
  std::int64_t start = 0, end = 0;  // aligned ns
  std::int64_t cycle_start = 0;     // the negotiation it was agreed in (its own start when there is none)
  std::int64_t bytes = 0;
};

// A gradient allreduce: an allreduce of data, not a control reduction (Horovod's negotiation, a loss's sum), of the
// kind, blocking or not, that the job's gradients go in.
bool is_gradient_allreduce(const run::CollectiveCall& c, bool nonblocking) {
  return (c.op == store::Op::Allreduce || c.op == store::Op::Iallreduce) && run::is_nonblocking(c.op) == nonblocking &&
         !run::is_control_reduction(c.reduction) && c.bytes > 0;
}

// The communicator that carries the most gradient bytes: blocking sum-like allreduces (non-blocking ones only when
// the job has no blocking ones: DDP's buckets).
int gradient_comm(const run::Run& run, bool& nonblocking) {
  for (bool nb : {false, true}) {
    std::map<int, double> bytes;
    for (const auto& r : run.ranks)
      for (const auto& c : r.collectives)
        if (is_gradient_allreduce(c, nb)) bytes[c.comm] += double(c.bytes);
    int best = -1;
    double most = 0;
    for (const auto& [comm, b] : bytes)
      if (b > most) most = b, best = comm;
    if (best >= 0) {
      nonblocking = nb;
      return best;
    }
  }
  return -1;
}

// The CPU work before each gradient collective, from the gaps before the calls (bytes, ns): a fixed part, the
// median gap before small calls (<= 64 KiB, whose packing is a few microseconds), and a part per byte, the median
// of what large calls (>= 256 KiB) take beyond it per byte. Medians: a gap in which the thread was descheduled
// (milliseconds on a busy host) moves neither. The fusion trainer on 2 cores (tests/data/fusion-trainer-predict):
// 103-114 us before 200-byte buffers, 293-340 us before 2.5 MB ones, 100 us of its own plus ~0.08 ns per byte of
// packing. With too few of either, one median over all gaps (no part per byte), as the model had before: that
// priced a 64 KiB threshold's 35 buffers at the 275 us of the 2.5 MB ones.
void fit_op_overhead(const std::vector<std::pair<double, double>>& gaps, ReplayModel& m) {
  std::vector<double> all, small, large;
  for (const auto& [bytes, ns] : gaps) {
    all.push_back(ns);
    if (bytes <= 64 * 1024) small.push_back(ns);
  }
  m.op_overhead_ns = median_of(all);
  m.op_overhead_ns_per_byte = 0;
  if (small.size() < 3) return;
  const double fixed = median_of(small);
  for (const auto& [bytes, ns] : gaps)
    if (bytes >= 256 * 1024) large.push_back(std::max(0.0, ns - fixed) / bytes);
  if (large.size() < 3) return;
  m.op_overhead_ns = fixed;
  m.op_overhead_ns_per_byte = median_of(large);
}

// The gradient tensors' sizes in the order they become ready, from the broadcasts among the gradient communicator's
// ranks (on it, or on another communicator of the same members: the trainer broadcasts on MPI_COMM_WORLD and reduces
// on a dup of it) before its first gradient allreduce, as rank 0 recorded them: a job broadcasts its parameters once
// at the start, one tensor each, in the order it registered them; backward makes their gradients ready in the
// reverse order. Used only when they add up to the gradient bytes of a reduction (within 0.1 %): otherwise they
// were something else (a state dict with buffers, DDP's coalesced broadcasts) and the sizes stay unknown.
std::vector<double> tensor_ends_from_broadcasts(const run::Run& run, int comm, bool nonblocking,
                                                double gradient_bytes) {
  if (run.ranks.empty() || gradient_bytes <= 0) return {};
  std::vector<double> sizes;
  const auto& members = run.communicators[std::size_t(comm)].members;
  const auto& calls = run.ranks[0].collectives;  // in communicator order, not time order
  std::int64_t first_gradient = INT64_MAX;
  for (const auto& c : calls)
    if (c.comm == comm && is_gradient_allreduce(c, nonblocking)) first_gradient = std::min(first_gradient, c.start_ns);
  std::vector<std::pair<std::int64_t, double>> broadcasts;  // (start, bytes)
  for (const auto& c : calls)
    if (c.op == store::Op::Bcast && c.bytes > 0 && c.start_ns < first_gradient &&
        run.communicators[std::size_t(c.comm)].members == members)
      broadcasts.emplace_back(c.start_ns, double(c.bytes));
  std::sort(broadcasts.begin(), broadcasts.end());
  for (const auto& [start, bytes] : broadcasts) sizes.push_back(bytes);
  double sum = 0;
  for (double b : sizes) sum += b;
  if (sizes.size() < 2 || std::abs(sum - gradient_bytes) > 1e-3 * gradient_bytes) return {};
  std::vector<double> ends;
  double end = 0;
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) ends.push_back(end += *it * gradient_bytes / sum);
  return ends;
}

}  // namespace

ReplayModel build_model(const run::Run& run, const run::ClockAlignment& clocks, const run::MatchedRun& matched,
                        const run::StepSummary& steps) {
  ReplayModel m;
  m.ranks = int(run.ranks.size());
  const int first = steps.warmup_steps;
  if (steps.measured_steps() < 1) {
    m.why_not = "the run has no measured steps (run/steps.hpp), so there is nothing to replay";
    return m;
  }
  bool nonblocking = false;
  const int comm = gradient_comm(run, nonblocking);
  if (comm < 0) {
    m.why_not = "the run has no gradient allreduces (sum-like reductions), so there is nothing to replay";
    return m;
  }
  // The run's own settings: the one home of knobs.
  const auto workload = run::describe_workload(run);
  const auto settings = run::job_settings(run, workload);
  m.settings.fusion_threshold_bytes = settings.horovod.fusion_threshold_bytes.value;
  m.settings.cycle_time_ms = settings.horovod.cycle_time_ms.value;
  if (settings.ddp) m.settings.bucket_cap_mb = settings.ddp->bucket_cap_mb.value;
  m.settings.batch_size = steps.throughput_samples_per_s > 0 || run::command_line_int(run, "batch-size")
                              ? run::command_line_int(run, "batch-size").value_or(0)
                              : 0;
  if (!settings.horovod_applies && settings.ddp) {
    // DDP: a bucket goes when its bytes are ready, no cycle.
    m.settings.fusion_threshold_bytes = std::int64_t(settings.ddp->bucket_cap_mb.value * 1024 * 1024);
    m.settings.cycle_time_ms = 0;
  }

  // The gradient calls of each rank, in call order, with the negotiation (control allreduce) that agreed them.
  std::vector<std::vector<GradientCall>> calls(run.ranks.size());
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> negotiation_calls(run.ranks.size());  // aligned
  std::vector<std::map<std::int64_t, int>> comm_threads(run.ranks.size());
  std::vector<std::pair<double, double>> overheads;  // (bytes of the call, ns since the call before it ended)
  std::vector<double> negotiations;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& rank = run.ranks[r];
    std::int64_t cycle_start = INT64_MIN, previous_end = INT64_MIN;
    for (const auto& c : rank.collectives) {
      if (c.comm != comm) continue;
      const std::int64_t start = clocks.aligned(int(r), c.start_ns), end = clocks.aligned(int(r), c.end_ns);
      if (run::is_control_reduction(c.reduction)) {
        cycle_start = start;
        m.negotiates = true;
        negotiation_calls[r].emplace_back(start, end);
      } else if (is_gradient_allreduce(c, nonblocking)) {
        if (previous_end != INT64_MIN && start > previous_end)
          overheads.emplace_back(double(c.bytes), double(start - previous_end));
        calls[r].push_back({start, end, cycle_start == INT64_MIN ? start : cycle_start, c.bytes});
        ++comm_threads[r][c.thread];
        if (!m.negotiates) cycle_start = INT64_MIN;
      }
      previous_end = end;
    }
  }
  // Costs by size: the transfer time of each instance (its shortest rank's call: no waiting in it).
  for (std::size_t i = matched.comm_first[comm]; i < matched.comm_first[comm + 1]; ++i) {
    const auto& inst = matched.instances[i];
    if (inst.ranks < 2 && m.ranks > 1) continue;
    if (inst.bytes <= 64) {
      negotiations.push_back(double(inst.duration_ns));  // readiness bit vectors
      continue;
    }
    if (inst.op == store::Op::Allreduce || inst.op == store::Op::Iallreduce)
      m.cost.add(inst.bytes, double(inst.duration_ns));
  }
  m.cost.finish();
  if (m.cost.empty()) {
    m.why_not = "no gradient allreduce was matched across ranks, so their cost is unknown";
    return m;
  }
  m.negotiation_ns = m.negotiates ? median_of(negotiations) : 0;
  if (m.negotiates) fit_op_overhead(overheads, m);
  double packed_bytes = 0, packed_tensors = 0;
  for (const auto& r : run.ranks)
    for (const auto& b : r.buffers) packed_bytes += double(b.bytes_packed), packed_tensors += double(b.tensors_packed);
  if (packed_tensors > 0) m.mean_tensor_bytes = packed_bytes / packed_tensors;

  // CPU sharing: each rank's compute thread (the one that marks its steps) and communication thread (the one that
  // makes its gradient calls), when they differ and the compute thread has scheduler counters.
  std::vector<std::optional<run::ThreadCounters>> compute_counters(run.ranks.size());
  bool cpu_sharing = m.negotiates && steps.method == run::StepMethod::Nvtx;
  if (cpu_sharing) {
    const run::StepNames step_names(run, steps.range_name);
    for (std::size_t r = 0; r < run.ranks.size() && cpu_sharing; ++r) {
      const std::int64_t compute = run::step_thread(run.ranks[r], step_names);
      const std::int64_t communication = run::busiest_thread(comm_threads[r]);
      if (compute < 0 || communication < 0 || compute == communication) {
        cpu_sharing = false;
        break;
      }
      compute_counters[r].emplace(run.ranks[r], compute, clocks.offset_ns[r]);
      cpu_sharing = !compute_counters[r]->empty();
    }
  }
  std::vector<double> waited(run.ranks.size(), 0), in_mpi(run.ranks.size(), 0);
  int cpu_steps = 0;

  const int backward_name = run.string_id("backward");
  const double cycle_ns = m.settings.cycle_time_ms * 1e6;
  std::vector<double> step_bytes;
  bool inferred_backward = false, rate_fallback = false;
  for (std::size_t k = std::size_t(first); k < steps.steps.size(); ++k) {
    const auto& s = steps.steps[k];
    StepGraph g;
    g.measured_ns = s.duration_ns;
    if (k + 1 < steps.steps.size()) g.gap_after_ns = std::max(0.0, double(steps.steps[k + 1].start_ns - s.end_ns));
    struct Window {
      double S = 0, E = 0, b0 = -1, backward_end = -1, last_cycle = 0, last_end = 0, bytes = 0;
      std::vector<std::pair<double, double>> cycles;  // (negotiation start, bytes agreed up to and in it)
      std::vector<std::pair<double, double>> own;     // (call start, bytes up to and in it) of calls not held up
                                                      // by the one before: when this rank had those bytes ready
    };
    std::vector<Window> w(run.ranks.size());
    bool ok = true;
    for (std::size_t r = 0; r < run.ranks.size() && ok; ++r) {
      Window& x = w[r];
      x.S = double(s.rank_start_ns[r]);
      x.E = x.S + s.rank_duration_ns[r];
      for (const auto& c : calls[r]) {
        if (double(c.start) < x.S || double(c.start) >= x.E) continue;
        x.bytes += double(c.bytes);
        if (x.cycles.empty() || double(c.start) - x.last_end > 50e3) x.own.emplace_back(double(c.start), x.bytes);
        if (!x.cycles.empty() && x.cycles.back().first == double(c.cycle_start)) x.cycles.back().second = x.bytes;
        else x.cycles.emplace_back(double(c.cycle_start), x.bytes);
        x.last_end = double(c.end);
      }
      if (x.cycles.empty()) {
        ok = false;
        break;
      }
      x.last_cycle = x.cycles.back().first;
      if (backward_name >= 0)
        for (const auto& n : run.ranks[r].nvtx_ranges) {
          const double ns = double(clocks.aligned(int(r), n.start_ns)), ne = double(clocks.aligned(int(r), n.end_ns));
          if (n.name == backward_name && ns >= x.S && ns < x.E && ne > ns) {
            x.b0 = ns, x.backward_end = ne;
            break;
          }
        }
    }
    if (!ok) continue;
    step_bytes.push_back(w[0].bytes);
    if (cpu_sharing) {
      for (std::size_t r = 0; r < run.ranks.size(); ++r) {
        const Window& x = w[r];
        const auto counted = compute_counters[r]->over(std::int64_t(x.S), std::int64_t(x.E));
        if (!counted) {
          g.cpu.clear();
          break;
        }
        RankCpu cpu;
        cpu.compute_run_queue_ns = std::max(0.0, counted->second);
        for (const auto& [a, b] : negotiation_calls[r])
          if (double(a) >= x.S && double(a) < x.E) cpu.negotiation_mpi_ns += std::min(double(b), x.E) - double(a);
        for (const auto& c : calls[r])
          if (double(c.start) >= x.S && double(c.start) < x.E)
            cpu.gradient_mpi_ns += std::min(double(c.end), x.E) - double(c.start);
        g.cpu.push_back(cpu);
      }
      for (std::size_t r = 0; r < g.cpu.size(); ++r)
        waited[r] += g.cpu[r].compute_run_queue_ns, in_mpi[r] += g.cpu[r].negotiation_mpi_ns + g.cpu[r].gradient_mpi_ns;
      // Per rank, its host's communication threads' time in MPI (their mean over the host's ranks).
      if (!g.cpu.empty()) {
        const std::vector<RankCpu> own = g.cpu;
        for (std::size_t r = 0; r < own.size(); ++r) {
          double negotiation = 0, gradient = 0, ranks = 0;
          for (std::size_t o = 0; o < own.size(); ++o)
            if (run.ranks[o].host == run.ranks[r].host)
              negotiation += own[o].negotiation_mpi_ns, gradient += own[o].gradient_mpi_ns, ranks += 1;
          g.cpu[r].negotiation_mpi_ns = negotiation / ranks, g.cpu[r].gradient_mpi_ns = gradient / ranks;
        }
      }
      cpu_steps += g.cpu.empty() ? 0 : 1;
    }
    // How fast the gradients become ready. A negotiation agrees on what is ready on every rank when it starts,
    // however late the busy thread starts it, so each cycle before the last is an exact sample of the slowest
    // rank's readiness: bytes agreed by then. (The last one only bounds it: everything was ready before.)
    // Without negotiation (each rank sends when its own bytes are ready), a rank's own calls are its samples.
    double latest_b0 = -1;
    for (const auto& x : w) latest_b0 = x.b0 < 0 ? latest_b0 : std::max(latest_b0, x.b0);
    const auto fit = [&](const std::vector<std::pair<double, double>>& points, double known_b0) {
      std::pair<double, double> out{0, known_b0};  // bytes per ns; when readiness starts (aligned ns)
      if (known_b0 >= 0) {
        double num = 0, den = 0;
        for (std::size_t j = 0; j + 1 < points.size(); ++j)
          if (points[j].first > known_b0)
            num += points[j].second * (points[j].first - known_b0),
                den += (points[j].first - known_b0) * (points[j].first - known_b0);
        if (den > 0) out.first = num / den;
      } else if (points.size() >= 3) {
        double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (std::size_t j = 0; j + 1 < points.size(); ++j)
          n += 1, sx += points[j].first, sy += points[j].second, sxx += points[j].first * points[j].first,
              sxy += points[j].first * points[j].second;
        const double d = n * sxx - sx * sx;
        if (d > 0) {
          out.first = (n * sxy - sx * sy) / d;
          if (out.first > 0) out.second = (sx - sy / out.first) / n;  // where the fitted line leaves 0 bytes
        }
      }
      return out;
    };
    const auto agreed = fit(w[0].cycles, latest_b0);
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const Window& x = w[r];
      auto [rate, origin] = m.negotiates ? agreed : fit(x.own, x.b0);
      if (!m.negotiates && rate <= 0 && x.b0 < 0) {
        // A rank that sends its calls back to back, each held up by the one before: all was ready at the first.
        rate = kInstant;
        origin = x.own.front().first;
      }
      if (x.b0 < 0) inferred_backward = true;
      double b0 = x.b0 >= 0 ? x.b0 : (rate > 0 ? origin : x.S), b1 = 0;
      b0 = std::clamp(b0, x.S, x.last_cycle);
      if (rate > 0) {
        b1 = b0 + x.bytes / rate;
      } else {
        // Too few cycles to measure a rate: the last gradient was ready about half a cycle before its negotiation.
        rate_fallback = true;
        b1 = x.last_cycle - cycle_ns / 2;
      }
      b1 = std::clamp(b1, b0, x.last_cycle);
      if (x.backward_end >= 0) b1 = std::min(b1, x.backward_end);
      RankStep rs;
      rs.pre_ns = b0 - x.S;
      rs.backward_ns = std::max(0.0, b1 - b0);
      rs.post_ns = std::max(0.0, x.E - std::max(b1, x.last_end));
      g.ranks.push_back(rs);
    }
    m.steps.push_back(std::move(g));
  }
  if (rate_fallback)
    m.assumptions.push_back(m.negotiates ? "some steps had too few negotiation cycles to measure how fast gradients "
                                           "become ready: their last gradient is taken as ready half a cycle before "
                                           "its negotiation"
                                         : "some steps had too few allreduces to measure how fast gradients become "
                                           "ready: their last gradient is taken as ready when its allreduce starts");
  if (m.steps.empty()) {
    m.why_not = "no measured step holds gradient allreduces on every rank";
    return m;
  }
  m.gradient_bytes = median_of(step_bytes);
  if (m.negotiates) m.tensor_ends = tensor_ends_from_broadcasts(run, comm, nonblocking, m.gradient_bytes);
  if (!m.tensor_ends.empty())
    m.assumptions.push_back(
        fmt::format("the gradient tensors' sizes are those of the {} broadcasts before the first "
                    "step, ready in the reverse order",
                    m.tensor_ends.size()));
  const auto phase_medians = [&](std::size_t r) {
    std::vector<double> pre, backward, post;
    for (const auto& g : m.steps)
      pre.push_back(g.ranks[r].pre_ns), backward.push_back(g.ranks[r].backward_ns), post.push_back(g.ranks[r].post_ns);
    return RankStep{median_of(pre), median_of(backward), median_of(post)};
  };
  std::vector<RankStep> medians;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) medians.push_back(phase_medians(r));
  // Per rank and phase: the fastest rank's (least median compute in all) median over its own, at most 1. A
  // rank's phase slower than that rank's goes down to it, its faster phases stay; the fastest rank stays as it ran,
  // so no step comes out faster than it (the minima of different ranks phase by phase would). One factor per rank
  // over all its compute (the first form) spread a straggler's excess over its phases: a 30 ms sleep before
  // backward on rank 1 of the trainer kept 17 of its 38 ms of lateness (157 ms predicted for 124 measured).
  const auto total = [](const RankStep& x) { return x.pre_ns + x.backward_ns + x.post_ns; };
  std::size_t fastest = 0;
  for (std::size_t r = 1; r < medians.size(); ++r)
    if (total(medians[r]) < total(medians[fastest])) fastest = r;
  const RankStep& ref = medians[fastest];
  const auto factor = [](double ref_ns, double own_ns) { return own_ns > 0 ? std::min(1.0, ref_ns / own_ns) : 1.0; };
  for (const auto& x : medians)
    m.rank_speed.push_back(
        {factor(ref.pre_ns, x.pre_ns), factor(ref.backward_ns, x.backward_ns), factor(ref.post_ns, x.post_ns)});
  if (cpu_sharing && cpu_steps > 0 && std::all_of(in_mpi.begin(), in_mpi.end(), [](double x) { return x > 0; })) {
    m.cpu_sharing = true;
    double wait = 0, mpi = 0;
    for (std::size_t r = 0; r < run.ranks.size(); ++r)
      wait += waited[r] / double(run.ranks.size() * cpu_steps), mpi += in_mpi[r] / double(run.ranks.size() * cpu_steps);
    m.assumptions.push_back(fmt::format(
        "CPU sharing: the compute threads waited for a CPU {} per step and the communication threads were inside "
        "MPI {} per step (means over ranks); one CPU per rank is assumed, shared by a rank's compute thread with "
        "the communication threads polling in MPI and with whatever else ran (kept as it was)",
        run::format_ms(wait), run::format_ms(mpi)));
  } else {
    for (auto& g : m.steps) g.cpu.clear();
    if (m.negotiates)
      m.assumptions.push_back(
          "CPU sharing not replayed: the trace has no scheduler counters on a compute thread apart from the "
          "communicating one (NVTX steps and cpu samples, schema 1.5), so the CPU a communication thread polling in "
          "MPI takes from compute on a shared core is left out; where ranks share cores, a longer cycle gives more "
          "than predicted");
  }
  m.baseline_step_ns = steps.median_step_ns;
  m.baseline_samples_per_s = steps.throughput_samples_per_s;
  if (inferred_backward)
    m.assumptions.push_back(m.negotiates ? "no NVTX backward range: when the gradients become ready is inferred "
                                           "from the cycles' cumulative bytes"
                                         : "no NVTX backward range: when the gradients become ready is inferred "
                                           "from the allreduces' cumulative bytes");
  if (m.mean_tensor_bytes <= 0)
    m.assumptions.push_back(m.settings.bucket_cap_mb ? "the gradients' sizes are not recorded: buckets are filled byte "
                                                       "by byte"
                                                     : "tensor sizes are not recorded (no fusion packs): buffers are "
                                                       "filled byte by byte");
  m.usable = true;
  return m;
}

ReplayModel model_of_run(const std::string& run_dir) {
  const run::Run run = run::load_run(run_dir);
  const auto clocks = run::ClockAligner().align(run);
  const auto matched = run::CollectiveMatcher().match(run, clocks);
  const auto batch = run::command_line_int(run, "batch-size").value_or(0);
  const auto steps = run::StepDetector({.batch_size = batch}).detect(run, clocks, matched);
  return build_model(run, clocks, matched, steps);
}

}  // namespace collscope::predict
