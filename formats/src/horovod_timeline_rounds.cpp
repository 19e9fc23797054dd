// What the Horovod Timeline says per round of the gradients: the training steps, sizes the file leaves out, and
// whether the readiness ticks can show who is late.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "horovod_timeline_model.hpp"

namespace collscope::formats::detail {
namespace {

// The gradients: the tensors sharing the most common operation count (at least 2). Tensors seen a different number
// of times (parameters broadcast once at the start, a metric averaged per epoch) are not part of a step. Returns
// each gradient's operations in order (all of length `rounds`).
std::vector<std::vector<const TensorOperation*>> gradient_rounds(const Timeline& t, std::size_t& rounds) {
  std::map<std::int64_t, std::vector<const TensorOperation*>> by_tensor;
  for (const auto& op : t.operations) by_tensor[op.tensor_pid].push_back(&op);
  std::map<std::size_t, std::size_t> tensors_with_count;
  for (const auto& [pid, ops] : by_tensor) ++tensors_with_count[ops.size()];
  std::size_t tensors = 0;
  rounds = 0;
  for (const auto& [count, n] : tensors_with_count)
    if (count >= 2 && n >= tensors) rounds = count, tensors = n;  // ties: the larger count
  std::vector<std::vector<const TensorOperation*>> out;
  if (rounds < 2) return out;
  for (auto& [pid, ops] : by_tensor)
    if (ops.size() == rounds) out.push_back(std::move(ops));
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)];
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> infer_steps(const Timeline& t) {
  std::size_t rounds = 0;
  const auto grads = gradient_rounds(t, rounds);
  if (grads.empty()) return {};
  // Round k starts at its first gradient's negotiation and lasts until round k + 1 starts: the step is the whole
  // period (compute included), not only its communication. The last round ends with its last operation.
  std::vector<std::pair<std::int64_t, std::int64_t>> steps(rounds, {std::numeric_limits<std::int64_t>::max(), kNone});
  for (const auto& ops : grads)
    for (std::size_t k = 0; k < rounds; ++k) {
      const auto* op = ops[k];
      steps[k].first = std::min(steps[k].first, op->negotiation_start_us != kNone ? op->negotiation_start_us : op->start_us);
      steps[k].second = std::max(steps[k].second, op->end_us);
    }
  for (std::size_t k = 0; k + 1 < rounds; ++k) steps[k].second = steps[k + 1].first;
  return steps;
}

std::int64_t size_from_names(Timeline& t) {
  // Name after the operation prefix ("allreduce.", "broadcast.") → (elements, element bytes, dtype).
  auto base = [](const std::string& name) {
    const auto dot = name.find('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
  };
  std::map<std::string, const TensorOperation*> sized;
  for (const auto& op : t.operations) {
    auto it = t.tensor_names.find(op.tensor_pid);
    if (it != t.tensor_names.end() && op.elements > 0 && op.element_bytes > 0) sized.try_emplace(base(it->second), &op);
  }
  std::int64_t count = 0;
  for (auto& op : t.operations) {
    if (op.impossible_shape || (op.elements > 0 && op.element_bytes > 0)) continue;
    auto name = t.tensor_names.find(op.tensor_pid);
    if (name == t.tensor_names.end()) continue;
    auto twin = sized.find(base(name->second));
    if (twin == sized.end()) continue;
    op.elements = twin->second->elements;
    op.element_bytes = twin->second->element_bytes;
    op.dtype = twin->second->dtype;
    ++count;
  }
  return count;
}

TickAssessment assess_ticks(const Timeline& t, int ranks) {
  TickAssessment out;
  std::size_t rounds = 0;
  const auto grads = gradient_rounds(t, rounds);
  out.rounds = static_cast<std::int64_t>(rounds);
  if (grads.empty() || ranks < 2) return out;
  // Per round: each rank's lag behind the earliest rank, per tensor (ms), and its median and spread in the round.
  std::vector<std::vector<double>> round_lag(static_cast<std::size_t>(ranks)), round_spread(static_cast<std::size_t>(ranks));
  for (std::size_t k = 0; k < rounds; ++k) {
    std::vector<std::vector<double>> lags(static_cast<std::size_t>(ranks));
    std::size_t with_ticks = 0;
    for (const auto& ops : grads) {
      const auto& ticks = ops[k]->ready_us;
      if (static_cast<int>(ticks.size()) < ranks) continue;  // a response cache hit: no negotiation, no ticks
      ++with_ticks;
      std::int64_t first = std::numeric_limits<std::int64_t>::max();
      for (const auto& [r, ts] : ticks) first = std::min(first, ts);
      for (const auto& [r, ts] : ticks)
        if (r < ranks) lags[static_cast<std::size_t>(r)].push_back(double(ts - first) / 1e3);
    }
    if (with_ticks * 2 < grads.size()) {
      ++out.rounds_without_ticks;
      continue;
    }
    for (int r = 0; r < ranks; ++r) {
      const auto& v = lags[static_cast<std::size_t>(r)];
      round_lag[static_cast<std::size_t>(r)].push_back(median(v));
      round_spread[static_cast<std::size_t>(r)].push_back(quantile(v, 0.75) - quantile(v, 0.25));
    }
  }
  if (out.rounds_without_ticks * 2 > out.rounds) {
    out.unusable = fmt::format(
        "the timeline has readiness ticks for {} of {} steps only (Horovod's response cache answers the rest without "
        "negotiating): who is late cannot be seen; record it with HOROVOD_CACHE_CAPACITY=0 to see it",
        out.rounds - out.rounds_without_ticks, out.rounds);
    return out;
  }
  // A rank that is late is late for a whole step: all its tensors' ticks shift together. Ticks that scatter from
  // tensor to tensor of one step by more than half the lag between ranks are set by the negotiation (when rank 0's
  // coordinator got round to each request), not by the ranks' compute. And a late rank is late by about the same
  // every step (its compute or input is slower by a fixed amount): a lag that swings from step to step by more
  // than half its median is the negotiation's too. On the real Horovod fixtures: 111 ms median with nothing
  // injected and 150 ms with 30 ms injected, both swinging by more than half. Only the ranks that lag by a quarter
  // of the most any rank lags are judged: a rank 1 ms behind with 1 ms of scatter beside one 100 ms behind (the
  // trainer at load 6) is noise around a rank that cannot be named, and must not hide the one that can.
  double most = 0;
  for (int r = 0; r < ranks; ++r) most = std::max(most, median(round_lag[static_cast<std::size_t>(r)]));
  for (int r = 0; r < ranks; ++r) {
    const auto& per_step = round_lag[static_cast<std::size_t>(r)];
    const double lag = median(per_step);
    if (lag < 0.25 * most) continue;
    const std::pair<double, const char*> checks[] = {
        {median(round_spread[static_cast<std::size_t>(r)]),
         "scatters by {:.0f} ms (interquartile, median over steps) from tensor to tensor of one step"},
        {quantile(per_step, 0.75) - quantile(per_step, 0.25),
         "swings by {:.0f} ms (interquartile over steps), where a slow rank would lag by about the same every step"},
    };
    for (const auto& [spread, how] : checks)
      if (lag > 1 && spread > 0.5 * lag) {
        out.unusable = fmt::format(
            "the readiness ticks cannot show who is late: rank {}'s lag behind the first rank {}, around a median of "
            "{:.0f} ms: negotiation delays set them, not the ranks' compute",
            r, fmt::format(fmt::runtime(how), spread), lag);
        return out;
      }
  }
  return out;
}

}  // namespace collscope::formats::detail
