// Noise estimate, stop rules and the batch size's memory limit (search_rules.hpp).
#include <collscope/autotuner/search_rules.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

namespace collscope::autotuner {

bool is_strategy_kind(const std::string& kind) {
  return kind != kKindDefault && kind != kKindAdvice && kind != kKindPredicted && kind != kKindNoiseRepeat && kind != kKindWarmBest && kind != kKindConfirm;
}

std::optional<NoiseEstimate> estimate_noise(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::map<Assignment, std::vector<double>> by_values;
  for (const auto& t : trials)
    if (t.status == TrialStatus::Ok && t.kind != kKindWarmup && t.score && std::isfinite(*t.score) &&
        t.values.size() == space.knobs().size())
      by_values[t.values].push_back(*t.score);
  double squares = 0, mean_sum = 0;
  NoiseEstimate n;
  int dof = 0;
  for (const auto& [values, scores] : by_values) {
    if (scores.size() < 2) continue;
    double mean = 0;
    for (double s : scores) mean += s;
    mean /= static_cast<double>(scores.size());
    for (double s : scores) squares += (s - mean) * (s - mean);
    dof += static_cast<int>(scores.size()) - 1;
    mean_sum += mean;
    ++n.settings;
    n.runs += static_cast<int>(scores.size());
  }
  if (dof == 0) return std::nullopt;
  n.sd = std::sqrt(squares / dof);
  const double mean = mean_sum / n.settings;
  n.relative = mean != 0 ? n.sd / std::abs(mean) : 0;
  return n;
}

std::optional<std::string> stop_rule(const StopInputs& in) {
  if (in.time_budget_s && in.elapsed_s >= *in.time_budget_s)
    return fmt::format("time budget: {:.0f} s of tuning spent (--time-budget {:g})", in.elapsed_s, *in.time_budget_s);
  const double gain = std::max(0.0, in.expected_gain);
  if (in.noise && in.noise->sd > 0) {
    // What the confirmation runs can tell apart: the standard error of a mean over 1 + confirm_repeats runs.
    const double resolvable = in.noise->sd / std::sqrt(1.0 + std::max(0, in.confirm_repeats));
    if (gain < resolvable)
      return fmt::format("noise: the expected gain of another trial ({:.3g}) is below what {} run(s) of a setting can "
                         "resolve ({:.3g}; one run's noise {:.3g}, {:.1f} %, from {} repeated setting(s))",
                         gain, 1 + in.confirm_repeats, resolvable, in.noise->sd, 100 * in.noise->relative,
                         in.noise->settings);
  }
  if (in.job_steps && in.best_step_s && *in.best_step_s > 0 && in.mean_trial_s > 0) {
    // Time the job saves over its length if the next trial finds the expected gain.
    double saved_s = 0;
    if (in.step_time_objective) {
      saved_s = static_cast<double>(*in.job_steps) * gain * 1e-3;  // gain in ms per step
    } else if (in.best > 0) {
      const double g = gain / in.best;  // relative rate gain: a step takes 1/(1+g) of its time
      saved_s = static_cast<double>(*in.job_steps) * *in.best_step_s * g / (1 + g);
    }
    if (saved_s < in.mean_trial_s)
      return fmt::format("payback: the expected gain ({:.2g} %) saves {:.1f} s over the job's {} steps ({:.3g} s each), "
                         "less than a trial costs ({:.1f} s)",
                         in.best > 0 ? 100 * gain / in.best : 0.0, saved_s, *in.job_steps, *in.best_step_s, in.mean_trial_s);
  }
  return std::nullopt;
}

bool is_out_of_memory(const std::string& reason) {
  static const std::regex oom(R"(out of memory|outofmemory|\bOOM\b|cannot allocate memory|bad_alloc|memory exhausted)",
                              std::regex::ECMAScript | std::regex::icase);
  return std::regex_search(reason, oom);
}

namespace {
std::optional<std::int64_t> as_int(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(v));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

BatchLimit batch_limit(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  BatchLimit limit;
  limit.knob = space.knob_index(space.objective().batch_size);
  if (limit.knob < 0 || space.knobs()[static_cast<std::size_t>(limit.knob)].type != KnobType::Integer) {
    limit.knob = -1;
    return limit;
  }
  for (const auto& t : trials) {
    if (t.values.size() != space.knobs().size()) continue;
    const auto b = as_int(t.values[static_cast<std::size_t>(limit.knob)]);
    if (!b) continue;
    if (keeps_score(t.status)) limit.fits_max = std::max(limit.fits_max.value_or(*b), *b);
    else if (t.status == TrialStatus::Failed && is_out_of_memory(t.reason)) limit.oom_min = std::min(limit.oom_min.value_or(*b), *b);
  }
  // A batch that ran is below the limit whatever a noisy failure said: the limit lies above it.
  if (limit.fits_max && limit.oom_min && *limit.oom_min <= *limit.fits_max) limit.oom_min.reset();
  return limit;
}

std::string keep_batch_below_limit(const SearchSpace& space, const BatchLimit& limit, Assignment& values) {
  if (limit.knob < 0 || !limit.oom_min) return "";
  const Knob& k = space.knobs()[static_cast<std::size_t>(limit.knob)];
  auto& value = values[static_cast<std::size_t>(limit.knob)];
  const auto b = as_int(value);
  if (!b || *b < *limit.oom_min) return "";
  const auto lo = limit.fits_max.value_or(static_cast<std::int64_t>(k.min));
  const auto hi = *limit.oom_min;
  std::int64_t probe = lo;
  if (hi - lo > std::max<std::int64_t>(1, hi / 20)) {
    // Halfway (geometric on a log knob) between what ran and what did not; with nothing run yet, half the failure.
    const double mid = !limit.fits_max ? std::max(k.min, static_cast<double>(hi) / 2)
                       : k.scale == KnobScale::Log ? std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))
                                                   : (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
    probe = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(mid)), static_cast<std::int64_t>(k.min), hi - 1);
  }
  if (probe >= hi) return "";  // the knob's minimum already ran out of memory: nothing smaller to try
  const std::string note = fmt::format("{} {} -> {}: {} ran out of memory{}", k.name, value, probe, hi,
                                       limit.fits_max ? fmt::format(", {} ran", *limit.fits_max) : "");
  value = std::to_string(probe);
  return note;
}

std::string batch_note(const SearchSpace& space, const BatchLimit& limit, const Assignment& best) {
  if (limit.knob < 0 || best.size() != space.knobs().size()) return "";
  const Knob& k = space.knobs()[static_cast<std::size_t>(limit.knob)];
  const auto b = as_int(best[static_cast<std::size_t>(limit.knob)]);
  const auto d = k.default_value ? as_int(*k.default_value) : std::nullopt;
  std::string memory;
  if (limit.oom_min)
    memory = fmt::format(" Memory: {} per rank ran out of memory{}.", *limit.oom_min,
                         limit.fits_max ? fmt::format(", {} was the largest that ran", *limit.fits_max) : "");
  if (!b || !d || *b == *d) return memory.empty() ? "" : memory.substr(1);
  std::string same;
  if (*d % *b == 0)
    same = fmt::format("accumulating gradients over {} steps at batch {} reaches the default's global batch ({} per rank)",
                       *d / *b, *b, *d);
  else if (*b % *d == 0)
    same = fmt::format("no gradient accumulation at batch {} reaches the default's smaller global batch: batch {} per "
                       "rank is {}x the default's global batch (so is accumulating {} steps at the default batch)",
                       *b, *b, *b / *d, *b / *d);
  else
    same = fmt::format("no whole number of accumulation steps at batch {} gives the default's global batch ({} per rank)",
                       *b, *d);
  return fmt::format("The best {} is {} per rank, the default {}: a different batch size changes the optimisation "
                     "(the global batch, so the learning rate and its schedule, which are yours to rescale); {}. "
                     "--fixed-batch keeps {} at its default.{}",
                     k.name, *b, *d, same, k.name, memory);
}

}  // namespace collscope::autotuner
