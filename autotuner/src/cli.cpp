// CLI registration: options into TuneOptions, signals into tune()'s stop flag, its outcome into an exit code; the
// work runs after parsing (see cli/src/main.cpp).
#include <collscope/autotuner/cli.hpp>
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/cluster/launcher_process.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <variant>

#include "tuner_support.hpp"

namespace collscope::autotuner {
namespace {
// The first SIGINT/SIGTERM asks the study to stop: the running trial is killed and recorded as interrupted, the study
// stays resumable. Set from the handler, read by tune().
std::atomic<bool> g_stop_requested{false};
extern "C" void request_stop(int) { g_stop_requested.store(true); }

// SIGINT and SIGTERM set g_stop_requested while it lives; the previous handlers come back however tune() ends.
class StopOnSignals {
 public:
  StopOnSignals() {
    g_stop_requested.store(false);
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopOnSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long>(std::lround(s));
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string counter_text(const TrialCounter& c) { return fmt::format("trial {}/{}, {}", c.number, c.planned, c.phase); }

// What a trial ended with: its score, else its status and why.
std::string trial_result_text(const TrialRecord& t, const std::string& unit) {
  if (t.score && t.status == TrialStatus::Ok) return detail::format_score(*t.score, unit);
  return std::string(trial_status_name(t.status)) + (t.reason.empty() ? "" : ": " + t.reason);
}

// The progress lines on stderr, one per event of the study (TuneOptions::progress).
struct ProgressPrinter {
  void operator()(const WarmStartSkipped& e) const {
    fmt::print(stderr, "collscope tune: --warm-start {}: that study ran another command; not used\n", e.path);
  }
  void operator()(const WarmStartLoaded& e) const {
    fmt::print(stderr, "collscope tune: warm start: {} earlier trial(s), {} scored{}\n", e.trials, e.scored,
               e.best_runs_first ? "; their best is run again first" : "");
  }
  void operator()(const LeftoverNotStopped& e) const {
    fmt::print(stderr, "collscope tune: trial {} was running; nothing of it stopped ({})\n", e.trial, e.why_not);
  }
  void operator()(const AdviceFound& e) const {
    fmt::print(stderr, "collscope tune: the analyzer advises, from the defaults' trace: {}\n", e.origin);
  }
  void operator()(const ModelScreened& e) const {
    fmt::print(stderr, "collscope tune: the replay model of the best trial's trace picks {}\n", e.origin);
  }
  void operator()(const ModelNotUsed& e) const {
    fmt::print(stderr, "collscope tune: the replay model of trial {}'s trace is not used, the strategy goes on: {}\n",
               e.trial, e.why_not);
  }
  void operator()(const ExplorationStopped& e) const { fmt::print(stderr, "collscope tune: stopped exploring: {}\n", e.rule); }
  void operator()(const TrialStarted& e) const {
    fmt::print(stderr, "collscope tune: {} ({}): {}\n", counter_text(e.counter), e.kind, e.settings);
    if (!e.batch_probe.empty()) fmt::print(stderr, "collscope tune:   memory limit probe: {}\n", e.batch_probe);
  }
  void operator()(const TrialRunning& e) const {
    fmt::print(stderr, "collscope tune:   trial {} running {:.0f} s: {}\n", e.trial, e.seconds, e.state);
  }
  void operator()(const ObjectiveChosen& e) const {
    fmt::print(stderr, "collscope tune: objective: {} from {}\n", e.unit, e.source);
  }
  // A bar of the planned trials done, the trial's result, the best so far and the time left.
  void operator()(const TrialFinished& e) const {
    constexpr int kBarWidth = 20;
    const int filled = std::min(kBarWidth, e.counter.planned > 0 ? kBarWidth * e.counter.number / e.counter.planned : kBarWidth);
    fmt::print(stderr, "collscope tune: [{}{}] {}: {} | best {} | ETA {}\n", std::string(filled, '#'),
               std::string(kBarWidth - filled, '.'), counter_text(e.counter), trial_result_text(e.record, e.unit),
               e.best_mean ? detail::format_score(*e.best_mean, e.unit) : "-", format_eta(e.eta_s));
  }
};

// What the study ended with: the best settings and notes on stdout, or why there are none on stderr.
void print_result(const TuneResult& result) {
  switch (result.outcome) {
    case TuneOutcome::Interrupted:
      fmt::print(stderr, "collscope tune: interrupted; continue with --resume --study {}\n", result.study_path);
      return;
    case TuneOutcome::NoTrialSucceeded:
      fmt::print(stderr, "collscope tune: no trial succeeded ({} trials); see {}\n", result.trial_count, result.trials_dir);
      for (const auto& note : result.notes) fmt::print(stderr, "collscope tune: {}\n", note);
      return;
    case TuneOutcome::Found:
      fmt::print("best: {} (mean of {} run(s): {})\n", result.best_settings_text, result.best->runs,
                 detail::format_score(result.best->mean_score, result.unit));
      for (const auto& note : result.notes) fmt::print("{}\n", note);
      if (!result.report_path.empty()) fmt::print("report: {}\n", result.report_path);
      fmt::print("study: {} (collscope tune show {})\n", result.study_path, result.study_path);
      return;
  }
}

// The process's exit code for a study's outcome: 0 found, 1 every trial failed, 130 interrupted (128 + SIGINT).
int exit_code(TuneOutcome outcome) {
  switch (outcome) {
    case TuneOutcome::Found: return 0;
    case TuneOutcome::NoTrialSucceeded: return 1;
    case TuneOutcome::Interrupted: return 130;
  }
  return 1;
}
}  // namespace

void add_cli_commands(CLI::App& app, std::function<int()>& action) {
  auto* tune_cmd = app.add_subcommand("tune", "Find the knob settings that make a job fastest, by running it under the tracer");
  auto options = std::make_shared<TuneOptions>();
  auto strategy = std::make_shared<std::string>("bo");
  auto timeout = std::make_shared<double>(0);
  options->trials = -1;
  tune_cmd->add_option("SPACE", options->space_path, "Search space file (YAML)");
  tune_cmd->add_option("--study", options->study_path, "Study file (SQLite), created or resumed")->capture_default_str()->type_name("FILE");
  tune_cmd->add_option("--trials", options->trials, "Exploration trials (default 20; confirmation runs come on top)")->type_name("N");
  tune_cmd->add_option("--strategy", *strategy, "bo (Bayesian optimisation), random, grid, or horovod (HOROVOD_AUTOTUNE's method, for comparison)")->capture_default_str()->type_name("NAME");
  tune_cmd->add_option("--seed", options->seed, "Seed: same seed, same trials")->capture_default_str()->type_name("N");
  tune_cmd->add_option("--trial-timeout", *timeout, "Wall-clock limit of one trial in seconds (default: the space's trial.timeout_s)")
      ->type_name("SECONDS");
  tune_cmd->add_flag("--resume", options->resume, "Continue the study in --study (after the tuner was killed, or to add trials)");
  tune_cmd->add_option("--export-env", options->export_env_path, "Write the best settings as `export K=V` lines to FILE")->type_name("FILE");
  tune_cmd->add_option("--export-nccl-rules", options->export_nccl_rules_path,
                       "Write the space's *.rules file with the best settings to FILE: per-size NCCL choices for "
                       "collscope's NCCL tuner plugin (COLLSCOPE_NCCL_TUNER_RULES)")
      ->type_name("FILE");
  tune_cmd->add_option("--report", options->report_dir, "Write an HTML report with SVG charts into DIR")->type_name("DIR");
  tune_cmd->add_option("--grid-levels", options->grid_levels, "grid: levels per numeric knob (default: from --trials)")
      ->type_name("N")->check(CLI::NonNegativeNumber);
  tune_cmd->add_option("--confirm-top", options->confirm_top, "Best candidates re-run at the end (default: the space's trial.confirm_top)")
      ->type_name("N")->check(CLI::NonNegativeNumber);
  options->progress = [](const TuneEvent& event) { std::visit(ProgressPrinter{}, event); };
  tune_cmd->add_flag_callback("--no-progress", [options] { options->progress = nullptr; }, "No progress lines on stderr");
  tune_cmd->add_option("COMMAND", options->command, "The job, after --; {knob} in an argument is replaced by its value");
  auto job_steps = std::make_shared<std::int64_t>(0);
  auto time_budget = std::make_shared<double>(0);
  tune_cmd->add_option("--job-steps", *job_steps,
                       "Steps the real job will run: stop exploring when the expected gain cannot pay back a trial")
      ->type_name("N");
  tune_cmd->add_option("--time-budget", *time_budget, "Tuning time in seconds, confirmation runs included: exploration stops in time for them")
      ->type_name("SECONDS");
  tune_cmd->add_flag("--fixed-batch", options->fixed_batch,
                     "Keep the objective's batch_size knob at its default (a different batch changes the optimisation)");
  tune_cmd->add_flag_callback("--no-model-screening", [options] { options->model_screening = false; },
                              "Do not screen settings with the replay model of the best trial's trace (collscope "
                              "predict): the strategy alone chooses after the analyzer's advice");
  tune_cmd->add_option("--warm-start", options->warm_start,
                       "Earlier study of the same job and space (repeatable): its trials seed the model")
      ->type_name("STUDY");
  tune_cmd->footer(
      "Example: collscope tune samples/fusion_trainer/space.yaml --trials 15 --export-env best.env -- \\\n"
      "           mpirun -np 2 ./fusion_trainer --batch-size {batch_size}\n"
      "Each trial runs `collscope trace` on the command (no shell) in STUDY.trials/trial-NNNN/.");

  auto* show_cmd = tune_cmd->add_subcommand("show", "Print a study's trials and its best settings");
  auto show_study = std::make_shared<std::string>();
  auto show_report = std::make_shared<std::string>();
  show_cmd->add_option("STUDY", *show_study, "Study file (SQLite)")->required();
  show_cmd->footer("Example: collscope tune show collscope-study.sqlite --report tune-report");
  show_cmd->add_option("--report", *show_report, "Also write the HTML/SVG report into DIR")->type_name("DIR");
  auto show_rules = std::make_shared<std::string>();
  show_cmd->add_option("--export-nccl-rules", *show_rules, "Also write the best settings as NCCL tuner rules to FILE")->type_name("FILE");
  show_cmd->callback([&action, show_study, show_report, show_rules] {
    action = [show_study, show_report, show_rules] {
      naming_input(*show_study, "reading the study", [&] {
        print_study(*show_study, std::cout);
        if (!show_rules->empty()) {
          const Study study = Study::open(*show_study);
          const SearchSpace space = stored_space(study);
          const auto best = best_settings(space, checked_trials(study, space));
          if (!best) throw InputError(fmt::format("{}: no trial succeeded: no rules to export", *show_study));
          write_nccl_rules(space, *best, *show_study, *show_rules);
        }
        if (!show_report->empty()) {
          const Study study = Study::open(*show_study);
          const SearchSpace space = stored_space(study);
          const auto trials = checked_trials(study, space);
          write_report(space, trials, *show_report, std::filesystem::path(*show_study).filename().string(),
                       study_notes(study, space, trials));
        }
      });
      return 0;
    };
  });

  tune_cmd->callback([&action, tune_cmd, show_cmd, options, strategy, timeout, job_steps, time_budget] {
    if (show_cmd->parsed()) return;
    action = [options, strategy, timeout, tune_cmd, job_steps, time_budget] {
      // Under a launcher, one tuner: two would run every trial twice and write one study file at the same time.
      if (!cluster::alone_in_process_zero("tune")) return 0;
      if (tune_cmd->count("--job-steps")) {
        if (*job_steps < 1) throw InputError("--job-steps: must be at least 1");
        options->job_steps = *job_steps;
      }
      if (tune_cmd->count("--time-budget")) {
        if (!(*time_budget > 0)) throw InputError("--time-budget: must be > 0 seconds");
        options->time_budget_s = *time_budget;
      }
      if (options->space_path.empty())
        throw InputError("tune: no search space given (usage: collscope tune SPACE.yaml [options] -- CMD...)");
      options->strategy = strategy_from_name(*strategy);
      if (tune_cmd->count("--trial-timeout")) {
        if (!(*timeout > 0)) throw InputError("--trial-timeout: must be > 0 seconds");
        options->trial_timeout_s = *timeout;
      }
      if (tune_cmd->count("--trials") && options->trials < 1) throw InputError("--trials: must be at least 1");
      std::error_code ec;
      options->collscope_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
      const StopOnSignals stop_on_signals;
      return naming_input(options->space_path, "tuning with this search space",
                          [&] {
                            const TuneResult result = tune(*options, g_stop_requested);
                            print_result(result);
                            return exit_code(result.outcome);
                          });
    };
  });
}

}  // namespace collscope::autotuner
