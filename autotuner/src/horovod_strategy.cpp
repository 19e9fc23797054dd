// HOROVOD_AUTOTUNE's method as a strategy (strategy.hpp): what the benchmark against it runs. Horovod tunes inside one
// job, changing its knobs every few steps; here every sample is one trial (a whole run), which is how `collscope tune`
// measures, so the two methods differ only in where they look and how they score.
#include <collscope/autotuner/strategy.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>

namespace collscope::autotuner {

namespace {
constexpr double kMaxFusionMb = 64, kMinCycleMs = 1, kMaxCycleMs = 100;  // Horovod's box
constexpr double kNoise = 0.8;                                           // HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE
constexpr std::array<std::array<double, 2>, 4> kSeedPoints{{{4, 5}, {32, 50}, {16, 25}, {8, 10}}};  // (MB, ms)

struct HorovodKnobs {
  int fusion = -1, cycle = -1;  // knob indices
};

HorovodKnobs knobs_of(const SearchSpace& space) {
  HorovodKnobs k;
  for (std::size_t i = 0; i < space.knobs().size(); ++i) {
    const auto& env = space.knobs()[i].env;
    if (env == run::horovod_env::kFusionThreshold) k.fusion = static_cast<int>(i);
    if (env == run::horovod_env::kCycleTime) k.cycle = static_cast<int>(i);
  }
  if (k.fusion < 0 || k.cycle < 0)
    throw InputError("--strategy horovod: the space needs knobs with env HOROVOD_FUSION_THRESHOLD and HOROVOD_CYCLE_TIME");
  return k;
}

// A point of Horovod's box (MB, ms) as the space's values: other knobs at their defaults (or the cube's centre).
Suggestion at(const SearchSpace& space, const HorovodKnobs& k, double mb, double ms, const std::string& source) {
  Assignment values = space.to_values(std::vector<double>(space.dimensions(), 0.5));
  for (std::size_t i = 0; i < space.knobs().size(); ++i)
    if (space.knobs()[i].default_value) values[i] = *space.knobs()[i].default_value;
  values[static_cast<std::size_t>(k.fusion)] = std::to_string(std::llround(mb * 1024 * 1024));
  values[static_cast<std::size_t>(k.cycle)] = fmt::format("{:.4g}", ms);
  Suggestion s;
  s.values = values;
  s.source = source;
  // The model's point is Horovod's own box; the study records the space's cube point (clamped) for reports.
  std::vector<double> unit = space.to_unit(values);
  s.unit = unit;
  return s;
}

// (MB, ms) of an observation, scaled to Horovod's unit box.
std::optional<std::array<double, 2>> box_point(const HorovodKnobs& k, const Observation& o) {
  if (o.values.empty()) return std::nullopt;
  try {
    const double mb = std::stod(o.values[static_cast<std::size_t>(k.fusion)]) / (1024.0 * 1024.0);
    const double ms = std::stod(o.values[static_cast<std::size_t>(k.cycle)]);
    return std::array<double, 2>{std::clamp(mb / kMaxFusionMb, 0.0, 1.0),
                                 std::clamp((ms - kMinCycleMs) / (kMaxCycleMs - kMinCycleMs), 0.0, 1.0)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

std::optional<Suggestion> suggest_horovod(const SearchSpace& space, std::uint64_t seed, int index,
                                          const std::vector<Observation>& history) {
  const HorovodKnobs k = knobs_of(space);
  if (index < kHorovodWarmupSamples) return at(space, k, kSeedPoints[0][0], kSeedPoints[0][1], "warm-up");
  const int sample = index - kHorovodWarmupSamples;
  if (sample >= kHorovodMaxSamples) return std::nullopt;
  if (sample < static_cast<int>(kSeedPoints.size()))
    return at(space, k, kSeedPoints[static_cast<std::size_t>(sample)][0], kSeedPoints[static_cast<std::size_t>(sample)][1],
              "horovod-seed");

  // The GP over the unit box of (MB, ms), one shared feature group per knob, noise fixed at Horovod's 0.8.
  std::vector<std::array<double, 2>> xs;
  std::vector<double> ys;
  for (const auto& o : history)
    if (o.value && std::isfinite(*o.value))
      if (const auto p = box_point(k, o)) xs.push_back(*p), ys.push_back(*o.value);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(index));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (xs.size() < 2) return at(space, k, unit(rng) * kMaxFusionMb, kMinCycleMs + unit(rng) * (kMaxCycleMs - kMinCycleMs), "random");
  Eigen::MatrixXd x(static_cast<Eigen::Index>(xs.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(ys.size()));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    x(static_cast<Eigen::Index>(i), 0) = xs[i][0];
    x(static_cast<Eigen::Index>(i), 1) = xs[i][1];
    y[static_cast<Eigen::Index>(i)] = ys[i];
  }
  GaussianProcess gp({0, 1});
  gp.fit(x, y, seed + static_cast<std::uint64_t>(index), 3);
  GpHyperparameters h = gp.hyperparameters();
  h.noise_variance = kNoise;
  gp.condition(x, y, h);
  double best = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double mu = 0, sd = 0;
    gp.predict(Eigen::Vector2d(xs[i][0], xs[i][1]), mu, sd);
    best = std::max(best, mu);
  }
  // Expected improvement maximised over random points of the box (Horovod samples and polishes; the same in effect).
  double best_ei = -std::numeric_limits<double>::infinity();
  Eigen::Vector2d chosen(0.5, 0.5);
  for (int c = 0; c < 4096; ++c) {
    const Eigen::Vector2d p(unit(rng), unit(rng));
    double mu = 0, sd = 0;
    gp.predict(p, mu, sd);
    const double ei = log_expected_improvement(mu, sd, best, 0.0);
    if (ei > best_ei) best_ei = ei, chosen = p;
  }
  Suggestion s = at(space, k, chosen[0] * kMaxFusionMb, kMinCycleMs + chosen[1] * (kMaxCycleMs - kMinCycleMs),
                    "horovod-bo");
  s.log_acquisition = best_ei;
  return s;
}

}  // namespace collscope::autotuner
