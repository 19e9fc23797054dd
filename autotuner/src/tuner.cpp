// The tuning loop: suggest -> run (traced, limited) -> score -> record; confirm the best; report.
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/scoring.hpp>
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <signal.h>
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

namespace collscope::autotuner {
namespace fs = std::filesystem;

namespace {
std::atomic<bool> g_interrupt{false};
extern "C" void request_interrupt(int) { g_interrupt.store(true); }

double oriented(const Objective& o, double v) { return o.maximize ? v : -v; }

bool has_observation(const TrialRecord& t) {
  return t.status == "ok" || t.status == "stopped" || t.status == "failed" || t.status == "timeout";
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format_score(const Objective& o, double v) {
  return o.unit.empty() ? fmt::format("{:.6g}", v) : fmt::format("{:.6g} {}", v, o.unit);
}

std::string describe(const SearchSpace& space, const Assignment& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size() && i < space.knobs().size(); ++i)
    s += fmt::format("{}{}={}", s.empty() ? "" : " ", space.knobs()[i].name, values[i]);
  return s;
}

// `v` in single quotes for a POSIX shell: nothing inside is expanded; a quote is closed, escaped and reopened.
std::string shell_quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
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

// Candidates for confirmation: distinct successful settings, best mean first.
std::vector<BestSettings> ranked_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::map<Assignment, BestSettings> by_values;
  for (const auto& t : trials) {
    // A row whose values do not fit the space, or a score that is no number, is no candidate (older or edited studies).
    if (t.status != "ok" || !t.score || !std::isfinite(*t.score) || t.values.size() != space.knobs().size()) continue;
    auto& b = by_values[t.values];
    b.values = t.values;
    b.mean_score += *t.score;
    ++b.runs;
    b.trial_ids.push_back(t.id);
  }
  std::vector<BestSettings> out;
  for (auto& [v, b] : by_values) {
    b.mean_score /= b.runs;
    out.push_back(b);
  }
  const Objective& o = space.objective();
  std::stable_sort(out.begin(), out.end(), [&](const BestSettings& a, const BestSettings& b) {
    const double oa = oriented(o, a.mean_score), ob = oriented(o, b.mean_score);
    return oa != ob ? oa > ob : a.runs > b.runs;
  });
  return out;
}
}  // namespace

std::optional<BestSettings> best_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  auto ranked = ranked_settings(space, trials);
  if (ranked.empty()) return std::nullopt;
  return ranked.front();
}

std::vector<Observation> observations(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::vector<Observation> out;
  for (const auto& t : trials) {
    if (!has_observation(t) || t.unit.size() != space.dimensions()) continue;
    Observation o{t.unit, std::nullopt};
    if ((t.status == "ok" || t.status == "stopped") && t.score && std::isfinite(*t.score))
      o.value = oriented(space.objective(), *t.score);
    out.push_back(std::move(o));
  }
  return out;
}

void write_export_env(const SearchSpace& space, const BestSettings& best, const std::string& path) {
  // Every value is quoted, in comments too; a control character could still end a comment line or the quote
  // for whoever reads the file, so such a value is refused (the space parser refuses them already).
  for (std::size_t i = 0; i < space.knobs().size(); ++i)
    if (i >= best.values.size() || has_control_character(best.values[i]))
      throw InputError(fmt::format("{}: knob {}: its value holds a control character; not written", path, space.knobs()[i].name));
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw InputError(fmt::format("{}: cannot write the --export-env file", path));
  out << fmt::format("# collscope tune: best settings, mean {} over {} run(s)\n",
                     format_score(space.objective(), best.mean_score), best.runs);
  for (std::size_t i = 0; i < space.knobs().size(); ++i) {
    const Knob& k = space.knobs()[i];
    if (k.env) out << "export " << *k.env << "=" << shell_quote(best.values[i]) << "\n";
    else out << "# " << k.name << "=" << shell_quote(best.values[i]) << " (passed as {" << k.name << "} in the command)\n";
  }
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

int tune(const TuneOptions& options) {
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
    study_holder.emplace(Study::create(options.study_path, {{"space", file_space.yaml_text()},
                                                            {"space_path", options.space_path},
                                                            {"command", nlohmann::json(command).dump()},
                                                            {"strategy", strategy_text},
                                                            {"seed", std::to_string(seed)},
                                                            {"trials", std::to_string(budget)}}));
  }
  if (command.empty()) throw InputError(fmt::format("{}: the study records no command; give one after --", options.study_path));
  Study& study = *study_holder;
  const SearchSpace& space = file_space;
  const Objective& objective = space.objective();
  const StrategyKind kind = strategy_from_name(strategy_text);
  const Strategy strategy(space, kind, seed, budget, options.grid_levels);
  const double timeout_s = options.trial_timeout_s.value_or(space.trial().timeout_s);
  const int confirm_top = options.confirm_top.value_or(space.trial().confirm_top);
  const int confirm_repeats = space.trial().confirm_repeats;
  const fs::path trials_root = fs::path(options.study_path).string() + ".trials";
  fs::create_directories(trials_root, ec);
  if (options.collscope_exe.empty() || !fs::exists(options.collscope_exe, ec))
    throw InputError(fmt::format("{}: the collscope executable to run trials with does not exist", options.collscope_exe));

  // Trials left running by a tuner that died: kill what is left of them, never score them. The group's leader
  // (collscope trace) died with the tuner; its launcher and ranks may live on. Only processes proven to be the
  // trial's are signalled (same host and boot, started after it, carrying its marker): a recorded process group id
  // may belong to anyone by now.
  const std::string study_id = study.id();
  for (auto t : checked_trials(study, space)) {
    if (t.status != "running") continue;
    std::string why_not;
    const auto processes = study.trial_processes(t.id);
    const int killed = processes ? kill_leftover_trial(*processes, &why_not) : 0;
    if (!processes) why_not = "no record of its processes";
    if (killed == 0 && options.progress)
      fmt::print(stderr, "collscope tune: trial {} was running; nothing of it stopped ({})\n", t.id, why_not);
    t.status = "interrupted";
    t.reason = "interrupted: the tuner stopped while this trial ran; it is run again";
    t.pgid = 0;
    study.update_trial(t);
  }

  g_interrupt.store(false);
  struct sigaction sa {};
  sa.sa_handler = request_interrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);

  const auto session_start = std::chrono::steady_clock::now();
  int session_trials = 0;
  bool interrupted = false;
  while (!interrupted) {
    const std::vector<TrialRecord> history = study.trials();
    const auto obs = observations(space, history);
    int explored = 0, confirm_runs_planned = 0;
    for (const auto& t : history)
      if (t.kind != "confirm" && t.status != "interrupted") ++explored;
    TrialRecord record;
    std::optional<Suggestion> suggestion;
    if (explored < budget) suggestion = strategy.suggest(explored, obs);
    if (suggestion) {
      record.kind = suggestion->source;
      record.unit = suggestion->unit;
      record.values = space.to_values(suggestion->unit);
    } else {
      // Confirmation: the best few distinct settings get extra runs, so a lucky noisy run does not win.
      const auto ranked = ranked_settings(space, history);
      for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < confirm_top; ++i) {
        if (ranked[i].runs < 1 + confirm_repeats) {
          record.kind = "confirm";
          record.values = ranked[i].values;
          for (const auto& t : history)
            if (t.id == ranked[i].trial_ids.front()) record.unit = t.unit;
          break;
        }
      }
      if (record.kind.empty()) break;
      for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < confirm_top; ++i)
        confirm_runs_planned += std::max(0, 1 + confirm_repeats - ranked[i].runs);
    }
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

    // Early stopping from the live trace: only against a finished best, after a few measured steps.
    std::optional<double> best_oriented;
    for (const auto& o : obs)
      if (o.value) best_oriented = std::max(best_oriented.value_or(*o.value), *o.value);
    std::optional<double> partial_score;
    TrialMonitor monitor;
    if (space.trial().early_stopping && objective.kind != ObjectiveKind::Regex && best_oriented && record.kind != "confirm") {
      monitor = [&]() -> std::optional<std::string> {
        const auto p = read_step_progress(run_dir, objective.step_range, objective.warmup_steps, batch_size);
        if (!p || p->measured_steps < 3) return std::nullopt;
        const double value = objective.kind == ObjectiveKind::StepTime ? p->mean_step_ms : p->throughput;
        const double o = oriented(objective, value);
        const double f = space.trial().early_stop_fraction;
        // Maximising: value < f × best; minimising (step time): value > best / f.
        const bool hopeless = objective.maximize ? o < f * *best_oriented : -o > -*best_oriented / f;
        if (!hopeless) return std::nullopt;
        partial_score = value;
        return fmt::format("early-stopped after {} steps: {} is far from the best {}", p->measured_steps,
                           format_score(objective, value), format_score(objective, std::abs(*best_oriented)));
      };
    }
    const TrialOutcome outcome = run_trial(launch, monitor, [&](const TrialProcesses& processes) {
      study.save_trial_processes(record.id, processes);
      record.pgid = processes.pgid;
      study.update_trial(record);
    }, &g_interrupt);
    record.wall_s = outcome.wall_s;
    record.exit_code = outcome.exit_code;
    record.pgid = 0;
    if (outcome.interrupted) {
      record.status = "interrupted";
      record.reason = outcome.stop_reason;
      interrupted = true;
    } else if (outcome.timed_out) {
      record.status = "timeout";
      const std::string hang = hang_summary(run_dir);
      record.reason = outcome.stop_reason + (hang.empty() ? "" : "; " + hang);
    } else if (outcome.stopped) {
      record.status = "stopped";
      record.reason = outcome.stop_reason;
      record.score = partial_score && std::isfinite(*partial_score) ? partial_score : std::nullopt;
    } else if (outcome.exit_code != 0) {
      record.status = "failed";
      const std::string why = failure_line(log_path);
      record.reason = why.empty() ? fmt::format("exit code {}", outcome.exit_code)
                                  : fmt::format("exit code {}: {}", outcome.exit_code, why);
    } else {
      const Score score = score_trial(objective, batch_size, run_dir, log_path);
      record.score = score.value;
      record.status = score.value ? "ok" : "failed";
      record.reason = score.problem;
    }
    study.update_trial(record);
    ++session_trials;

    if (options.progress) {
      const auto all = study.trials();
      int done = 0;
      for (const auto& t : all)
        if (t.kind != "confirm" && t.status != "interrupted") ++done;
      const auto best = best_settings(space, all);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start).count();
      const int remaining = std::max(0, budget - done) + (record.kind == "confirm" ? std::max(0, confirm_runs_planned - 1) : 0);
      const double eta = elapsed / session_trials * remaining;
      constexpr int kBarWidth = 20;
      const int filled = std::min(kBarWidth, budget > 0 ? kBarWidth * done / budget : kBarWidth);
      const std::string result = record.score && record.status == "ok"
                                     ? format_score(objective, *record.score)
                                     : record.status + (record.reason.empty() ? "" : ": " + record.reason);
      fmt::print(stderr, "collscope tune: [{}{}] {}/{} trial {} ({}) {} | {} | best {} | ETA {}\n", std::string(filled, '#'),
                 std::string(kBarWidth - filled, '.'), std::min(done, budget), budget, record.id, record.kind, result,
                 describe(space, record.values), best ? format_score(objective, best->mean_score) : "-",
                 format_eta(eta));
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);

  const auto all = study.trials();
  const auto best = best_settings(space, all);
  study.close_for_readers();
  if (!options.report_dir.empty()) write_report(space, all, options.report_dir, fs::path(options.study_path).filename().string());
  if (interrupted) {
    fmt::print(stderr, "collscope tune: interrupted; continue with --resume --study {}\n", options.study_path);
    return 130;
  }
  if (!best) {
    fmt::print(stderr, "collscope tune: no trial succeeded ({} trials); see {}\n", all.size(), trials_root.string());
    return 1;
  }
  fmt::print("best: {} (mean of {} run(s): {})\n", describe(space, best->values), best->runs,
             format_score(objective, best->mean_score));
  if (!options.export_env_path.empty()) write_export_env(space, *best, options.export_env_path);
  if (!options.export_nccl_rules_path.empty())
    write_nccl_rules(space, *best, options.study_path, options.export_nccl_rules_path);
  return 0;
}

std::vector<TrialRecord> checked_trials(const Study& study, const SearchSpace& space) {
  auto trials = study.trials();
  for (const auto& t : trials) {
    if (t.values.size() != space.knobs().size())
      throw InputError(fmt::format("{}: trial {}: {} knob value(s) in params, the study's space has {} knob(s)", study.path(),
                                   t.id, t.values.size(), space.knobs().size()));
    if (t.unit.size() != space.dimensions())
      throw InputError(fmt::format("{}: trial {}: {} coordinate(s) in unit, the study's space has {} knob(s)", study.path(),
                                   t.id, t.unit.size(), space.dimensions()));
  }
  return trials;
}

SearchSpace stored_space(const Study& study) {
  return SearchSpace::parse(study.meta("space").value_or(""), study.path() + " (stored space)");
}

void print_study(const std::string& study_path, std::ostream& out) {
  const Study study = Study::open(study_path);
  const SearchSpace space = stored_space(study);
  const auto trials = checked_trials(study, space);
  out << fmt::format("study {}: strategy {}, seed {}, {} trials\n", study_path, study.meta("strategy").value_or("?"),
                     study.meta("seed").value_or("?"), trials.size());
  std::string header = fmt::format("{:>4}  {:<20}  {:<11}  {:>14}  {:>7}", "id", "kind", "status", "score", "wall_s");
  for (const auto& k : space.knobs()) header += fmt::format("  {:>12}", k.name);
  out << header << "  reason\n";
  for (const auto& t : trials) {
    std::string line = fmt::format("{:>4}  {:<20}  {:<11}  {:>14}  {:>7.2f}", t.id, t.kind.substr(0, 20), t.status.substr(0, 11),
                                   t.score ? fmt::format("{:.6g}", *t.score) : "-", t.wall_s);
    for (const auto& v : t.values) line += fmt::format("  {:>12}", v);
    out << line << "  " << t.reason << "\n";
  }
  if (const auto best = best_settings(space, trials)) {
    out << fmt::format("best: {} (mean of {} run(s), trials {}): {}\n", describe(space, best->values), best->runs,
                       fmt::join(best->trial_ids, ","), format_score(space.objective(), best->mean_score));
  } else {
    out << "best: none (no trial succeeded)\n";
  }
}

}  // namespace collscope::autotuner
