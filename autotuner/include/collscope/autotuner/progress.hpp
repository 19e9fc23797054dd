#pragma once
// What a running study reports as it goes, for whoever shows it: the CLI prints one line per event, a test or the
// viewer may do something else. The tuner itself prints nothing.
#include <collscope/autotuner/study.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <variant>

namespace collscope::autotuner {

// --warm-start STUDY ran another command: its trials are not used.
struct WarmStartSkipped {
  std::string path;
};
// The earlier studies' trials that seed the model (all of them, and those with a score).
struct WarmStartLoaded {
  std::size_t trials = 0;
  int scored = 0;
  bool best_runs_first = false;  // their best setting is run again first
};
// A trial a killed tuner left running, of which nothing could be stopped, and why.
struct LeftoverNotStopped {
  int trial = 0;
  std::string why_not;
};
// The analyzer advises on the defaults' trace: the next trial runs its setting.
struct AdviceFound {
  std::string origin;  // "latency_bound: HOROVOD_FUSION_THRESHOLD=1048576"
};
// The replay model of the best trial's trace picks the next trial (model_screening.hpp).
struct ModelScreened {
  std::string origin;  // "cycle_time_ms=9.6: predicted +22 % samples/s over trial 2"
};
// The replay model of the best trial's trace cannot screen the space (Screening::why_not): the strategy goes on.
// Told once per trace.
struct ModelNotUsed {
  int trial = 0;
  std::string why_not;
};
// A stop rule ended exploration; the confirmation runs follow.
struct ExplorationStopped {
  std::string rule;  // worded for people, as stop_rule() gives it
};
// Where a trial stands in the study: NUMBER of PLANNED (what is left of the budget, the noise repeat and the
// confirmation runs, recomputed every trial), in a phase ("exploring", "confirming", "the job's defaults", ...).
struct TrialCounter {
  int number = 0;
  int planned = 0;
  std::string phase;
};
struct TrialStarted {
  TrialCounter counter;
  std::string kind;         // the trial's kind in the study ("default", "design", "confirm", ...)
  std::string settings;     // its values for people (SearchSpace::describe)
  std::string batch_probe;  // what the batch size's memory-limit probe changed, or ""
};
// While a trial runs (the first after 3 s, then every 10 s).
struct TrialRunning {
  int trial = 0;
  double seconds = 0;  // since the trial started
  std::string state;   // steps measured and throughput so far, or what the job printed
};
// The study's first score fixed where its scores come from.
struct ObjectiveChosen {
  std::string unit;    // "samples/s", "img/s", ...
  std::string source;  // "inferred steps (confidence 0.61: ...)", "printed ..."
};
struct TrialFinished {
  TrialCounter counter;
  TrialRecord record;               // as recorded: status, score, reason
  std::string unit;                 // the study's score unit
  std::optional<double> best_mean;  // the best setting's mean score so far, in `unit`
  double eta_s = 0;                 // the rest of the planned trials at this session's pace
};

using TuneEvent =
    std::variant<WarmStartSkipped, WarmStartLoaded, LeftoverNotStopped, AdviceFound, ModelScreened, ModelNotUsed,
                 ExplorationStopped, TrialStarted, TrialRunning, ObjectiveChosen, TrialFinished>;
// Called on the tuner's thread, between and during trials; empty: nobody is told.
using TuneProgress = std::function<void(const TuneEvent&)>;

}  // namespace collscope::autotuner
