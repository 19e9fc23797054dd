// Building the replay model from a run: which collectives carry the gradients, what each costs by size, and each
// measured step cut into per-rank compute before, during and after the gradients become ready.
#include <collscope/predict/replay.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace collscope::predict {

using run::median_of;

void CostCurve::add(std::int64_t bytes, double ns) {
  if (bytes > 0 && ns > 0) samples_.emplace_back(double(bytes), ns);
}

void CostCurve::finish() {
  // Medians per power-of-two size class: robust to the odd call that was descheduled.
  std::map<int, std::vector<std::pair<double, double>>> classes;
  for (const auto& [b, t] : samples_) classes[int(std::floor(std::log2(b)))].emplace_back(b, t);
  points_.clear();
  for (auto& [k, v] : classes) {
    std::vector<double> bs, ts;
    for (const auto& [b, t] : v) bs.push_back(b), ts.push_back(t);
    points_.emplace_back(median_of(bs), median_of(ts));
  }
  // Times must not fall with size (a noisy class would make larger buffers look cheaper).
  for (std::size_t i = 1; i < points_.size(); ++i) points_[i].second = std::max(points_[i].second, points_[i - 1].second);
  // Beyond the largest class: its own bandwidth (ns per byte), the cost a larger buffer adds.
  if (!points_.empty()) ns_per_byte_ = points_.back().second / points_.back().first;
  if (points_.size() >= 2) {
    const auto& a = points_[points_.size() - 2];
    const auto& b = points_.back();
    if (b.first > a.first && b.second > a.second) ns_per_byte_ = (b.second - a.second) / (b.first - a.first);
  }
  samples_.clear();
  samples_.shrink_to_fit();
}

double CostCurve::ns(double bytes) const {
  if (points_.empty() || bytes <= 0) return 0;
  if (bytes <= points_.front().first) return points_.front().second;  // latency floor
  if (bytes >= points_.back().first) return points_.back().second + (bytes - points_.back().first) * ns_per_byte_;
  auto hi = std::lower_bound(points_.begin(), points_.end(), bytes, [](const auto& p, double b) { return p.first < b; });
  auto lo = hi - 1;
  return lo->second + (bytes - lo->first) / (hi->first - lo->first) * (hi->second - lo->second);
}

namespace {

struct GradientCall {
  std::int64_t start = 0, end = 0;  // aligned ns
  std::int64_t cycle_start = 0;     // the negotiation it was agreed in (its own start when there is none)
  std::int64_t bytes = 0;
};

// The communicator that carries the most gradient bytes: blocking sum-like allreduces (non-blocking ones only when
// the job has no blocking ones: DDP's buckets).
int gradient_comm(const run::Run& run, bool& nonblocking) {
  for (bool nb : {false, true}) {
    std::map<int, double> bytes;
    for (const auto& r : run.ranks)
      for (const auto& c : r.collectives) {
        const bool allreduce = c.op == store::Op::Allreduce || c.op == store::Op::Iallreduce;
        if (!allreduce || run::is_nonblocking(c.op) != nb || run::is_control_reduction(c.reduction) || c.bytes <= 0) continue;
        bytes[c.comm] += double(c.bytes);
      }
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
  if (settings.ddp_bucket_cap_mb) m.settings.bucket_cap_mb = settings.ddp_bucket_cap_mb->value;
  m.settings.batch_size = steps.throughput_samples_per_s > 0 || run::command_line_int(run, "batch-size")
                              ? run::command_line_int(run, "batch-size").value_or(0)
                              : 0;
  if (!settings.horovod_applies && settings.ddp_bucket_cap_mb) {
    // DDP: a bucket goes when its bytes are ready, no cycle.
    m.settings.fusion_threshold_bytes = std::int64_t(settings.ddp_bucket_cap_mb->value * 1024 * 1024);
    m.settings.cycle_time_ms = 0;
  }

  // The gradient calls of each rank, in call order, with the negotiation (control allreduce) that agreed them.
  std::vector<std::vector<GradientCall>> calls(run.ranks.size());
  std::vector<double> overheads, negotiations;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& rank = run.ranks[r];
    std::int64_t cycle_start = INT64_MIN, previous_end = INT64_MIN;
    for (const auto& c : rank.collectives) {
      if (c.comm != comm) continue;
      const std::int64_t start = clocks.aligned(int(r), c.start_ns), end = clocks.aligned(int(r), c.end_ns);
      if (run::is_control_reduction(c.reduction)) {
        cycle_start = start;
        m.negotiates = true;
      } else if ((c.op == store::Op::Allreduce || c.op == store::Op::Iallreduce) && run::is_nonblocking(c.op) == nonblocking &&
                 c.bytes > 0) {
        if (previous_end != INT64_MIN && start > previous_end) overheads.push_back(double(start - previous_end));
        calls[r].push_back({start, end, cycle_start == INT64_MIN ? start : cycle_start, c.bytes});
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
    if (inst.op == store::Op::Allreduce || inst.op == store::Op::Iallreduce) m.cost.add(inst.bytes, double(inst.duration_ns));
  }
  m.cost.finish();
  if (m.cost.empty()) {
    m.why_not = "no gradient allreduce was matched across ranks, so their cost is unknown";
    return m;
  }
  m.negotiation_ns = m.negotiates ? median_of(negotiations) : 0;
  m.op_overhead_ns = m.negotiates ? median_of(overheads) : 0;
  double packed_bytes = 0, packed_tensors = 0;
  for (const auto& r : run.ranks)
    for (const auto& b : r.buffers) packed_bytes += double(b.bytes_packed), packed_tensors += double(b.tensors_packed);
  if (packed_tensors > 0) m.mean_tensor_bytes = packed_bytes / packed_tensors;

  const int backward_name = run.string_id("backward");
  const double cycle_ns = m.settings.cycle_time_ms * 1e6;
  std::vector<double> step_bytes;
  bool inferred_backward = false;
  for (std::size_t k = std::size_t(first); k < steps.steps.size(); ++k) {
    const auto& s = steps.steps[k];
    StepGraph g;
    g.measured_ns = s.duration_ns;
    if (k + 1 < steps.steps.size()) g.gap_after_ns = std::max(0.0, double(steps.steps[k + 1].start_ns - s.end_ns));
    bool ok = true;
    for (std::size_t r = 0; r < run.ranks.size() && ok; ++r) {
      const double S = double(s.rank_start_ns[r]), E = S + s.rank_duration_ns[r];
      std::vector<const GradientCall*> in;
      for (const auto& c : calls[r])
        if (double(c.start) >= S && double(c.start) < E) in.push_back(&c);
      if (in.empty()) {
        ok = false;
        break;
      }
      double bytes = 0;
      for (const auto* c : in) bytes += double(c->bytes);
      if (r == 0) step_bytes.push_back(bytes);
      const double last_cycle = double(in.back()->cycle_start), last_end = double(in.back()->end);
      double b0 = -1, b1 = -1;
      if (backward_name >= 0)
        for (const auto& x : run.ranks[r].nvtx_ranges) {
          const double xs = double(clocks.aligned(int(r), x.start_ns)), xe = double(clocks.aligned(int(r), x.end_ns));
          if (x.name == backward_name && xs >= S && xs < E && xe > xs) {
            b0 = xs, b1 = std::min(xe, last_cycle);
            break;
          }
        }
      if (b0 < 0) {
        // No backward range: the cycles' cumulative bytes say how fast the gradients became ready.
        inferred_backward = true;
        b1 = std::max(S, last_cycle - cycle_ns / 2);
        std::vector<std::pair<double, double>> cum;  // (cycle start, bytes sent by the end of that cycle)
        double sent = 0;
        for (const auto* c : in) {
          sent += double(c->bytes);
          if (!cum.empty() && cum.back().first == double(c->cycle_start)) cum.back().second = sent;
          else cum.emplace_back(double(c->cycle_start), sent);
        }
        b0 = S;
        if (cum.size() >= 3) {
          const auto& a = cum.front();
          const auto& z = cum[cum.size() - 2];
          if (z.first > a.first && z.second > a.second) {
            const double rate = (z.second - a.second) / (z.first - a.first);  // bytes per ns
            b0 = std::clamp(a.first - cycle_ns / 2 - a.second / rate, S, b1);
            b1 = std::clamp(b0 + bytes / rate, b0, b1);
          }
        }
      }
      b1 = std::max(b1, b0);
      RankStep rs;
      rs.pre_ns = b0 - S;
      rs.backward_ns = b1 - b0;
      rs.post_ns = std::max(0.0, E - std::max(b1, last_end));
      g.ranks.push_back(rs);
    }
    if (ok) m.steps.push_back(std::move(g));
  }
  if (m.steps.empty()) {
    m.why_not = "no measured step holds gradient allreduces on every rank";
    return m;
  }
  m.gradient_bytes = median_of(step_bytes);
  m.baseline_step_ns = steps.median_step_ns;
  m.baseline_samples_per_s = steps.throughput_samples_per_s;
  if (inferred_backward)
    m.assumptions.push_back("no NVTX backward range: when the gradients become ready is inferred from the cycles' "
                            "cumulative bytes");
  if (m.mean_tensor_bytes <= 0)
    m.assumptions.push_back("tensor sizes are not recorded (no fusion packs): buffers are filled byte by byte");
  m.usable = true;
  return m;
}

}  // namespace collscope::predict
