#pragma once
// A tuning study: suggest a point, run the job there under the tracer, score it, record it, repeat;
// then re-run the best candidates to confirm them against noise. Resumable from the study file.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/autotuner/study.hpp>

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
  bool progress = true;                 // progress lines / bar on stderr
};

// The settings with the best mean score over their successful runs.
struct BestSettings {
  Assignment values;
  double mean_score = 0;  // objective units
  int runs = 0;
  std::vector<int> trial_ids;
};

std::optional<BestSettings> best_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials);
// Oriented observations (larger is better) of the finished trials, for the strategies.
std::vector<Observation> observations(const SearchSpace& space, const std::vector<TrialRecord>& trials);

// Runs (or resumes) a study; returns the exit code: 0 when a best setting was found, 1 when every trial failed,
// 130 when interrupted. Throws InputError on bad input.
int tune(const TuneOptions& options);

// The study's trials, checked against its space: a trial whose values or cube point do not have one entry per knob
// (a corrupt or hand-edited study) is one line naming the study and the trial (InputError).
std::vector<TrialRecord> checked_trials(const Study& study, const SearchSpace& space);
// The space the study was started with (meta.space).
SearchSpace stored_space(const Study& study);

// `collscope tune show STUDY`: the trial table and the best settings.
void print_study(const std::string& study_path, std::ostream& out);
// Writes `export NAME=VALUE` lines (env knobs; others as comments), shell-quoted.
void write_export_env(const SearchSpace& space, const BestSettings& best, const std::string& path);
// Writes the space's *.rules config file rendered with the best settings: the rules file collscope's NCCL tuner
// plugin applies (COLLSCOPE_NCCL_TUNER_RULES). Throws InputError when the space has none or it renders invalid.
void write_nccl_rules(const SearchSpace& space, const BestSettings& best, const std::string& study_path,
                      const std::string& path);

}  // namespace collscope::autotuner
