#pragma once
// What the tuner decides around the strategy: how noisy a trial is, when more trials cannot pay (stop rules), and
// where the batch size fits in memory. Pure functions of the space and the trials, so a resumed study decides alike.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/study.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::autotuner {

// Trial kinds the tuner adds around the strategy's: the job's defaults first, then the analyzer's advice on the
// defaults' trace (advice.hpp), the replay model's picks (model_screening.hpp), one deliberate repeat of the best point after the initial design (to measure the
// noise), the earlier studies' best (warm start), confirmation runs.
inline constexpr const char* kKindDefault = "default";
inline constexpr const char* kKindAdvice = "advice";
inline constexpr const char* kKindPredicted = "predicted";  // the replay model's pick (model_screening.hpp)
inline constexpr const char* kKindNoiseRepeat = "noise-repeat";
inline constexpr const char* kKindWarmBest = "warm-best";
inline constexpr const char* kKindConfirm = "confirm";
inline constexpr const char* kKindWarmup = "warm-up";  // Horovod's discarded warm-up samples: never scored as best
bool is_strategy_kind(const std::string& kind);        // chosen by the strategy (counts as its trial index)

// Trial-to-trial noise: the pooled standard deviation of the scores of settings run more than once (objective units).
struct NoiseEstimate {
  double sd = 0;       // objective units
  double relative = 0; // sd over the mean score of those settings
  int settings = 0;    // settings run more than once
  int runs = 0;        // their runs
};
std::optional<NoiseEstimate> estimate_noise(const SearchSpace& space, const std::vector<TrialRecord>& trials);

struct StopInputs {
  double expected_gain = 0;          // EI of the next point, oriented objective units (larger is better)
  double best = 0;                   // best mean score so far, oriented
  std::optional<NoiseEstimate> noise;
  int confirm_repeats = 1;           // runs a candidate gets on top of its first
  std::optional<std::int64_t> job_steps;  // --job-steps: the job's length in steps
  std::optional<double> best_step_s;      // seconds per step of the best setting
  double mean_trial_s = 0;           // wall time of one trial so far
  bool step_time_objective = false;  // the objective is step time in ms (minimised), else a rate (maximised)
  std::optional<double> time_budget_s;  // --time-budget
  double elapsed_s = 0;              // tuning time spent so far (this study, every session), plus what the next trial
                                     // and the confirmation runs will cost
};
// The rule that ends exploration, worded for people ("noise: the expected gain 3.1 samples/s is below ..."), or
// nullopt to go on. Rules: time budget spent; expected gain below the noise a confirmed mean can resolve (sd over
// sqrt(1 + confirm_repeats)); the gain over --job-steps steps saves less time than the next trial costs.
std::optional<std::string> stop_rule(const StopInputs& in);

// What the trials say about the batch size's memory limit. `knob` is the objective's batch_size knob (-1: none).
struct BatchLimit {
  int knob = -1;
  std::optional<std::int64_t> fits_max;  // largest batch that ran
  std::optional<std::int64_t> oom_min;   // smallest batch that ran out of memory
};
bool is_out_of_memory(const std::string& reason);  // "out of memory", OOM, bad_alloc, cannot allocate memory
BatchLimit batch_limit(const SearchSpace& space, const std::vector<TrialRecord>& trials);
// Moves a batch at or above the known memory limit below it: between the largest batch that ran and the smallest
// that did not (halving the gap each time: a probe, not a blind failure), or to the largest that ran once the gap is
// under 5 %. Returns what it did ("batch_size 118 -> 64: 96 ran out of memory"), or "" when nothing changed.
std::string keep_batch_below_limit(const SearchSpace& space, const BatchLimit& limit, Assignment& values);
// For the report: what a different batch size means for training (the optimisation changes; which gradient
// accumulation keeps the default global batch), or "" when the best batch is the default or there is no batch knob.
std::string batch_note(const SearchSpace& space, const BatchLimit& limit, const Assignment& best);

}  // namespace collscope::autotuner
