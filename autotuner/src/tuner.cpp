// The tuning loop: open or resume the study, recover its running trials, then choose -> launch and watch ->
// record each trial until the study is done; then the best settings, the report and the exports. The steps are in
// tuning_steps.hpp; what happens is told through TuneOptions::progress (the tuner prints nothing).
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>

#include "tuner_support.hpp"
#include "tuning_steps.hpp"

namespace collscope::autotuner {
namespace fs = std::filesystem;
using namespace detail;

namespace {
// The trial-finished event: the trial as recorded, the best so far and the time the rest of the planned trials will
// take at this session's pace.
TrialFinished finished_event(const Study& study, const SearchSpace& space, const NextTrial& next,
                             const std::chrono::steady_clock::time_point session_start, int session_trials) {
  const auto best = best_settings(space, study.trials());
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start).count();
  const int left = std::max(0, next.counter.planned - next.counter.number);
  TrialFinished event{next.counter, next.record, score_unit(study, space.objective()), std::nullopt,
                      elapsed / session_trials * left};
  if (best) event.best_mean = best->mean_score;
  return event;
}

// What the study found, for the caller to say; the report and the exports written where asked.
TuneResult finish(Study& study, const TuneOptions& options, const SearchSpace& space, const std::string& trials_root,
                  bool interrupted) {
  const auto all = study.trials();
  const auto best = best_settings(space, all);
  TuneResult result;
  result.notes = study_notes(study, space, all);
  study.close_for_readers();
  if (!options.report_dir.empty())
    write_report(space, all, options.report_dir, fs::path(options.study_path).filename().string(), result.notes);
  result.study_path = options.study_path;
  if (!options.report_dir.empty()) result.report_path = (fs::path(options.report_dir) / "index.html").string();
  result.stop_rule = study.meta("stop_rule");
  if (result.stop_rule && result.stop_rule->empty()) result.stop_rule.reset();
  result.unit = score_unit(study, space.objective());
  result.trial_count = all.size();
  result.trials_dir = trials_root;
  if (interrupted) {
    result.outcome = TuneOutcome::Interrupted;
    return result;
  }
  if (!best) {
    result.outcome = TuneOutcome::NoTrialSucceeded;
    return result;
  }
  if (!options.export_env_path.empty()) write_export_env(space, *best, options.export_env_path);
  if (!options.export_nccl_rules_path.empty())
    write_nccl_rules(space, *best, options.study_path, options.export_nccl_rules_path);
  result.outcome = TuneOutcome::Found;
  result.best = best;
  result.best_settings_text = space.describe(best->values);
  return result;
}
}  // namespace

TuneResult tune(const TuneOptions& options, const std::atomic<bool>& stop) {
  const SearchSpace file_space = SearchSpace::load(options.space_path);
  std::error_code ec;
  if (const auto parent = fs::path(options.study_path).parent_path(); !parent.empty())
    fs::create_directories(parent, ec);
  // One tuner per study: a second one would re-run, kill or double-count the first one's trials.
  const StudyLock lock(options.study_path);
  OpenedStudy opened = open_or_resume_study(options, file_space);
  Study& study = opened.study;
  const SearchSpace space = effective_space(study, file_space);
  const StrategyKind kind = strategy_from_name(opened.strategy_text);
  const bool bayesian = kind == StrategyKind::Bayesian, horovod = kind == StrategyKind::Horovod;
  if (horovod) {
    opened.budget = kHorovodWarmupSamples + kHorovodMaxSamples;  // Horovod's own sample budget
    study.set_meta("objective_unit", "bytes/us");
    study.set_meta("objective_source", "horovod");
  }
  const Strategy strategy(space, kind, opened.seed, opened.budget, options.grid_levels);
  const std::string trials_root = fs::path(options.study_path).string() + ".trials";
  fs::create_directories(trials_root, ec);
  if (options.collscope_exe.empty() || !fs::exists(options.collscope_exe, ec))
    throw InputError(
        fmt::format("{}: the collscope executable to run trials with does not exist", options.collscope_exe));
  const WarmStart warm =
      load_warm_start(options.warm_start, space, file_space.yaml_text(), opened.command, options.progress);
  const TuningPlan plan{.options = options,
                        .space = space,
                        .strategy = strategy,
                        .warm = warm,
                        .command = opened.command,
                        .bayesian = bayesian,
                        .horovod = horovod,
                        .model_screening = bayesian && opened.model_screening,
                        .budget = opened.budget,
                        .design_skip = bayesian ? std::min(strategy.initial_design_size(), warm.successes) : 0,
                        .timeout_s = options.trial_timeout_s.value_or(space.trial().timeout_s),
                        .confirm_top = horovod ? 0 : options.confirm_top.value_or(space.trial().confirm_top),
                        .confirm_repeats = space.trial().confirm_repeats,
                        .trials_root = trials_root,
                        .study_id = study.id()};
  recover_running_trials(study, space, options.progress);

  const auto session_start = std::chrono::steady_clock::now();
  int session_trials = 0;
  bool interrupted = false;
  // Asked to stop between trials: nothing runs, nothing to kill.
  while (!(interrupted = stop.load())) {
    StudyState state = read_study_state(study, plan);
    ask_for_advice(study, plan, state, options.progress);
    screen_next_trial(study, plan, state, options.progress);
    auto next = choose_next_trial(study, plan, state, options.progress);
    if (!next) break;
    const TrialRun run = launch_and_watch(study, plan, state, *next, options.progress, stop);
    record_trial(study, plan, next->record, run, options.progress);
    ++session_trials;
    if (options.progress) options.progress(finished_event(study, space, *next, session_start, session_trials));
    if (run.outcome.interrupted) {
      interrupted = true;
      break;
    }
  }
  return finish(study, options, space, trials_root, interrupted);
}

}  // namespace collscope::autotuner
