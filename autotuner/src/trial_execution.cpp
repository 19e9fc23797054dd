// One trial: into the study, its directory, the job under the tracer (watched: progress and early stopping from its
// live trace), then its status and score into the study.
#include <collscope/autotuner/scoring.hpp>
#include <collscope/autotuner/search_rules.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tuner_support.hpp"
#include "tuning_steps.hpp"

namespace collscope::autotuner::detail {
namespace fs = std::filesystem;

namespace {
std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The line of a failed job's output that says why: "out of memory" first, else the last non-empty line. Streams the
// log: a job that wrote gigabytes costs one line of memory.
std::string failure_line(const std::string& log_path) {
  std::string last, oom;
  for_each_output_line(log_path, [&](std::string_view line) {
    // Blank lines and rulers ("-----" around Open MPI's messages) say nothing.
    if (line.find_first_not_of(" \t\r-=*") == std::string_view::npos) return;
    if (oom.empty() && line.find("out of memory") != std::string_view::npos) oom = line.substr(0, 400);
    last = line.substr(0, 400);
  });
  std::string s = oom.empty() ? last : oom;
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

double resolve_batch_size(const SearchSpace& space, const Assignment& values) {
  const std::string& b = space.objective().batch_size;
  const int k = space.knob_index(b);
  try {
    return std::stod(k >= 0 ? values[static_cast<std::size_t>(k)] : b);
  } catch (const std::exception&) {
    return 1.0;
  }
}

// One line of a trial's live state: steps done and throughput so far from its trace, else the throughput it printed.
std::string live_state(const Objective& objective, const std::optional<StepProgress>& steps,
                       const std::string& log_path) {
  if (steps && objective.kind != ObjectiveKind::Regex) {
    const std::string rate = objective.kind == ObjectiveKind::StepTime ? format_score(steps->mean_step_ms, "ms/step")
                             : objective.batch_size_given
                                 ? format_score(steps->throughput, "samples/s")
                                 : format_score(steps->throughput / std::max(1, steps->ranks), "steps/s");
    return fmt::format("{} steps measured, {} so far ({} steps)", steps->measured_steps, rate,
                       steps->source == "nvtx" ? "NVTX" : "inferred");
  }
  if (const auto printed = printed_throughput(log_path))
    return fmt::format("the job printed {} ({})", format_score(printed->value, printed->unit), printed->pattern);
  return "no steps or printed throughput yet";
}

// Into the study as running, with the GP state that chose it (from the observations in `state`).
void add_to_study(Study& study, const StudyState& state, NextTrial& next) {
  TrialRecord& record = next.record;
  record.started_unix_ms = unix_ms();
  study.add_trial(record);
  const auto& suggestion = next.suggestion;
  if (!suggestion || !suggestion->model) return;
  nlohmann::json m;
  m["length_scales"] = suggestion->model->length_scales;
  m["signal_variance"] = suggestion->model->signal_variance;
  m["noise_variance"] = suggestion->model->noise_variance;
  m["log_likelihood"] = suggestion->log_likelihood;
  m["log_expected_improvement"] = suggestion->log_acquisition;
  m["observations"] = state.observations.size();
  study.save_model(record.id, m.dump());
}

// The trial's directory, fresh, and the job's command line, environment and config files for it. Knob values reach
// the job literally: as argv elements, environment values or file contents.
TrialLaunch prepare_launch(const TuningPlan& plan, TrialRecord& record, const std::string& run_dir,
                           const std::string& log_path) {
  std::error_code ec;
  const SearchSpace& space = plan.space;
  auto variables = space.named(record.values);
  variables["trial_dir"] = record.dir;
  std::vector<std::string> job;
  for (const auto& arg : plan.command) job.push_back(substitute(arg, variables));
  TrialLaunch launch;
  launch.argv = traced_command(plan.options.collscope_exe, run_dir, job);
  launch.log_path = log_path;
  launch.timeout_s = plan.timeout_s;
  launch.marker = fmt::format("{}-{}", plan.study_id, record.id);
  for (std::size_t i = 0; i < space.knobs().size(); ++i)
    if (space.knobs()[i].env) launch.env.emplace_back(*space.knobs()[i].env, record.values[i]);
  for (const auto& cfg : space.config_files()) {
    fs::path p = substitute(cfg.path, variables);
    if (p.is_relative()) p = fs::path(record.dir) / p;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream(p, std::ios::trunc) << substitute(cfg.contents, variables);
  }
  nlohmann::json cmd;
  cmd["argv"] = launch.argv;
  cmd["env"] = launch.env;
  std::ofstream(fs::path(record.dir) / "command.json") << cmd.dump(2) << "\n";
  return launch;
}

// The best oriented score so far (larger is better), which early stopping compares against.
std::optional<double> best_oriented(const StudyState& state) {
  std::optional<double> best;
  for (const auto& o : state.observations)
    if (o.value) best = std::max(best.value_or(*o.value), *o.value);
  return best;
}

// Watches a running trial from its live trace: a progress line the first time after 3 s and every 10 s after,
// and, where early stopping applies, stops a trial whose throughput after 3 measured steps is hopeless.
class TrialWatch {
 public:
  TrialWatch(const TuningPlan& plan, const Study& study, const StudyState& state, const TrialRecord& record,
             TrialRun& run, const TuneProgress& progress)
      : plan_(plan),
        record_(record),
        run_(run),
        progress_(progress),
        source_(score_source_from_name(study.meta("objective_source").value_or("any"))),
        unit_(score_unit(study, plan.space.objective())),
        best_(best_oriented(state)) {
    const Objective& objective = plan.space.objective();
    may_stop_early_ = plan.space.trial().early_stopping && !plan.horovod && objective.kind != ObjectiveKind::Regex &&
                      source_ != ScoreSource::Printed && best_ && record.kind != kKindConfirm &&
                      record.kind != kKindNoiseRepeat;
  }

  // The TrialMonitor: a reason to stop the trial, or nullopt to let it run.
  std::optional<std::string> operator()() {
    const auto now = std::chrono::steady_clock::now();
    const bool print_due = progress_ && now >= next_print_;
    if (!print_due && (!may_stop_early_ || now - last_read_ < std::chrono::seconds(2))) return std::nullopt;
    last_read_ = now;
    const Objective& objective = plan_.space.objective();
    const auto p =
        source_ == ScoreSource::Printed || objective.kind == ObjectiveKind::Regex
            ? std::nullopt
            : read_step_progress(run_.run_dir, objective.step_range, objective.warmup_steps, run_.batch_size);
    if (print_due) {
      next_print_ = now + std::chrono::seconds(10);
      tell(progress_, TrialRunning{record_.id, std::chrono::duration<double>(now - start_).count(),
                                   live_state(objective, p, run_.log_path)});
    }
    if (!may_stop_early_ || !p || p->measured_steps < 3) return std::nullopt;
    return hopeless(*p);
  }

 private:
  std::optional<std::string> hopeless(const StepProgress& p) {
    if (p.source != "nvtx" && p.confidence < kMinInferredStepConfidence && source_ != ScoreSource::Steps)
      return std::nullopt;
    const Objective& objective = plan_.space.objective();
    const double value = objective.kind == ObjectiveKind::StepTime ? p.mean_step_ms : p.throughput;
    const double o = oriented(objective, value);
    const double f = plan_.space.trial().early_stop_fraction;
    // Maximising: value < f × best; minimising (step time): value > best / f.
    const bool far = objective.maximize ? o < f * *best_ : -o > -*best_ / f;
    if (!far) return std::nullopt;
    run_.partial_score = value;
    return fmt::format("early-stopped after {} steps: {} is far from the best {}", p.measured_steps,
                       format_score(value, unit_), format_score(std::abs(*best_), unit_));
  }

  const TuningPlan& plan_;
  const TrialRecord& record_;
  TrialRun& run_;
  const TuneProgress& progress_;
  const ScoreSource source_;
  const std::string unit_;
  const std::optional<double> best_;
  bool may_stop_early_ = false;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_read_ = start_ - std::chrono::seconds(10);
  std::chrono::steady_clock::time_point next_print_ = start_ + std::chrono::seconds(3);
};

// The score of a trial that ran to its end with exit code 0.
void score_finished_trial(Study& study, const TuningPlan& plan, TrialRecord& record, const TrialRun& run,
                          const TuneProgress& progress) {
  if (plan.horovod) {
    record.score = bytes_per_microsecond(run.run_dir);
    record.status = record.score ? TrialStatus::Ok : TrialStatus::Failed;
    record.reason = record.score ? "" : "objective: no float-sum allreduces in the trace (Horovod's score)";
    record.source = "bytes all-reduced per microsecond (HOROVOD_AUTOTUNE's score)";
    return;
  }
  const Objective& objective = plan.space.objective();
  const ScoreSource source = score_source_from_name(study.meta("objective_source").value_or("any"));
  const Score score = score_trial(objective, run.batch_size, run.run_dir, run.log_path, source);
  record.score = score.value;
  record.status = score.value ? TrialStatus::Ok : TrialStatus::Failed;
  record.reason = score.problem;
  record.source = score.source_text;
  record.step_s = score.step_s;
  if (score.value && source == ScoreSource::Any) {
    // The study's scores come from this source from now on: scores of different sources do not compare.
    study.set_meta("objective_source", std::string(score_source_name(score.source)));
    study.set_meta("objective_unit", score.unit.empty() ? objective.unit : score.unit);
    tell(progress, ObjectiveChosen{score_unit(study, objective), score.source_text});
  }
}
}  // namespace

TrialRun launch_and_watch(Study& study, const TuningPlan& plan, const StudyState& state, NextTrial& next,
                          const TuneProgress& progress, const std::atomic<bool>& stop) {
  add_to_study(study, state, next);
  TrialRecord& record = next.record;
  std::error_code ec;
  const fs::path trial_dir = fs::path(plan.trials_root) / fmt::format("trial-{:04}", record.id);
  fs::remove_all(trial_dir, ec);
  fs::create_directories(trial_dir, ec);
  record.dir = fs::absolute(trial_dir).string();
  TrialRun run;
  run.run_dir = (fs::path(record.dir) / "trace").string();
  run.log_path = (fs::path(record.dir) / "output.log").string();
  run.batch_size = resolve_batch_size(plan.space, record.values);
  tell(progress, TrialStarted{next.counter, record.kind, plan.space.describe(record.values), next.batch_probe});
  const TrialLaunch launch = prepare_launch(plan, record, run.run_dir, run.log_path);
  TrialWatch watch(plan, study, state, record, run, progress);
  run.outcome = run_trial(
      launch, std::ref(watch),
      [&](const TrialProcesses& processes) {
        study.save_trial_processes(record.id, processes);
        record.pgid = processes.pgid;
        study.update_trial(record);
      },
      &stop);
  return run;
}

void record_trial(Study& study, const TuningPlan& plan, TrialRecord& record, const TrialRun& run,
                  const TuneProgress& progress) {
  const TrialOutcome& outcome = run.outcome;
  record.wall_s = outcome.wall_s;
  record.exit_code = outcome.exit_code;
  record.pgid = 0;
  if (outcome.interrupted) {
    record.status = TrialStatus::Interrupted;
    record.reason = outcome.stop_reason;
  } else if (outcome.timed_out) {
    record.status = TrialStatus::Timeout;
    const std::string hang = hang_summary(run.run_dir);
    record.reason = outcome.stop_reason + (hang.empty() ? "" : "; " + hang);
  } else if (outcome.stopped) {
    record.status = TrialStatus::Stopped;
    record.reason = outcome.stop_reason;
    record.score = run.partial_score && std::isfinite(*run.partial_score) ? run.partial_score : std::nullopt;
  } else if (outcome.exit_code != 0) {
    record.status = TrialStatus::Failed;
    const std::string why = failure_line(run.log_path);
    record.reason = why.empty() ? fmt::format("exit code {}", outcome.exit_code)
                                : fmt::format("exit code {}: {}", outcome.exit_code, why);
  } else {
    score_finished_trial(study, plan, record, run, progress);
  }
  study.update_trial(record);
}

}  // namespace collscope::autotuner::detail
