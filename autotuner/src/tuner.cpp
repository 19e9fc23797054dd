// The tuning loop: suggest -> run (traced, limited) -> score -> record; confirm the best; report.
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/scoring.hpp>
#include <collscope/autotuner/search_rules.hpp>
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>

#include "tuner_support.hpp"

namespace collscope::autotuner {
namespace fs = std::filesystem;
using namespace detail;

namespace {
std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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

// The study's recorded command (a JSON list of arguments).
std::vector<std::string> stored_command(const Study& study) {
  const std::string text = study.meta("command").value_or("[]");
  try {
    return nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("{}: meta.command is not a JSON list of arguments", study.path()));
  }
}

// A whole number the study's meta records, within [lo, hi]; `fallback` when absent.
template <typename T>
T stored_number(const Study& study, const std::string& key, T fallback, T lo, T hi) {
  const auto text = study.meta(key);
  if (!text) return fallback;
  T v = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size() || v < lo || v > hi)
    throw InputError(fmt::format("{}: meta.{} = '{}' is not a whole number in [{}, {}]", study.path(), key, *text, lo, hi));
  return v;
}

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long>(std::lround(s));
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
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

// Earlier studies of the same job and space: their trials enter the model (never this study's table), their best
// setting is run once here, and the initial design shrinks by as many successes as they bring.
struct WarmStart {
  std::vector<Observation> observations;
  std::optional<BestSettings> best;
  int successes = 0;
};

WarmStart load_warm_start(const std::vector<std::string>& paths, const SearchSpace& space, const std::string& yaml,
                          const std::vector<std::string>& command, bool progress) {
  WarmStart warm;
  std::vector<TrialRecord> all;
  for (std::size_t n = 0; n < paths.size(); ++n) {
    const std::string& path = paths[n];
    const Study earlier = Study::open(path);
    if (earlier.meta("space").value_or("") != yaml)
      throw InputError(fmt::format("{}: --warm-start: that study ran another search space", path));
    if (stored_command(earlier) != command) {
      if (progress) fmt::print(stderr, "collscope tune: --warm-start {}: that study ran another command; not used\n", path);
      continue;
    }
    auto trials = checked_trials(earlier, space);
    for (auto& o : observations(space, trials)) {
      if (o.value) ++warm.successes;
      warm.observations.push_back(std::move(o));
    }
    // Ids from different studies must not collide in best_settings: offset them.
    for (auto& t : trials) t.id += 1'000'000 * static_cast<int>(n + 1);
    all.insert(all.end(), trials.begin(), trials.end());
  }
  warm.best = best_settings(space, all);
  if (progress && !paths.empty())
    fmt::print(stderr, "collscope tune: warm start: {} earlier trial(s), {} scored{}\n", warm.observations.size(),
               warm.successes, warm.best ? "; their best is run again first" : "");
  return warm;
}

// One line of a trial's live state: steps done and throughput so far from its trace, else the throughput it printed.
std::string live_state(const Objective& objective, const std::optional<StepProgress>& steps, const std::string& log_path,
                       const std::string& unit) {
  if (steps && objective.kind != ObjectiveKind::Regex) {
    const std::string rate = objective.kind == ObjectiveKind::StepTime ? format_score(steps->mean_step_ms, "ms/step")
                             : objective.batch_size_given ? format_score(steps->throughput, "samples/s")
                                                          : format_score(steps->throughput / std::max(1, steps->ranks), "steps/s");
    return fmt::format("{} steps measured, {} so far ({} steps)", steps->measured_steps, rate,
                       steps->source == "nvtx" ? "NVTX" : "inferred");
  }
  if (const auto printed = printed_throughput(log_path))
    return fmt::format("the job printed {} ({})", format_score(printed->value, printed->unit), printed->pattern);
  (void)unit;
  return "no steps or printed throughput yet";
}

// Mean of the known values; nullopt when none.
std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
}  // namespace

TuneResult tune(const TuneOptions& options, const std::atomic<bool>& stop) {
  const SearchSpace file_space = SearchSpace::load(options.space_path);
  std::error_code ec;
  if (const auto parent = fs::path(options.study_path).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
  // One tuner per study: a second one would re-run, kill or double-count the first one's trials.
  const StudyLock lock(options.study_path);
  const bool existing = fs::exists(options.study_path, ec);
  std::optional<Study> study_holder;
  std::vector<std::string> command = options.command;
  std::string strategy_text = strategy_name(options.strategy);
  std::uint64_t seed = options.seed;
  int budget = options.trials;
  if (options.resume && existing) {
    study_holder.emplace(Study::open(options.study_path, Study::Access::ReadWrite));
    Study& st = *study_holder;
    if (st.meta("space").value_or("") != file_space.yaml_text())
      throw InputError(fmt::format("{}: {} differs from the space this study was started with (start a new --study)",
                                   options.study_path, options.space_path));
    if (command.empty()) command = stored_command(st);
    strategy_text = st.meta("strategy").value_or(strategy_text);
    seed = stored_number<std::uint64_t>(st, "seed", 0, 0, std::numeric_limits<std::uint64_t>::max());
    if (budget <= 0) budget = stored_number<int>(st, "trials", 20, 1, 1'000'000);
    st.set_meta("trials", std::to_string(budget));
  } else {
    if (budget <= 0) budget = 20;
    if (command.empty()) throw InputError("tune: no command given (usage: collscope tune SPACE.yaml [options] -- CMD...)");
    if (options.fixed_batch) (void)file_space.with_knob_fixed(file_space.objective().batch_size);  // refuse early
    study_holder.emplace(Study::create(options.study_path, {{"space", file_space.yaml_text()},
                                                            {"space_path", options.space_path},
                                                            {"command", nlohmann::json(command).dump()},
                                                            {"strategy", strategy_text},
                                                            {"seed", std::to_string(seed)},
                                                            {"trials", std::to_string(budget)},
                                                            {"fixed_batch", options.fixed_batch ? "1" : "0"}}));
  }
  if (command.empty()) throw InputError(fmt::format("{}: the study records no command; give one after --", options.study_path));
  Study& study = *study_holder;
  const SearchSpace space = effective_space(study, file_space);
  const Objective& objective = space.objective();
  const StrategyKind kind = strategy_from_name(strategy_text);
  const bool bayesian = kind == StrategyKind::Bayesian, horovod = kind == StrategyKind::Horovod;
  if (horovod) {
    budget = kHorovodWarmupSamples + kHorovodMaxSamples;  // Horovod's own sample budget
    study.set_meta("objective_unit", "bytes/us");
    study.set_meta("objective_source", "horovod");
  }
  const Strategy strategy(space, kind, seed, budget, options.grid_levels);
  const double timeout_s = options.trial_timeout_s.value_or(space.trial().timeout_s);
  const int confirm_top = horovod ? 0 : options.confirm_top.value_or(space.trial().confirm_top);
  const int confirm_repeats = space.trial().confirm_repeats;
  const fs::path trials_root = fs::path(options.study_path).string() + ".trials";
  fs::create_directories(trials_root, ec);
  if (options.collscope_exe.empty() || !fs::exists(options.collscope_exe, ec))
    throw InputError(fmt::format("{}: the collscope executable to run trials with does not exist", options.collscope_exe));
  const WarmStart warm = load_warm_start(options.warm_start, space, file_space.yaml_text(), command, options.progress);
  const int design_skip = bayesian ? std::min(strategy.initial_design_size(), warm.successes) : 0;

  // Trials left running by a tuner that died: kill what is left of them, never score them. The group's leader
  // (collscope trace) died with the tuner; its launcher and ranks may live on. Only processes proven to be the
  // trial's are signalled (same host and boot, started after it, carrying its marker): a recorded process group id
  // may belong to anyone by now.
  const std::string study_id = study.id();
  for (auto t : checked_trials(study, space)) {
    if (t.status != TrialStatus::Running) continue;
    std::string why_not;
    const auto processes = study.trial_processes(t.id);
    const int killed = processes ? kill_leftover_trial(*processes, &why_not) : 0;
    if (!processes) why_not = "no record of its processes";
    if (killed == 0 && options.progress)
      fmt::print(stderr, "collscope tune: trial {} was running; nothing of it stopped ({})\n", t.id, why_not);
    t.status = TrialStatus::Interrupted;
    t.reason = "interrupted: the tuner stopped while this trial ran; it is run again";
    t.pgid = 0;
    study.update_trial(t);
  }

  const auto session_start = std::chrono::steady_clock::now();
  int session_trials = 0;
  bool interrupted = false;
  while (!interrupted) {
    // Asked to stop between trials: nothing runs, nothing to kill.
    if (stop.load()) {
      interrupted = true;
      break;
    }
    const std::vector<TrialRecord> history = study.trials();
    std::vector<Observation> obs = warm.observations;
    for (auto& o : observations(space, history)) obs.push_back(std::move(o));
    int strategy_trials = 0, done = 0;
    bool default_done = false, warm_best_done = false, noise_done = false;
    std::vector<double> walls;
    for (const auto& t : history) {
      if (!is_finished(t.status)) continue;
      ++done;
      walls.push_back(t.wall_s);
      if (is_strategy_kind(t.kind)) ++strategy_trials;
      default_done |= t.kind == kKindDefault;
      warm_best_done |= t.kind == kKindWarmBest;
      noise_done |= t.kind == kKindNoiseRepeat;
    }
    const int explored = strategy_trials + (default_done ? 1 : 0) + (warm_best_done ? 1 : 0);
    std::optional<std::string> stopped_by = study.meta("stop_rule");
    if (stopped_by && stopped_by->empty()) stopped_by.reset();
    const auto ranked_now = ranked_settings(space, history);
    const std::string unit = score_unit(study, objective);

    TrialRecord record;
    std::optional<Suggestion> suggestion;
    if (!stopped_by && explored < budget) {
      const auto defaults = space.defaults();
      const int index = strategy_trials + design_skip;
      if (bayesian && defaults && !default_done) {
        record.kind = kKindDefault;  // the baseline every gain is against; the documented example's first trial
        record.values = *defaults;
      } else if (bayesian && warm.best && !warm_best_done) {
        record.kind = kKindWarmBest;
        record.values = warm.best->values;
      } else if (bayesian && index >= strategy.initial_design_size() && !noise_done && !ranked_now.empty() &&
                 !estimate_noise(space, history)) {
        record.kind = kKindNoiseRepeat;  // a deliberate repeat: how far apart two runs of one setting land
        record.values = ranked_now.front().values;
      } else {
        suggestion = strategy.suggest(index, obs);
        // Stop rules: the time budget for every strategy; noise and payback once the model has had two trials.
        StopInputs in;
        in.time_budget_s = options.time_budget_s;
        in.mean_trial_s = mean_of(walls).value_or(0);
        // The budget holds the confirmation runs too: exploration ends when what is spent plus them reaches it.
        for (double w : walls) in.elapsed_s += w;
        in.elapsed_s += in.mean_trial_s * (1 + confirm_top * confirm_repeats);
        const bool modelled = bayesian && suggestion && suggestion->model && index >= strategy.initial_design_size() + 2;
        if (modelled) {
          in.expected_gain = std::exp(suggestion->log_acquisition);
          in.best = ranked_now.empty() ? 0 : oriented(objective, ranked_now.front().mean_score);
          in.noise = estimate_noise(space, history);
          in.confirm_repeats = confirm_repeats;
          in.job_steps = options.job_steps;
          in.step_time_objective = objective.kind == ObjectiveKind::StepTime;
          std::vector<double> steps_s;
          if (!ranked_now.empty())
            for (const auto& t : history)
              if (t.step_s && std::find(ranked_now.front().trial_ids.begin(), ranked_now.front().trial_ids.end(), t.id) !=
                                  ranked_now.front().trial_ids.end())
                steps_s.push_back(*t.step_s);
          in.best_step_s = mean_of(steps_s);
        }
        if (suggestion && (modelled || in.time_budget_s)) {
          if (!modelled) in.noise.reset(), in.job_steps.reset();
          if (auto rule = stop_rule(in)) {
            stopped_by = *rule;
            study.set_meta("stop_rule", *rule);
            if (options.progress) fmt::print(stderr, "collscope tune: stopped exploring: {}\n", *rule);
            suggestion.reset();
          }
        }
        if (suggestion) {
          record.kind = suggestion->source;
          record.unit = suggestion->unit;
          record.values = suggestion->values.value_or(space.to_values(suggestion->unit));
        }
      }
    }
    std::string phase = "exploring";
    int confirm_left = 0;
    if (record.kind.empty()) {
      // Confirmation: the best few distinct settings get extra runs, so a lucky noisy run does not win.
      for (std::size_t i = 0; i < ranked_now.size() && static_cast<int>(i) < confirm_top; ++i) {
        confirm_left += std::max(0, 1 + confirm_repeats - ranked_now[i].runs);
        if (record.kind.empty() && ranked_now[i].runs < 1 + confirm_repeats) {
          record.kind = kKindConfirm;
          record.values = ranked_now[i].values;
        }
      }
      if (record.kind.empty()) break;
      phase = "confirming";
    } else if (record.kind == kKindNoiseRepeat) {
      phase = "repeating the best to measure the noise";
    } else if (record.kind == kKindDefault) {
      phase = "the job's defaults";
    }
    // The batch size's memory limit: a setting above it is moved below it (a probe), not run to fail again.
    std::string batch_probe;
    if (record.kind != kKindConfirm) batch_probe = keep_batch_below_limit(space, batch_limit(space, history), record.values);
    if (record.unit.empty() || !batch_probe.empty()) record.unit = space.to_unit(record.values);
    const bool counts_as_exploration = record.kind != kKindConfirm && record.kind != kKindNoiseRepeat;
    const int remaining_explore = stopped_by ? 0 : std::max(0, budget - explored - (counts_as_exploration ? 1 : 0));
    const int planned = done + 1 + remaining_explore +
                        (record.kind == kKindConfirm ? confirm_left - 1 : confirm_top * confirm_repeats) +
                        (bayesian && !noise_done && record.kind != kKindNoiseRepeat && !stopped_by ? 1 : 0);

    record.started_unix_ms = unix_ms();
    study.add_trial(record);
    if (suggestion && suggestion->model) {
      nlohmann::json m;
      m["length_scales"] = suggestion->model->length_scales;
      m["signal_variance"] = suggestion->model->signal_variance;
      m["noise_variance"] = suggestion->model->noise_variance;
      m["log_likelihood"] = suggestion->log_likelihood;
      m["log_expected_improvement"] = suggestion->log_acquisition;
      m["observations"] = obs.size();
      study.save_model(record.id, m.dump());
    }
    const fs::path trial_dir = trials_root / fmt::format("trial-{:04}", record.id);
    fs::remove_all(trial_dir, ec);
    fs::create_directories(trial_dir, ec);
    record.dir = fs::absolute(trial_dir).string();
    const std::string run_dir = (fs::path(record.dir) / "trace").string();
    const std::string log_path = (fs::path(record.dir) / "output.log").string();
    const std::string counter = fmt::format("trial {}/{}, {}", done + 1, planned, phase);
    if (options.progress) {
      fmt::print(stderr, "collscope tune: {} ({}): {}\n", counter, record.kind, space.describe(record.values));
      if (!batch_probe.empty()) fmt::print(stderr, "collscope tune:   memory limit probe: {}\n", batch_probe);
    }

    // Knob values reach the job literally: as argv elements, environment values or file contents.
    auto variables = space.named(record.values);
    variables["trial_dir"] = record.dir;
    std::vector<std::string> job;
    for (const auto& arg : command) job.push_back(substitute(arg, variables));
    TrialLaunch launch;
    launch.argv = traced_command(options.collscope_exe, run_dir, job);
    launch.log_path = log_path;
    launch.timeout_s = timeout_s;
    launch.marker = fmt::format("{}-{}", study_id, record.id);
    for (std::size_t i = 0; i < space.knobs().size(); ++i)
      if (space.knobs()[i].env) launch.env.emplace_back(*space.knobs()[i].env, record.values[i]);
    for (const auto& cfg : space.config_files()) {
      fs::path p = substitute(cfg.path, variables);
      if (p.is_relative()) p = fs::path(record.dir) / p;
      fs::create_directories(p.parent_path(), ec);
      std::ofstream(p, std::ios::trunc) << substitute(cfg.contents, variables);
    }
    {
      nlohmann::json cmd;
      cmd["argv"] = launch.argv;
      cmd["env"] = launch.env;
      std::ofstream(fs::path(record.dir) / "command.json") << cmd.dump(2) << "\n";
    }
    const double batch_size = resolve_batch_size(space, record.values);
    const ScoreSource source = score_source_from_name(study.meta("objective_source").value_or("any"));

    // While the trial runs: its live trace (steps done, throughput so far) for progress lines and early stopping.
    std::optional<double> best_oriented;
    for (const auto& o : obs)
      if (o.value) best_oriented = std::max(best_oriented.value_or(*o.value), *o.value);
    const bool may_stop_early = space.trial().early_stopping && !horovod && objective.kind != ObjectiveKind::Regex &&
                                source != ScoreSource::Printed && best_oriented && record.kind != kKindConfirm &&
                                record.kind != kKindNoiseRepeat;
    std::optional<double> partial_score;
    const auto trial_start = std::chrono::steady_clock::now();
    auto last_read = trial_start - std::chrono::seconds(10);
    auto next_print = trial_start + std::chrono::seconds(3);
    const TrialMonitor monitor = [&]() -> std::optional<std::string> {
      const auto now = std::chrono::steady_clock::now();
      const bool print_due = options.progress && now >= next_print;
      if (!print_due && (!may_stop_early || now - last_read < std::chrono::seconds(2))) return std::nullopt;
      last_read = now;
      const auto p = source == ScoreSource::Printed || objective.kind == ObjectiveKind::Regex
                         ? std::nullopt
                         : read_step_progress(run_dir, objective.step_range, objective.warmup_steps, batch_size);
      if (print_due) {
        next_print = now + std::chrono::seconds(10);
        fmt::print(stderr, "collscope tune:   trial {} running {:.0f} s: {}\n", record.id,
                   std::chrono::duration<double>(now - trial_start).count(), live_state(objective, p, log_path, unit));
      }
      if (!may_stop_early || !p || p->measured_steps < 3) return std::nullopt;
      if (p->source != "nvtx" && p->confidence < kMinInferredStepConfidence && source != ScoreSource::Steps) return std::nullopt;
      const double value = objective.kind == ObjectiveKind::StepTime ? p->mean_step_ms : p->throughput;
      const double o = oriented(objective, value);
      const double f = space.trial().early_stop_fraction;
      // Maximising: value < f × best; minimising (step time): value > best / f.
      const bool hopeless = objective.maximize ? o < f * *best_oriented : -o > -*best_oriented / f;
      if (!hopeless) return std::nullopt;
      partial_score = value;
      return fmt::format("early-stopped after {} steps: {} is far from the best {}", p->measured_steps,
                         format_score(value, unit), format_score(std::abs(*best_oriented), unit));
    };
    const TrialOutcome outcome = run_trial(launch, monitor, [&](const TrialProcesses& processes) {
      study.save_trial_processes(record.id, processes);
      record.pgid = processes.pgid;
      study.update_trial(record);
    }, &stop);
    record.wall_s = outcome.wall_s;
    record.exit_code = outcome.exit_code;
    record.pgid = 0;
    if (outcome.interrupted) {
      record.status = TrialStatus::Interrupted;
      record.reason = outcome.stop_reason;
      interrupted = true;
    } else if (outcome.timed_out) {
      record.status = TrialStatus::Timeout;
      const std::string hang = hang_summary(run_dir);
      record.reason = outcome.stop_reason + (hang.empty() ? "" : "; " + hang);
    } else if (outcome.stopped) {
      record.status = TrialStatus::Stopped;
      record.reason = outcome.stop_reason;
      record.score = partial_score && std::isfinite(*partial_score) ? partial_score : std::nullopt;
    } else if (outcome.exit_code != 0) {
      record.status = TrialStatus::Failed;
      const std::string why = failure_line(log_path);
      record.reason = why.empty() ? fmt::format("exit code {}", outcome.exit_code)
                                  : fmt::format("exit code {}: {}", outcome.exit_code, why);
    } else if (horovod) {
      record.score = bytes_per_microsecond(run_dir);
      record.status = record.score ? TrialStatus::Ok : TrialStatus::Failed;
      record.reason = record.score ? "" : "objective: no float-sum allreduces in the trace (Horovod's score)";
      record.source = "bytes all-reduced per microsecond (HOROVOD_AUTOTUNE's score)";
    } else {
      const Score score = score_trial(objective, batch_size, run_dir, log_path, source);
      record.score = score.value;
      record.status = score.value ? TrialStatus::Ok : TrialStatus::Failed;
      record.reason = score.problem;
      record.source = score.source_text;
      record.step_s = score.step_s;
      if (score.value && source == ScoreSource::Any) {
        // The study's scores come from this source from now on: scores of different sources do not compare.
        study.set_meta("objective_source", std::string(score_source_name(score.source)));
        study.set_meta("objective_unit", score.unit.empty() ? objective.unit : score.unit);
        if (options.progress)
          fmt::print(stderr, "collscope tune: objective: {} from {}\n", score_unit(study, objective), score.source_text);
      }
    }
    study.update_trial(record);
    ++session_trials;

    if (options.progress) {
      const auto all = study.trials();
      const auto best = best_settings(space, all);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start).count();
      const double eta = elapsed / session_trials * std::max(0, planned - done - 1);
      constexpr int kBarWidth = 20;
      const int filled = std::min(kBarWidth, planned > 0 ? kBarWidth * (done + 1) / planned : kBarWidth);
      const std::string u = score_unit(study, objective);
      const std::string result = record.score && record.status == TrialStatus::Ok
                                     ? format_score(*record.score, u)
                                     : std::string(trial_status_name(record.status)) + (record.reason.empty() ? "" : ": " + record.reason);
      fmt::print(stderr, "collscope tune: [{}{}] {}: {} | best {} | ETA {}\n", std::string(filled, '#'),
                 std::string(kBarWidth - filled, '.'), counter, result, best ? format_score(best->mean_score, u) : "-",
                 format_eta(eta));
    }
  }
  const auto all = study.trials();
  const auto best = best_settings(space, all);
  const auto notes = study_notes(study, space, all);
  study.close_for_readers();
  if (!options.report_dir.empty())
    write_report(space, all, options.report_dir, fs::path(options.study_path).filename().string(), notes);
  TuneResult result;
  result.study_path = options.study_path;
  if (!options.report_dir.empty()) result.report_path = (fs::path(options.report_dir) / "index.html").string();
  result.stop_rule = study.meta("stop_rule");
  if (result.stop_rule && result.stop_rule->empty()) result.stop_rule.reset();
  if (interrupted) {
    fmt::print(stderr, "collscope tune: interrupted; continue with --resume --study {}\n", options.study_path);
    result.outcome = TuneOutcome::Interrupted;
    return result;
  }
  if (!best) {
    fmt::print(stderr, "collscope tune: no trial succeeded ({} trials); see {}\n", all.size(), trials_root.string());
    for (const auto& note : notes) fmt::print(stderr, "collscope tune: {}\n", note);
    result.outcome = TuneOutcome::NoTrialSucceeded;
    return result;
  }
  fmt::print("best: {} (mean of {} run(s): {})\n", space.describe(best->values), best->runs,
             format_score(best->mean_score, score_unit(study, objective)));
  for (const auto& note : notes) fmt::print("{}\n", note);
  if (!result.report_path.empty()) fmt::print("report: {}\n", result.report_path);
  fmt::print("study: {} (collscope tune show {})\n", options.study_path, options.study_path);
  if (!options.export_env_path.empty()) write_export_env(space, *best, options.export_env_path);
  if (!options.export_nccl_rules_path.empty())
    write_nccl_rules(space, *best, options.study_path, options.export_nccl_rules_path);
  result.outcome = TuneOutcome::Found;
  result.best = best;
  return result;
}

}  // namespace collscope::autotuner
