// The tuner's screen with the replay model (model_screening.hpp).
#include <collscope/autotuner/model_screening.hpp>
#include <collscope/predict/replay.hpp>
#include <collscope/run/job_settings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace collscope::autotuner {
namespace {

// Grid points per knob the model changes: 9 on the knob's own scale (log or linear) across its range, plus the traced
// value. 2 knobs gave about 80 predictions in 0.5 s on the recorded 40-step Horovod trace (ModelScreening.*): 3
// knobs, about 1 000, in some 6 s per trial.
constexpr int kLevels = 9;

enum class Mapped { FusionThreshold, CycleTime, BatchSize };

struct MappedKnob {
  std::size_t index;
  Mapped what;
};

std::vector<MappedKnob> mapped_knobs(const SearchSpace& space) {
  std::vector<MappedKnob> out;
  const Objective& objective = space.objective();
  for (std::size_t i = 0; i < space.knobs().size(); ++i) {
    const Knob& k = space.knobs()[i];
    if (k.type != KnobType::Real && k.type != KnobType::Integer) continue;
    if (k.env && *k.env == run::horovod_env::kFusionThreshold) out.push_back({i, Mapped::FusionThreshold});
    else if (k.env && *k.env == run::horovod_env::kCycleTime) out.push_back({i, Mapped::CycleTime});
    else if (objective.kind == ObjectiveKind::Throughput && objective.batch_size_given && objective.batch_size == k.name)
      out.push_back({i, Mapped::BatchSize});
  }
  return out;
}

// The values knob k takes in the grid: kLevels across its range on its own scale, snapped as the job reads them, and
// the traced value.
std::vector<std::string> levels(const SearchSpace& space, std::size_t k, const Assignment& traced) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  std::vector<double> unit = space.to_unit(traced);
  for (int l = 0; l < kLevels; ++l) {
    unit[k] = double(l) / double(kLevels - 1);
    const std::string v = space.to_values(unit)[k];
    if (seen.insert(v).second) out.push_back(v);
  }
  if (seen.insert(traced[k]).second) out.push_back(traced[k]);
  return out;
}

predict::Change change_of(const std::vector<MappedKnob>& mapped, const Assignment& values, const Assignment& traced) {
  predict::Change c;
  for (const auto& m : mapped) {
    if (values[m.index] == traced[m.index]) continue;
    const double v = std::strtod(values[m.index].c_str(), nullptr);
    switch (m.what) {
      case Mapped::FusionThreshold: c.fusion_threshold_bytes = static_cast<std::int64_t>(std::llround(v)); break;
      case Mapped::CycleTime: c.cycle_time_ms = v; break;
      case Mapped::BatchSize: c.batch_size = static_cast<std::int64_t>(std::llround(v)); break;
    }
  }
  return c;
}

}  // namespace

Screening screen_with_model(const SearchSpace& space, const std::string& run_dir, const Assignment& traced,
                            int trial_id, const std::vector<TriedSetting>& tried, double min_gain) {
  Screening out;
  const auto mapped = mapped_knobs(space);
  if (mapped.empty()) {
    out.why_not = "the space has no knob the replay model changes (HOROVOD_FUSION_THRESHOLD, HOROVOD_CYCLE_TIME, "
                  "the objective's batch size)";
    return out;
  }
  // The traced setting's measured score (mean over its runs): what every gain is against.
  std::vector<double> traced_scores;
  for (const auto& t : tried)
    if (t.values == traced && t.score && std::isfinite(*t.score) && *t.score > 0) traced_scores.push_back(*t.score);
  if (traced_scores.empty()) {
    out.why_not = "the traced setting has no measured score";
    return out;
  }
  double measured_traced = 0;
  for (double v : traced_scores) measured_traced += v / double(traced_scores.size());
  predict::ReplayModel model;
  try {
    model = predict::model_of_run(run_dir);
  } catch (const std::exception& e) {
    out.why_not = e.what();
    return out;
  }
  if (!model.usable) {
    out.why_not = model.why_not;
    return out;
  }
  const bool maximize = space.objective().maximize;
  // What the model predicts of the objective: samples/s where it is maximised, the step (ms) where minimised.
  std::string first_not_predicted;  // why the model gave no prediction, the first time it gave none
  const auto predicted = [&](const Assignment& values) -> std::optional<double> {
    const predict::Prediction p = predict::predict(model, change_of(mapped, values, traced));
    if (first_not_predicted.empty() && !p.not_predicted.empty()) first_not_predicted = p.not_predicted.front();
    if (!p.not_predicted.empty() || p.steps_replayed == 0) return std::nullopt;
    const double v = maximize ? p.samples_per_s : p.step_ms;
    return v > 0 && std::isfinite(v) ? std::optional(v) : std::nullopt;
  };
  const auto base = predicted(traced);
  if (!base) {
    out.why_not = "the model gives no prediction for the traced setting itself" +
                  (first_not_predicted.empty() ? std::string() : " (" + first_not_predicted + ")");
    return out;
  }
  // Refinement by the real runs: measured / predicted at each setting run that differs from the traced one in the
  // model's knobs alone, and at the traced one (the anchor, in the study's units). A candidate's prediction is
  // scaled by these ratios weighted by nearness on the unit cube (Gaussian, length kNearness per knob axis), the
  // anchor's also standing in with a small weight for everything far from any run.
  constexpr double kNearness = 0.15, kAnchorWeight = 0.1;
  const auto unmapped_equal = [&](const Assignment& v) {
    for (std::size_t k = 0; k < v.size(); ++k)
      if (v[k] != traced[k] && std::none_of(mapped.begin(), mapped.end(), [&](const MappedKnob& m) { return m.index == k; }))
        return false;
    return true;
  };
  struct Ratio {
    std::vector<double> unit;
    double ratio;
  };
  std::vector<Ratio> ratios;
  const double anchor = measured_traced / *base;
  for (const auto& t : tried) {
    if (!t.score || !std::isfinite(*t.score) || *t.score <= 0 || t.values.size() != traced.size() || !unmapped_equal(t.values))
      continue;
    if (const auto p = predicted(t.values)) ratios.push_back({space.to_unit(t.values), *t.score / *p});
  }
  const auto refined = [&](const Assignment& values, double p) {
    const auto u = space.to_unit(values);
    double w_sum = kAnchorWeight, r_sum = kAnchorWeight * anchor;
    for (const auto& r : ratios) {
      double d2 = 0;
      for (const auto& m : mapped) d2 += (u[m.index] - r.unit[m.index]) * (u[m.index] - r.unit[m.index]);
      const double w = std::exp(-d2 / (2 * kNearness * kNearness));
      w_sum += w, r_sum += w * r.ratio;
    }
    return p * r_sum / w_sum;
  };
  std::vector<std::vector<std::string>> grid;
  for (const auto& m : mapped) grid.push_back(levels(space, m.index, traced));
  std::vector<std::size_t> at(grid.size(), 0);
  double best_gain = -1;
  Assignment best;
  while (true) {
    Assignment values = traced;
    for (std::size_t g = 0; g < grid.size(); ++g) values[mapped[g].index] = grid[g][at[g]];
    const bool run_before = std::any_of(tried.begin(), tried.end(), [&](const TriedSetting& t) { return t.values == values; });
    if (!run_before) {
      if (const auto p = predicted(values)) {
        ++out.candidates;
        const double v = refined(values, *p);
        const double gain = maximize ? v / measured_traced - 1 : 1 - v / measured_traced;
        if (gain > best_gain) best_gain = gain, best = values;
      }
    }
    std::size_t g = 0;
    while (g < grid.size() && ++at[g] == grid[g].size()) at[g++] = 0;
    if (g == grid.size()) break;
  }
  out.usable = out.candidates > 0;
  if (!out.usable) {
    out.why_not = "the model predicts none of the space's untried settings from this trace";
    return out;
  }
  if (best_gain < min_gain) return out;
  std::string changed;
  for (const auto& m : mapped)
    if (best[m.index] != traced[m.index])
      changed += fmt::format("{}{}={}", changed.empty() ? "" : " ", space.knobs()[m.index].name,
                             space.knobs()[m.index].shown(best[m.index]));
  out.best = ScreenedSetting{best, best_gain,
                             maximize ? fmt::format("{}: predicted {:+.0f} % samples/s over trial {}", changed,
                                                    100 * best_gain, trial_id)
                                      : fmt::format("{}: predicted a {:.0f} % shorter step than trial {}", changed,
                                                    100 * best_gain, trial_id)};
  return out;
}

}  // namespace collscope::autotuner
