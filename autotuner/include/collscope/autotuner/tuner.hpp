#pragma once
// A tuning study: suggest a point, run the job there under the tracer, score it, record it, repeat;
// then re-run the best candidates to confirm them against noise. Resumable from the study file.
#include <collscope/autotuner/progress.hpp>
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/autotuner/study.hpp>

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace collscope::autotuner {

struct TuneOptions {
  std::string space_path;
  std::string study_path = "collscope-study.sqlite";
  int trials = 20;                      // exploration trials (confirmation runs come on top)
  StrategyKind strategy = StrategyKind::Bayesian;
  std::uint64_t seed = 0;
  std::optional<double> trial_timeout_s;  // overrides the space's trial.timeout_s
  bool resume = false;
  std::string export_env_path;          // write the best as `export K=V` lines
  std::string export_nccl_rules_path;   // write the best as NCCL tuner plugin rules (nccl_rules_export.cpp)
  std::string report_dir;               // HTML + SVG report
  std::vector<std::string> command;     // the job, with {knob} placeholders
  std::string collscope_exe;            // runs `trace`; the running executable from the CLI
  int grid_levels = 0;                  // grid: levels per numeric knob (0: from --trials)
  std::optional<int> confirm_top;       // overrides trial.confirm_top
  TuneProgress progress;                // told of each step (the CLI prints it); empty: nobody is
  std::optional<std::int64_t> job_steps;  // the job's real length in steps: stop when a gain cannot pay back a trial
  std::optional<double> time_budget_s;  // stop exploring after this much tuning time (confirmation still runs)
  bool fixed_batch = false;             // keep the objective's batch_size knob at its default
  // Bayesian studies: after the analyzer's advice, screen the space with the replay model of the best trial's trace
  // and run its best predictions (model_screening.hpp), ending exploration when it predicts nothing better. Kept in
  // the study (meta "model_screening"): --resume goes on as the study began.
  bool model_screening = true;
  std::vector<std::string> warm_start;  // earlier studies of the same job and space: their trials seed the model
};

// The settings with the best mean score over their successful runs.
struct BestSettings {
  Assignment values;
  double mean_score = 0;  // objective units
  int runs = 0;
  std::vector<int> trial_ids;
};

std::optional<BestSettings> best_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials);
// The best setting's mean score (objective units) after each trial in order, as best_settings() gives on the trials
// up to it (nullopt before the first): the one "best" behind a study's header and its convergence curves. O(n log n).
std::vector<std::optional<double>> best_mean_after_each(const SearchSpace& space, const std::vector<TrialRecord>& trials);
// Oriented observations (larger is better) of the finished trials, for the strategies (Horovod's discarded warm-up
// samples left out).
std::vector<Observation> observations(const SearchSpace& space, const std::vector<TrialRecord>& trials);

enum class TuneOutcome {
  Found,             // a best setting was found (and exported where asked)
  NoTrialSucceeded,  // every trial failed: nothing to export
  Interrupted,       // `stop` was set: the running trial was killed and recorded as interrupted (--resume re-runs it)
};

// What a study run ended with. The caller decides what it means to the process (the CLI: exit codes 0, 1, 130).
struct TuneResult {
  TuneOutcome outcome = TuneOutcome::NoTrialSucceeded;
  std::optional<BestSettings> best;      // absent unless Found
  std::string study_path;
  std::string report_path;               // the report's index.html; empty without --report
  std::optional<std::string> stop_rule;  // the rule that ended exploration early, when one did
  // For the caller to say what the study found, in the study's words:
  std::string best_settings_text;        // the best values for people (SearchSpace::describe); empty unless Found
  std::string unit;                      // the study's score unit
  std::vector<std::string> notes;        // study_notes(): the objective, the noise, the stop rule, the batch size
  std::size_t trial_count = 0;           // trials in the study
  std::string trials_dir;                // STUDY.trials: each trial's directory
};

// Runs (or resumes) a study until it is done or `stop` becomes true; `stop` may be set from a signal handler (the
// tuner installs none: the CLI owns signal handling). Throws InputError on bad input.
TuneResult tune(const TuneOptions& options, const std::atomic<bool>& stop);

// The study's trials, checked against its space: a trial whose values or cube point do not have one entry per knob
// (a corrupt or hand-edited study) is one line naming the study and the trial (InputError).
std::vector<TrialRecord> checked_trials(const Study& study, const SearchSpace& space);
// The space the study was started with (meta.space).
SearchSpace stored_space(const Study& study);

// The space a study runs: the stored space with the study's --fixed-batch applied (meta fixed_batch).
SearchSpace effective_space(const Study& study, SearchSpace space);

// The study's notes for people: where the scores come from, the noise, the rule that stopped it, the batch size.
std::vector<std::string> study_notes(const Study& study, const SearchSpace& space, const std::vector<TrialRecord>& trials);

// `collscope tune show STUDY`: the trial table and the best settings.
void print_study(const std::string& study_path, std::ostream& out);
// Writes `export NAME=VALUE` lines (env knobs; others as comments), shell-quoted.
void write_export_env(const SearchSpace& space, const BestSettings& best, const std::string& path);
// Writes the space's *.rules config file rendered with the best settings: the rules file collscope's NCCL tuner
// plugin applies (COLLSCOPE_NCCL_TUNER_RULES). Throws InputError when the space has none or it renders invalid.
void write_nccl_rules(const SearchSpace& space, const BestSettings& best, const std::string& study_path,
                      const std::string& path);

}  // namespace collscope::autotuner
