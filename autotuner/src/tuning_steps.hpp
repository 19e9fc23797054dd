#pragma once
// The steps of a study, in the order tune() (tuner.cpp) runs them: open or resume the study, recover the trials a
// killed tuner left running, then per trial read where the study stands, choose the next trial, launch and watch
// it, record it. Internal to the autotuner.
#include <collscope/autotuner/advice.hpp>
#include <collscope/autotuner/model_screening.hpp>
#include <collscope/autotuner/progress.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/autotuner/study.hpp>
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/autotuner/tuner.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::autotuner::detail {

// Tells `progress` of an event when someone listens.
inline void tell(const TuneProgress& progress, TuneEvent event) {
  if (progress) progress(event);
}

// --- Open or resume the study ---------------------------------------------------------------------------------------

// What a study runs with: from the options for a new study, from the study's meta when resumed.
struct OpenedStudy {
  Study study;
  std::vector<std::string> command;  // the job, with {knob} placeholders
  std::string strategy_text;         // "bo", "random", ...
  std::uint64_t seed = 0;
  int budget = 0;  // exploration trials
  bool model_screening = true;  // the study's own (meta "model_screening"; absent in studies made before it: off)
};
// Creates the study, or opens it for --resume (refused when the space file changed since). Throws InputError.
OpenedStudy open_or_resume_study(const TuneOptions& options, const SearchSpace& file_space);

// Earlier studies of the same job and space: their trials enter the model (never this study's table), their best
// setting is run once here, and the initial design shrinks by as many successes as they bring.
struct WarmStart {
  std::vector<Observation> observations;
  std::optional<BestSettings> best;
  int successes = 0;
};
WarmStart load_warm_start(const std::vector<std::string>& paths, const SearchSpace& space, const std::string& yaml,
                          const std::vector<std::string>& command, const TuneProgress& progress);

// --- Recover running trials -----------------------------------------------------------------------------------------

// Trials left running by a tuner that died: stops what is provably left of them and marks them interrupted (run
// again, never scored).
void recover_running_trials(Study& study, const SearchSpace& space, const TuneProgress& progress);

// --- What every trial of a session decides by ----------------------------------------------------------------------

// Fixed for the session once the study is open.
struct TuningPlan {
  const TuneOptions& options;
  const SearchSpace& space;  // the study's, --fixed-batch applied
  const Strategy& strategy;
  const WarmStart& warm;
  std::vector<std::string> command;
  bool bayesian = false;
  bool horovod = false;
  bool model_screening = false;  // Bayesian studies with TuneOptions::model_screening
  int budget = 0;           // exploration trials
  int design_skip = 0;      // initial-design points the warm start's scored trials replace
  double timeout_s = 0;     // one trial's wall-clock limit
  int confirm_top = 0;      // best settings re-run at the end
  int confirm_repeats = 0;  // runs each gets on top of its first
  std::string trials_root;  // STUDY.trials
  std::string study_id;     // trial markers start with it
};

// The study as it stands before a trial, counted once for every choice made from it.
struct StudyState {
  std::vector<TrialRecord> history;
  std::vector<Observation> observations;  // the warm start's, then this study's
  int done = 0;                           // finished trials
  int strategy_trials = 0;                // of them chosen by the strategy
  int explored = 0;                       // exploration trials spent: the strategy's, the defaults, the advice,
                                          // the warm best
  bool default_done = false, advice_done = false, warm_best_done = false, noise_done = false;
  // The analyzer's advice on the defaults' trace (study meta "advice", written once the defaults ran).
  std::optional<AdvisedSetting> advice;
  bool advice_read = false;               // the defaults' trace was asked (meta "advice" exists), whatever it said
  int predicted_done = 0;                 // the replay model's picks run
  // The replay model's pick from the best trial's trace (screen_next_trial), when it has one.
  std::optional<ScreenedSetting> screened;
  std::vector<double> walls;              // s, each finished trial's wall time
  std::vector<BestSettings> ranked;       // distinct successful settings, best mean first
  std::optional<std::string> stopped_by;  // the stop rule that ended exploration
};
StudyState read_study_state(const Study& study, const TuningPlan& plan);

// --- Ask the analyzer ----------------------------------------------------------------------------------------------

// Once the job's defaults ran (Bayesian studies): analyzes their trace and keeps its advice in the study (meta
// "advice", so a resumed study runs the same advice) and in `state`. Does nothing when already asked.
void ask_for_advice(Study& study, const TuningPlan& plan, StudyState& state, const TuneProgress& progress);

// --- Screen with the replay model ----------------------------------------------------------------------------------

// Once the defaults and the advice ran (studies with TuningPlan::model_screening): screens the space with the
// replay model of the best trial's trace and keeps its pick in `state`. When the model replays the trace but
// predicts nothing untried at least kMinPredictedGain better, or its picks reached kMaxPredictedTrials, exploration
// stops (meta "stop_rule"): the strategy's search is what the model replaces. Where the model cannot replay the
// trace, nothing changes and the strategy goes on.
inline constexpr double kMinPredictedGain = 0.03;
inline constexpr int kMaxPredictedTrials = 5;
void screen_next_trial(Study& study, const TuningPlan& plan, StudyState& state, const TuneProgress& progress);

// --- Choose the next trial -----------------------------------------------------------------------------------------

struct NextTrial {
  TrialRecord record;                    // kind, values and cube point; not yet in the study
  std::optional<Suggestion> suggestion;  // the strategy's, with the model that chose it
  TrialCounter counter;
  std::string batch_probe;  // what the memory-limit probe changed, or ""
};
// The next trial, or nullopt when the study is done (exploration over and every confirmation run made). Records a
// stop rule that fires in the study.
std::optional<NextTrial> choose_next_trial(Study& study, const TuningPlan& plan, const StudyState& state,
                                           const TuneProgress& progress);

// --- Launch and watch it --------------------------------------------------------------------------------------------

// How a trial ran, and what scoring it needs.
struct TrialRun {
  TrialOutcome outcome;
  std::optional<double> partial_score;  // the early-stopped trial's throughput (or step time) when it was stopped
  std::string run_dir;                  // its trace
  std::string log_path;                 // its output
  double batch_size = 1;                // samples per rank per step at its values
};
// Adds the trial to the study (status running, with the model that chose it), writes its directory, runs the job
// there under the tracer, reporting and early-stopping from its live trace, until it ends or `stop` is set.
TrialRun launch_and_watch(Study& study, const TuningPlan& plan, const StudyState& state, NextTrial& next,
                          const TuneProgress& progress, const std::atomic<bool>& stop);

// --- Record it -----------------------------------------------------------------------------------------------------

// The trial's status, score and reason from how it ran, written to the study; the study's first score fixes where
// its scores come from.
void record_trial(Study& study, const TuningPlan& plan, TrialRecord& record, const TrialRun& run,
                  const TuneProgress& progress);

}  // namespace collscope::autotuner::detail
