// Bayesian optimisation and the random / grid baselines.
#include <collscope/autotuner/strategy.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

namespace collscope::autotuner {

StrategyKind strategy_from_name(const std::string& name) {
  if (name == "bo" || name == "bayesian") return StrategyKind::Bayesian;
  if (name == "random") return StrategyKind::Random;
  if (name == "grid") return StrategyKind::Grid;
  if (name == "horovod") return StrategyKind::Horovod;
  throw InputError(fmt::format("--strategy: '{}' is not one of bo, random, grid, horovod", name));
}

std::string strategy_name(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::Bayesian: return "bo";
    case StrategyKind::Random: return "random";
    case StrategyKind::Grid: return "grid";
    case StrategyKind::Horovod: return "horovod";
  }
  return "bo";
}

std::vector<int> feature_groups(const SearchSpace& space) {
  std::vector<int> groups;
  for (std::size_t k = 0; k < space.knobs().size(); ++k)
    for (int f = 0; f < space.knobs()[k].feature_count(); ++f) groups.push_back(static_cast<int>(k));
  return groups;
}

namespace {

// A seed for one decision: independent streams per (study seed, trial index, purpose).
std::uint64_t mix(std::uint64_t seed, std::uint64_t index, std::uint64_t purpose) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + index * 0xBF58476D1CE4E5B9ULL + purpose * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::vector<std::vector<double>> latin_hypercube(std::size_t n, std::size_t dims, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> points(n, std::vector<double>(dims));
  for (std::size_t d = 0; d < dims; ++d) {
    std::vector<std::size_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (std::size_t i = 0; i < n; ++i) points[i][d] = (static_cast<double>(perm[i]) + unit(rng)) / static_cast<double>(n);
  }
  return points;
}

std::vector<double> levels_for(const Knob& k, int levels) {
  std::vector<double> u;
  if (k.type == KnobType::Categorical || k.type == KnobType::Boolean) {
    for (std::size_t i = 0; i < k.values.size(); ++i) u.push_back((static_cast<double>(i) + 0.5) / static_cast<double>(k.values.size()));
    return u;
  }
  int n = levels;
  if (k.type == KnobType::Integer) n = static_cast<int>(std::min<std::int64_t>(levels, k.level_count()));
  if (n <= 1) return {0.5};
  for (int i = 0; i < n; ++i) u.push_back(static_cast<double>(i) / (n - 1));
  return u;
}

struct AcquisitionContext {
  const SearchSpace* space;
  const GaussianProcess* gp;
  double best;
  double xi;
};

double log_ei_at(const AcquisitionContext& ctx, const std::vector<double>& unit) {
  const std::vector<double> f = ctx.space->features(unit);
  double mu = 0, sd = 0;
  ctx.gp->predict(Eigen::Map<const Eigen::VectorXd>(f.data(), static_cast<Eigen::Index>(f.size())), mu, sd);
  return log_expected_improvement(mu, sd, ctx.best, ctx.xi);
}

double negative_log_ei(unsigned n, const double* p, double* grad, void* data) {
  (void)grad;
  const auto* ctx = static_cast<const AcquisitionContext*>(data);
  const double v = log_ei_at(*ctx, std::vector<double>(p, p + n));
  return std::isfinite(v) ? -v : 1e300;
}

// "Measured": the same values, or within kMinNewDistance of a measured point on every axis of the model's features
// (a log integer knob over 64 KiB..256 MiB has a setting every few bytes: 134217729 is 134217728 again).
bool measured_before(const SearchSpace& space, const std::vector<Observation>& history, const std::vector<double>& p) {
  const Assignment values = space.to_values(p);
  const std::vector<double> f = space.features(p);
  for (const auto& h : history) {
    if ((h.values.empty() ? space.to_values(h.unit) : h.values) == values) return true;
    const std::vector<double> g = space.features(h.unit);
    double far = 0;
    for (std::size_t i = 0; i < f.size() && i < g.size(); ++i) far = std::max(far, std::abs(f[i] - g[i]));
    if (far < kMinNewDistance) return true;
  }
  return false;
}

}  // namespace

std::vector<Observation> model_observations(const std::vector<Observation>& history) {
  std::vector<Observation> usable;
  for (const auto& o : history)
    if (!o.value || std::isfinite(*o.value)) usable.push_back(o);
  if (usable.size() <= kMaxModelObservations) return usable;
  // The best half of the budget by value, then the others evenly spaced in trial order (failures among them).
  std::vector<std::size_t> by_value;
  for (std::size_t i = 0; i < usable.size(); ++i)
    if (usable[i].value) by_value.push_back(i);
  const std::size_t best_count = std::min(by_value.size(), kMaxModelObservations / 2);
  std::partial_sort(by_value.begin(), by_value.begin() + static_cast<std::ptrdiff_t>(best_count), by_value.end(),
                    [&](std::size_t a, std::size_t b) { return *usable[a].value > *usable[b].value; });
  std::vector<bool> taken(usable.size(), false);
  for (std::size_t k = 0; k < best_count; ++k) taken[by_value[k]] = true;
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < usable.size(); ++i)
    if (!taken[i]) rest.push_back(i);
  const std::size_t rest_count = kMaxModelObservations - best_count;
  for (std::size_t k = 0; k < rest_count && !rest.empty(); ++k) taken[rest[k * rest.size() / rest_count]] = true;
  std::vector<Observation> out;
  for (std::size_t i = 0; i < usable.size(); ++i)
    if (taken[i]) out.push_back(usable[i]);
  return out;
}

bool fit_model(const SearchSpace& space, const std::vector<Observation>& all_history, std::uint64_t seed,
               GaussianProcess& gp, const GpHyperparameters* warm_start) {
  const std::vector<Observation> history = model_observations(all_history);
  double worst = std::numeric_limits<double>::infinity();
  int successes = 0;
  for (const auto& o : all_history)
    if (o.value && std::isfinite(*o.value)) {
      worst = std::min(worst, *o.value);
      ++successes;
    }
  if (successes < 2) return false;
  Eigen::MatrixXd x(static_cast<Eigen::Index>(history.size()), space.feature_count());
  Eigen::VectorXd y(static_cast<Eigen::Index>(history.size()));
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto f = space.features(history[i].unit);
    for (std::size_t j = 0; j < f.size(); ++j) x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = f[j];
    y[static_cast<Eigen::Index>(i)] = history[i].value.value_or(worst);
  }
  gp.fit(x, y, seed, 3, warm_start);
  return true;
}

Strategy::Strategy(const SearchSpace& space, StrategyKind kind, std::uint64_t seed, int budget, int grid_levels)
    : space_(space), kind_(kind), seed_(seed) {
  const int dims = static_cast<int>(space.dimensions());
  // A few space-filling trials first: d + 2, at least 3, at most a third of the budget (>= 2).
  initial_design_size_ = std::min(std::max(dims + 2, 3), std::max(2, budget / 3));
  std::mt19937_64 rng(mix(seed, 0, 1));
  design_ = latin_hypercube(static_cast<std::size_t>(initial_design_size_), static_cast<std::size_t>(dims), rng);
  if (kind == StrategyKind::Grid) {
    int levels = grid_levels;
    if (levels <= 0) {
      levels = std::max(2, static_cast<int>(std::floor(std::pow(std::max(budget, 1), 1.0 / std::max(dims, 1)) + 1e-9)));
    }
    std::vector<std::vector<double>> per_knob;
    for (const auto& k : space.knobs()) per_knob.push_back(levels_for(k, levels));
    std::vector<std::size_t> idx(per_knob.size(), 0);
    while (true) {
      std::vector<double> p;
      for (std::size_t d = 0; d < per_knob.size(); ++d) p.push_back(per_knob[d][idx[d]]);
      grid_.push_back(std::move(p));
      std::size_t d = per_knob.size();
      while (d > 0) {
        --d;
        if (++idx[d] < per_knob[d].size()) break;
        idx[d] = 0;
        if (d == 0) return;
      }
      if (per_knob.empty()) return;
    }
  }
}

std::optional<Suggestion> Strategy::suggest(int index, const std::vector<Observation>& history) const {
  switch (kind_) {
    case StrategyKind::Grid: {
      if (index < 0 || static_cast<std::size_t>(index) >= grid_.size()) return std::nullopt;
      return Suggestion{grid_[static_cast<std::size_t>(index)], "grid", std::nullopt, 0, 0, std::nullopt};
    }
    case StrategyKind::Random: {
      std::mt19937_64 rng(mix(seed_, static_cast<std::uint64_t>(index), 2));
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      std::vector<double> p(space_.dimensions());
      for (auto& v : p) v = unit(rng);
      return Suggestion{p, "random", std::nullopt, 0, 0, std::nullopt};
    }
    case StrategyKind::Bayesian: return suggest_bayesian(index, history);
    case StrategyKind::Horovod: return suggest_horovod(space_, seed_, index, history);
  }
  return std::nullopt;
}

Suggestion Strategy::suggest_bayesian(int index, const std::vector<Observation>& history) const {
  if (index < initial_design_size_) {
    // A design point on a setting measured already (the defaults, a warm start, a small discrete space) moves to
    // the first of a seeded random sequence that is new, so the design measures as many settings as it has points.
    std::vector<double> p = design_[static_cast<std::size_t>(index)];
    std::mt19937_64 rng(mix(seed_, static_cast<std::uint64_t>(index), 6));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int tries = 0; tries < 256 && measured_before(space_, history, p); ++tries)
      for (auto& v : p) v = unit(rng);
    return Suggestion{p, "design", std::nullopt, 0, 0, std::nullopt};
  }
  GaussianProcess gp(feature_groups(space_));
  if (!fit_model(space_, history, mix(seed_, static_cast<std::uint64_t>(index), 3), gp)) {
    // Too few successes to model (everything failed so far): keep exploring at random.
    std::mt19937_64 rng(mix(seed_, static_cast<std::uint64_t>(index), 4));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<double> p(space_.dimensions());
    for (auto& v : p) v = unit(rng);
    return Suggestion{p, "random", std::nullopt, 0, 0, std::nullopt};
  }
  // Incumbent: the best posterior mean at an observed success (robust to one lucky noisy run).
  double best = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> incumbents;
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!history[i].value) continue;
    const auto f = space_.features(history[i].unit);
    double mu = 0, sd = 0;
    gp.predict(Eigen::Map<const Eigen::VectorXd>(f.data(), static_cast<Eigen::Index>(f.size())), mu, sd);
    best = std::max(best, mu);
    ranked.emplace_back(-mu, i);
  }
  std::sort(ranked.begin(), ranked.end());
  const AcquisitionContext ctx{&space_, &gp, best, 0.01 * gp.y_scale()};

  // Candidates: random points over the whole cube plus local perturbations of the best observations;
  // then BOBYQA from the best few. The acquisition is evaluated through features(), so integer and
  // categorical knobs are snapped inside the model, not only when the trial runs.
  std::mt19937_64 rng(mix(seed_, static_cast<std::uint64_t>(index), 5));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> jitter(0.0, 0.05);
  const std::size_t dims = space_.dimensions();
  std::vector<std::pair<double, std::vector<double>>> candidates;
  for (int c = 0; c < 1024; ++c) {
    std::vector<double> p(dims);
    for (auto& v : p) v = unit(rng);
    candidates.emplace_back(log_ei_at(ctx, p), std::move(p));
  }
  for (std::size_t r = 0; r < std::min<std::size_t>(3, ranked.size()); ++r) {
    for (int c = 0; c < 96; ++c) {
      std::vector<double> p = history[ranked[r].second].unit;
      for (auto& v : p) v = std::clamp(v + jitter(rng), 0.0, 1.0);
      candidates.emplace_back(log_ei_at(ctx, p), std::move(p));
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> best_point = candidates[0].second;
  double best_value = candidates[0].first;
  const std::vector<double> lower(dims, 0.0), upper(dims, 1.0);
  for (int s = 0; s < 4; ++s) {
    std::vector<double> p = candidates[static_cast<std::size_t>(s)].second;
    nlopt_opt opt = nlopt_create(NLOPT_LN_BOBYQA, static_cast<unsigned>(dims));
    nlopt_set_lower_bounds(opt, lower.data());
    nlopt_set_upper_bounds(opt, upper.data());
    nlopt_set_min_objective(opt, negative_log_ei, const_cast<AcquisitionContext*>(&ctx));
    nlopt_set_maxeval(opt, 40 * static_cast<int>(dims));
    nlopt_set_initial_step1(opt, 0.05);
    double v = 0;
    nlopt_optimize(opt, p.data(), &v);
    nlopt_destroy(opt);
    const double value = log_ei_at(ctx, p);
    if (value > best_value) {
      best_value = value;
      best_point = p;
    }
  }
  // Never measure a point twice by accident: integer and categorical knobs snap many cube points onto one setting,
  // and with noisy scores EI likes the neighbourhood of the best. The best candidate whose values are new instead;
  // when every candidate is measured, the best one again, as a deliberate repeat (it sharpens its mean).
  const auto is_measured = [&](const std::vector<double>& p) { return measured_before(space_, history, p); };
  std::string source = "expected-improvement";
  if (is_measured(best_point)) {
    source = "repeat";
    for (const auto& [value, p] : candidates) {
      if (is_measured(p)) continue;
      best_point = p;
      best_value = value;
      source = "expected-improvement";
      break;
    }
  }
  return Suggestion{best_point, source, gp.hyperparameters(), gp.log_likelihood(), best_value, std::nullopt};
}

}  // namespace collscope::autotuner
