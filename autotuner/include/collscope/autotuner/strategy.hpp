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

enum class StrategyKind { Bayesian, Random, Grid };
StrategyKind strategy_from_name(const std::string& name);  // "bo" | "random" | "grid"; throws InputError
std::string strategy_name(StrategyKind kind);

struct Observation {
  std::vector<double> unit;     // the trial's point on the unit cube
  std::optional<double> value;  // oriented objective (larger is better); nullopt: the trial failed
};

struct Suggestion {
  std::vector<double> unit;
  std::string source;                     // "design", "expected-improvement", "random", "grid"
  std::optional<GpHyperparameters> model; // the GP's state that chose it (BO only)
  double log_likelihood = 0;              // of that model
  double log_acquisition = 0;             // log EI at the chosen point
};

class Strategy {
 public:
  // budget: exploration trials planned (sizes the initial design and the grid); grid_levels 0 = from budget.
  Strategy(const SearchSpace& space, StrategyKind kind, std::uint64_t seed, int budget, int grid_levels = 0);

  // The point for exploration trial `index` (0-based) given all finished trials; nullopt when the grid is exhausted.
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
bool fit_model(const SearchSpace& space, const std::vector<Observation>& history, std::uint64_t seed,
               GaussianProcess& gp, const GpHyperparameters* warm_start = nullptr);
std::vector<int> feature_groups(const SearchSpace& space);

}  // namespace collscope::autotuner
