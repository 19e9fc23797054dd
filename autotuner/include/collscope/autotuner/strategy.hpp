#pragma once
// Where to run the next trial: Bayesian optimisation (GP + expected improvement after a Latin-hypercube
// design), or the baselines random search and grid search. Every choice is a pure function of
// (space, seed, trial index, history), so a resumed study makes the same choices it would have made.
#include <collscope/autotuner/gaussian_process.hpp>
#include <collscope/autotuner/search_space.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::autotuner {

// Horovod: HOROVOD_AUTOTUNE's method reimplemented (horovod_strategy.cpp), for the benchmark against it.
enum class StrategyKind { Bayesian, Random, Grid, Horovod };
StrategyKind strategy_from_name(const std::string& name);  // "bo" | "random" | "grid" | "horovod"; throws InputError
std::string strategy_name(StrategyKind kind);

struct Observation {
  std::vector<double> unit;     // the trial's point on the unit cube
  std::optional<double> value;  // oriented objective (larger is better); nullopt: the trial failed
  Assignment values;            // the knob values it ran with (the unit point may be clamped: Horovod's strategy)
};

struct Suggestion {
  std::vector<double> unit;
  std::string source;                     // "design", "expected-improvement", "repeat", "random", "grid", "warm-up", ...
  std::optional<GpHyperparameters> model; // the GP's state that chose it (BO only)
  double log_likelihood = 0;              // of that model
  double log_acquisition = 0;             // log EI at the chosen point: EI is in the oriented objective's units
  std::optional<Assignment> values;       // the values to run when they are not to_values(unit) (Horovod's domain)
};

// Bayesian suggestions closer than this to a measured point on every axis of the model's features (unit cube) count as
// that point: measuring it again would be a repeat, not an exploration.
inline constexpr double kMinNewDistance = 0.01;

class Strategy {
 public:
  // budget: exploration trials planned (sizes the initial design and the grid); grid_levels 0 = from budget.
  Strategy(const SearchSpace& space, StrategyKind kind, std::uint64_t seed, int budget, int grid_levels = 0);

  // The point for exploration trial `index` (0-based) given all finished trials; nullopt when the grid (or Horovod's
  // sample budget) is exhausted. Bayesian: never a point whose values were already measured, unless every candidate
  // was (then source "repeat": a deliberate repeat).
  std::optional<Suggestion> suggest(int index, const std::vector<Observation>& history) const;

  int initial_design_size() const { return initial_design_size_; }
  const std::vector<std::vector<double>>& grid() const { return grid_; }

 private:
  Suggestion suggest_bayesian(int index, const std::vector<Observation>& history) const;

  const SearchSpace& space_;
  StrategyKind kind_;
  std::uint64_t seed_;
  int initial_design_size_ = 0;
  std::vector<std::vector<double>> design_;  // Latin hypercube, initial_design_size_ points
  std::vector<std::vector<double>> grid_;
};

// The GP costs O(n^2) memory and O(n^3) time per likelihood evaluation: above this many observations the model sees
// a subset (model_observations), so a fit stays near a second and a report over a 75 000-trial study stays bounded.
inline constexpr std::size_t kMaxModelObservations = 256;
// At most kMaxModelObservations of the history, non-finite values left out: all of it when it is small enough, else
// the best half by value and the rest evenly spaced in trial order. Deterministic.
std::vector<Observation> model_observations(const std::vector<Observation>& history);

// Fits the tuner's GP to the history (failed trials imputed with the worst success, so the model
// learns to avoid their region). Returns false when there are fewer than two successes.
// HOROVOD_AUTOTUNE's method on a space with HOROVOD_FUSION_THRESHOLD and HOROVOD_CYCLE_TIME knobs: 3 warm-up samples
// (discarded) at its first seed point, the seed points (4 MB, 5 ms), (32, 50), (16, 25), (8, 10), then Bayesian
// optimisation over fusion MB in [0, 64] x cycle ms in [1, 100] (linear) with its GP noise 0.8, to 20 samples.
// nullopt after the last sample. Scores are bytes all-reduced per microsecond (scoring.hpp).
inline constexpr int kHorovodWarmupSamples = 3;
inline constexpr int kHorovodMaxSamples = 20;
std::optional<Suggestion> suggest_horovod(const SearchSpace& space, std::uint64_t seed, int index,
                                          const std::vector<Observation>& history);

bool fit_model(const SearchSpace& space, const std::vector<Observation>& history, std::uint64_t seed,
               GaussianProcess& gp, const GpHyperparameters* warm_start = nullptr);
std::vector<int> feature_groups(const SearchSpace& space);

}  // namespace collscope::autotuner
