// Replaying the model's steps under changed settings. Per step: each rank's gradients become ready over its
// backward span; a background thread wakes every cycle, agrees with the others on what is ready everywhere
// (negotiation), packs that into buffers of at most the fusion threshold and reduces them one after another, each
// costed from the run's own size-to-time curve; a rank's step ends after its last gradient is reduced and its own
// update; the step ends when the slowest rank's does (the next step starts together).
#include <collscope/predict/replay.hpp>
#include <collscope/run/format.hpp>
#include <collscope/run/statistics.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace collscope::predict {

using run::median_of;

bool Change::empty() const {
  return !fusion_threshold_bytes && !cycle_time_ms && !backward_passes_per_step && !bucket_cap_mb && !fp16_compression &&
         !batch_size && !balanced && !async;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The most the replay of a run's own settings may miss its measured median step by (a fraction of it) for the model
// to predict anything from that run.
constexpr double kMaxBaselineMiss = 0.5;

struct RankTimes {
  double ready_start = 0, ready_ns = 0, post = 0;  // ns from the step's start
};

// When rank r has `bytes` of the step's `total` ready (ns from the step's start).
double ready_at(const RankTimes& r, double bytes, double total) {
  return r.ready_start + (total > 0 ? std::clamp(bytes / total, 0.0, 1.0) : 1.0) * r.ready_ns;
}
// Bytes rank r has ready at time t.
double ready_bytes(const RankTimes& r, double t, double total) {
  if (t < r.ready_start) return 0;
  if (r.ready_ns <= 0) return total;
  return std::clamp((t - r.ready_start) / r.ready_ns, 0.0, 1.0) * total;
}

// The time a negotiating thread spends reducing buffers (ns), and the part of it that is CPU work before each
// buffer (op_overhead: packing it), which takes a CPU all along where MPI's polling may yield it.
struct Reducing {
  double ns = 0, work_ns = 0;
};

struct Engine {
  const ReplayModel& model;
  const EffectiveSettings& s;
  double total = 0;  // gradient bytes per reduction

  // The CPU work before one buffer of `bytes` (fp32), and the buffer's whole cost: that and its transfer.
  double buffer_work(double bytes) const { return model.op_overhead_ns + model.op_overhead_ns_per_byte * bytes; }
  double buffer_cost(double bytes, double* work = nullptr) const {
    if (work) *work += buffer_work(bytes);
    return buffer_work(bytes) + model.cost.ns((s.fp16_compression ? 0.5 : 1.0) * bytes);
  }
  double threshold_bytes() const {  // in fp32 bytes
    return double(s.fusion_threshold_bytes) * (s.fp16_compression ? 2.0 : 1.0);
  }

  // The buffers the fusion threshold makes of the bytes [from, to) agreed in one cycle, and their cost. With the
  // tensors' sizes known, as Horovod and the trainer pack them: in order, a tensor larger than the threshold alone,
  // the others into a buffer until the next would overflow it. Otherwise cut from the mean tensor size. `work`
  // (when given) adds the CPU work in it.
  double reduce_cost(double from, double to, double* work = nullptr) const {
    if (to <= from) return 0;
    const double threshold = threshold_bytes();
    const auto& ends = model.tensor_ends;
    if (!ends.empty()) {
      double cost = 0, fill = 0, start = from;
      for (auto it = std::upper_bound(ends.begin(), ends.end(), from + 1e-6); it != ends.end() && *it <= to + 1e-6;
           ++it) {
        const double size = *it - start;
        start = *it;
        if (size > threshold) {
          cost += buffer_cost(size, work);
          continue;
        }
        if (fill + size > threshold) cost += buffer_cost(fill, work), fill = 0;
        fill += size;
      }
      if (fill > 0) cost += buffer_cost(fill, work);
      return cost;
    }
    const double bytes = to - from;
    const double tensor = model.mean_tensor_bytes > 0 ? model.mean_tensor_bytes : 0;
    double unit = std::max(threshold, tensor);  // a tensor larger than the threshold goes alone
    if (unit <= 0) unit = bytes;
    const double buffers = std::ceil(bytes / unit - 1e-9);
    if (work) *work += buffers * buffer_work(bytes / buffers);
    return buffers * buffer_cost(bytes / buffers);
  }

  // What a negotiation agrees on when every rank has `ready` bytes: whole tensors only, when their sizes are known.
  double agreeable(double ready) const {
    const auto& ends = model.tensor_ends;
    if (ends.empty() || ready >= total - 1e-6) return ready;
    const auto it = std::upper_bound(ends.begin(), ends.end(), ready + 1e-6);
    return it == ends.begin() ? 0 : *(it - 1);
  }
  // The bytes that must be ready for the next negotiation to find something new after `sent`.
  double next_agreeable(double sent) const {
    const auto& ends = model.tensor_ends;
    if (ends.empty()) return sent + 1e-3 * total;
    const auto it = std::upper_bound(ends.begin(), ends.end(), sent + 1e-6);
    return it == ends.end() ? total : *it;
  }

  // When the last gradient is reduced, replaying the cycles of a negotiating background thread (first boundary
  // at `phase` ns after the step's start) against what is ready on the ranks given.
  // `reducing` (when given) adds the time spent reducing buffers.
  double negotiated(const std::vector<RankTimes>& ranks, double phase, Reducing* reducing = nullptr) const {
    const double cycle = s.cycle_time_ms * 1e6;
    double sent = 0, t_cycle = phase, t = 0;
    for (int guard = 0; guard < 100000; ++guard) {
      double agreed = total;
      for (const auto& r : ranks) agreed = std::min(agreed, ready_bytes(r, t_cycle, total));
      agreed = agreeable(agreed);
      t = t_cycle + model.negotiation_ns;
      if (agreed > sent + 1e-6) {
        const double cost = reduce_cost(sent, agreed, reducing ? &reducing->work_ns : nullptr);
        t += cost;
        if (reducing) reducing->ns += cost;
        sent = agreed;
      }
      if (sent >= total - 1e-6) return t;
      // The next cycle starts a cycle after this one began, or when this one's work ends (Horovod's loop);
      // cycles in which nothing new is ready everywhere only negotiate, so skip to the first that finds more.
      double next = std::max(t, t_cycle + cycle);
      double need = 0;
      for (const auto& r : ranks) need = std::max(need, ready_at(r, next_agreeable(sent), total));
      if (need > next) next = cycle > 0 ? t_cycle + std::ceil((need - t_cycle) / cycle) * cycle : need;
      t_cycle = std::max(next, t);
    }
    return t;
  }

  // Without a negotiating thread (DDP's buckets): a buffer goes when its bytes are ready on every rank.
  double bucketed(const std::vector<RankTimes>& ranks) const {
    const double threshold = std::max(1.0, threshold_bytes());
    double t = 0, sent = 0;
    while (sent < total - 1e-6) {
      const double upto = std::min(total, sent + threshold);
      double ready = 0;
      for (const auto& r : ranks) ready = std::max(ready, ready_at(r, upto, total));
      t = std::max(t, ready) + buffer_cost(upto - sent);
      sent = upto;
    }
    return t;
  }

  double reduced_at(const std::vector<RankTimes>& ranks, double phase, Reducing* reducing = nullptr) const {
    return model.negotiates ? negotiated(ranks, phase, reducing) : bucketed(ranks);
  }

  // The replayed duration of one step (ns), averaged over where in the cycle the step starts. `compute_scale` (per
  // rank, when given) scales its compute (CPU sharing); `reducing` (when given) is set to the time the negotiating
  // thread spends reducing buffers in the step, averaged the same way.
  double step(const StepGraph& g, const std::vector<double>* compute_scale = nullptr, Reducing* reducing = nullptr) const {
    const double batch_scale = s.batch_size > 0 && model.settings.batch_size > 0
                                   ? double(s.batch_size) / double(model.settings.batch_size)
                                   : 1.0;
    const int passes = std::max(1, s.backward_passes_per_step);
    std::vector<RankStep> compute = g.ranks;
    if (s.balanced)
      for (std::size_t r = 0; r < compute.size(); ++r) {
        // Each rank's phases at the fastest rank's typical speed: its systematic excess goes, the step's own
        // fluctuation stays.
        const auto& f = model.rank_speed[r];
        compute[r] = {compute[r].pre_ns * f.pre_ns, compute[r].backward_ns * f.backward_ns, compute[r].post_ns * f.post_ns};
      }
    if (compute_scale)
      for (std::size_t r = 0; r < compute.size() && r < compute_scale->size(); ++r) {
        const double f = (*compute_scale)[r];
        compute[r] = {compute[r].pre_ns * f, compute[r].backward_ns * f, compute[r].post_ns * f};
      }
    std::vector<RankTimes> ranks;
    for (const auto& r : compute) {
      const double pre = r.pre_ns * batch_scale, backward = r.backward_ns * batch_scale;
      ranks.push_back({double(passes - 1) * (pre + backward) + pre, backward, r.post_ns});
    }
    Reducing reduce_sum;
    const double cycle = model.negotiates ? s.cycle_time_ms * 1e6 : 0;
    const int phases = cycle > 0 ? 4 : 1;
    double sum = 0;
    for (int p = 0; p < phases; ++p) {
      const double phase = cycle * (p + 0.5) / phases;
      double end = 0, end_sum = 0;
      if (s.async) {
        // Each rank reduces on its own readiness: nobody waits for the slowest.
        for (const auto& r : ranks) end_sum += std::max(reduced_at({r}, phase), r.ready_start + r.ready_ns) + r.post;
        sum += end_sum / double(ranks.size());
      } else {
        const double done = reduced_at(ranks, phase, &reduce_sum);
        for (const auto& r : ranks) end = std::max(end, std::max(done, r.ready_start + r.ready_ns) + r.post);
        sum += end;
      }
    }
    if (reducing) *reducing = {reduce_sum.ns / phases, reduce_sum.work_ns / phases};
    return sum / phases;
  }
};

// Replays step `g` under `next` with CPU sharing (ReplayModel::cpu_sharing). A rank's compute thread, runnable
// through its step, got a share 1 - w of a CPU (w: its wait for one over the step): as if it shared its CPU with n =
// 1 / (1 - w) - 1 other runnable threads on average. Of those, the communication thread's CPU work before its
// buffers (packing them: the replay's work per step over the step, one CPU per rank) makes up at most its density,
// then the communication threads polling in MPI at most theirs (the host's time in MPI per rank per ns of step);
// the rest is other work, kept as it was. Under `next` both densities change in proportion: the work by the
// replayed work over the replayed step (a 64 KiB threshold makes 35 buffers of the trainer's step where 128 MiB
// made 2.6: 4 ms of packing and overhead per step where there were 0.7), the polling by the cycle's length for
// negotiations and by the replayed transfer time over the step for reductions; the compute's wall time scales by the
// ratio of its CPU shares. Two rounds, as the step's length moves the densities. Without CPU sharing, the plain
// replay.
double step_with_cpu_sharing(const ReplayModel& model, const Engine& base, const Engine& next, const StepGraph& g) {
  if (!model.cpu_sharing || g.cpu.size() != g.ranks.size() || !model.negotiates || !(g.measured_ns > 0))
    return next.step(g);
  Reducing base_reducing, next_reducing;
  const double base_ns = base.step(g, nullptr, &base_reducing);
  double next_ns = next.step(g, nullptr, &next_reducing);
  const double base_transfer = base_reducing.ns - base_reducing.work_ns;
  const auto cycle = [](const Engine& e) { return std::max(e.s.cycle_time_ms * 1e6, e.model.negotiation_ns); };
  const double negotiation_density = cycle(next) > 0 ? cycle(base) / cycle(next) : 1.0;
  std::vector<double> scale(g.ranks.size(), 1.0);
  for (int round = 0; round < 2; ++round) {
    const double reducing_density = base_transfer > 0 && next_ns > 0
                                        ? ((next_reducing.ns - next_reducing.work_ns) / base_transfer) * (base_ns / next_ns)
                                        : 1.0;
    const double work_base = base_ns > 0 ? base_reducing.work_ns / base_ns : 0;
    const double work_next = next_ns > 0 ? next_reducing.work_ns / next_ns : 0;
    for (std::size_t r = 0; r < g.ranks.size(); ++r) {
      const RankCpu& c = g.cpu[r];
      const double share = 1 - std::clamp(c.compute_run_queue_ns / g.measured_ns, 0.0, 0.95);
      const double others = 1 / share - 1;
      const double work = std::min(others, work_base);
      const double work_then = work_base > 0 ? work * work_next / work_base : 0;
      const double polling = std::min(others - work, (c.negotiation_mpi_ns + c.gradient_mpi_ns) / g.measured_ns);
      const double polling_next =
          polling > 0 ? polling * (c.negotiation_mpi_ns * negotiation_density + c.gradient_mpi_ns * reducing_density) /
                            (c.negotiation_mpi_ns + c.gradient_mpi_ns)
                      : 0;
      const double share_next = 1 / (1 + others - work - polling + work_then + polling_next);
      scale[r] = share / share_next;
    }
    next_ns = next.step(g, &scale, &next_reducing);
  }
  return next_ns;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

Prediction predict(const ReplayModel& model, const Change& change) {
  Prediction p;
  p.baseline = model.settings;
  p.settings = model.settings;
  p.assumptions = model.assumptions;
  p.baseline_step_ms = model.baseline_step_ns / 1e6;
  p.baseline_samples_per_s = model.baseline_samples_per_s;
  auto& s = p.settings;
  const bool ddp = !model.negotiates && model.settings.bucket_cap_mb.has_value();
  if (change.fusion_threshold_bytes) {
    if (model.negotiates) s.fusion_threshold_bytes = *change.fusion_threshold_bytes;
    else p.not_predicted.push_back("HOROVOD_FUSION_THRESHOLD: the run has no Horovod-style background thread "
                                   "negotiating and fusing tensors, so the model cannot predict it");
  }
  if (change.cycle_time_ms) {
    if (model.negotiates) s.cycle_time_ms = *change.cycle_time_ms;
    else p.not_predicted.push_back("HOROVOD_CYCLE_TIME: the run has no Horovod-style background thread negotiating "
                                   "in cycles, so the model cannot predict it");
  }
  if (change.bucket_cap_mb) {
    if (ddp) {
      // Not applied: on a DDP job traced with its buckets from gloo (2 ranks, 64 layers, cap 0.07 MB, 2026-12-06)
      // the model reproduced the run (73.5 ms for 74.5 ms) yet predicted cap 25 at +16.8 % where real runs were
      // faster: many small buckets cost CPU on gloo's threads during backward, which the replay does not hold.
      // Until it does, and is checked against real runs, no number (the bucketed replay stays for the rest).
      p.not_predicted.push_back("bucket_cap_mb: the replay does not yet hold what DDP's small buckets cost the CPUs "
                                "during backward, and is not checked against real DDP runs, so it is not predicted");
    } else {
      p.not_predicted.push_back("bucket_cap_mb: the run is not a PyTorch DDP job with its buckets recorded (from "
                                "gloo, or with COLLSCOPE_DDP_HOOK=1), so the model cannot predict it");
    }
  }
  if (change.backward_passes_per_step) s.backward_passes_per_step = std::max(1, *change.backward_passes_per_step);
  if (change.fp16_compression) s.fp16_compression = true;
  if (change.batch_size) {
    if (model.settings.batch_size > 0) s.batch_size = *change.batch_size;
    else p.not_predicted.push_back("batch size: the run's batch size is not known (no --batch-size on its command "
                                   "line), so compute cannot be scaled per sample");
  }
  s.balanced = change.balanced;
  s.async = change.async;
  if (!model.usable) return p;

  const Engine base{model, model.settings, model.gradient_bytes};
  const Engine next{model, s, model.gradient_bytes};
  std::vector<double> predicted, replayed, residual;
  for (const auto& g : model.steps) {
    const double b = base.step(g), n = step_with_cpu_sharing(model, base, next, g);
    replayed.push_back(b);
    residual.push_back(g.measured_ns - b);
    // The step as measured, changed by what the change changes in its replay: what the model does not hold
    // (the residual) stays as it was.
    predicted.push_back(std::max(0.0, g.measured_ns + n - b));
  }
  p.steps_replayed = int(predicted.size());
  const double step = median_of(predicted);
  p.step_ms = step / 1e6;
  p.baseline_replay_step_ms = median_of(replayed) / 1e6;
  // A model that does not reproduce the run it was built from (its replay of the run's own settings off by more than
  // half the measured step) would print a number nothing supports: no prediction, one line saying why. (The recorded
  // Horovod-style and fusion trainer runs replay within 4-10 %; a DDP run whose bucket allreduces were timed from
  // their issue on the training thread, queueing included, replayed at 3.8 x.)
  if (model.baseline_step_ns > 0 &&
      std::abs(p.baseline_replay_step_ms * 1e6 - model.baseline_step_ns) > kMaxBaselineMiss * model.baseline_step_ns) {
    p.not_predicted.push_back(fmt::format(
        "every knob: the model does not reproduce this run ({} replayed on its own settings for {} measured), so "
        "nothing it would predict is supported",
        run::format_ms(p.baseline_replay_step_ms * 1e6), run::format_ms(model.baseline_step_ns)));
    p.steps_replayed = 0;
    p.step_ms = 0;
    return p;
  }
  // Band: the spread of the per-step predictions, widened by the model's miss on the run's own steps in proportion
  // to how far the prediction moves from the measured step.
  const double miss = model.baseline_step_ns > 0 ? std::abs(median_of(residual)) / model.baseline_step_ns : 0;
  const double widen = miss * std::abs(step - model.baseline_step_ns);
  p.step_low_ms = (std::min(step, percentile(predicted, 0.25)) - widen) / 1e6;
  p.step_high_ms = (std::max(step, percentile(predicted, 0.75)) + widen) / 1e6;
  if (model.baseline_samples_per_s > 0 && model.baseline_step_ns > 0 && step > 0) {
    // Throughput over the span: steps plus what runs between them, which the change leaves as it was.
    std::vector<double> gaps;
    for (const auto& g : model.steps) gaps.push_back(g.gap_after_ns);
    const double gap = median_of(gaps);
    const double samples = double(s.batch_size > 0 ? s.batch_size : 1) * s.backward_passes_per_step /
                           double(model.settings.batch_size > 0 ? model.settings.batch_size : 1);
    const auto rate = [&](double step_ns) {
      return model.baseline_samples_per_s * samples * (model.baseline_step_ns + gap) / (step_ns + gap);
    };
    p.samples_per_s = rate(step);
    p.samples_per_s_low = rate(p.step_high_ms * 1e6);
    p.samples_per_s_high = rate(std::max(1.0, p.step_low_ms * 1e6));
  }
  return p;
}

std::optional<Gain> predicted_gain(const ReplayModel& model, const Change& change) {
  if (!model.usable) return std::nullopt;
  const Prediction p = predict(model, change);
  if (!p.not_predicted.empty() || p.steps_replayed == 0) return std::nullopt;
  return Gain{p.step_ms * 1e6, model.baseline_step_ns};
}

}  // namespace collscope::predict
