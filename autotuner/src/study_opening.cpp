// The study's first steps in a session: open it (new, or --resume), read the warm start's earlier studies, and
// recover the trials a killed tuner left running.
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>
#include <limits>

#include "tuning_steps.hpp"

namespace collscope::autotuner::detail {
namespace fs = std::filesystem;

namespace {
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
    throw InputError(
        fmt::format("{}: meta.{} = '{}' is not a whole number in [{}, {}]", study.path(), key, *text, lo, hi));
  return v;
}

// --resume: the study's own command, strategy, seed and budget (a new --trials raises the budget).
OpenedStudy resume_study(const TuneOptions& options, const SearchSpace& file_space) {
  Study study = Study::open(options.study_path, Study::Access::ReadWrite);
  if (study.meta("space").value_or("") != file_space.yaml_text())
    throw InputError(fmt::format("{}: {} differs from the space this study was started with (start a new --study)",
                                 options.study_path, options.space_path));
  std::vector<std::string> command = options.command.empty() ? stored_command(study) : options.command;
  std::string strategy_text = study.meta("strategy").value_or(strategy_name(options.strategy));
  const auto seed = stored_number<std::uint64_t>(study, "seed", 0, 0, std::numeric_limits<std::uint64_t>::max());
  const int budget = options.trials > 0 ? options.trials : stored_number<int>(study, "trials", 20, 1, 1'000'000);
  study.set_meta("trials", std::to_string(budget));
  // A resumed study screens as it began: one made before the screen existed goes on without it.
  const bool screening = study.meta("model_screening").value_or("0") == "1";
  return OpenedStudy{std::move(study), std::move(command), std::move(strategy_text), seed, budget, screening};
}

OpenedStudy create_study(const TuneOptions& options, const SearchSpace& file_space) {
  const int budget = options.trials > 0 ? options.trials : 20;
  if (options.command.empty())
    throw InputError("tune: no command given (usage: collscope tune SPACE.yaml [options] -- CMD...)");
  if (options.fixed_batch) (void)file_space.with_knob_fixed(file_space.objective().batch_size);  // refuse early
  const std::string strategy_text = strategy_name(options.strategy);
  Study study = Study::create(options.study_path, {{"space", file_space.yaml_text()},
                                                   {"space_path", options.space_path},
                                                   {"command", nlohmann::json(options.command).dump()},
                                                   {"strategy", strategy_text},
                                                   {"seed", std::to_string(options.seed)},
                                                   {"trials", std::to_string(budget)},
                                                   {"fixed_batch", options.fixed_batch ? "1" : "0"},
                                                   {"model_screening", options.model_screening ? "1" : "0"}});
  return OpenedStudy{std::move(study), options.command, strategy_text, options.seed, budget, options.model_screening};
}
}  // namespace

OpenedStudy open_or_resume_study(const TuneOptions& options, const SearchSpace& file_space) {
  std::error_code ec;
  const bool existing = fs::exists(options.study_path, ec);
  OpenedStudy opened =
      options.resume && existing ? resume_study(options, file_space) : create_study(options, file_space);
  if (opened.command.empty())
    throw InputError(fmt::format("{}: the study records no command; give one after --", options.study_path));
  return opened;
}

WarmStart load_warm_start(const std::vector<std::string>& paths, const SearchSpace& space, const std::string& yaml,
                          const std::vector<std::string>& command, const TuneProgress& progress) {
  WarmStart warm;
  std::vector<TrialRecord> all;
  for (std::size_t n = 0; n < paths.size(); ++n) {
    const std::string& path = paths[n];
    const Study earlier = Study::open(path);
    if (earlier.meta("space").value_or("") != yaml)
      throw InputError(fmt::format("{}: --warm-start: that study ran another search space", path));
    if (stored_command(earlier) != command) {
      tell(progress, WarmStartSkipped{path});
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
  if (!paths.empty()) tell(progress, WarmStartLoaded{warm.observations.size(), warm.successes, warm.best.has_value()});
  return warm;
}

// The group's leader (collscope trace) died with the tuner; its launcher and ranks may live on. Only processes
// proven to be the trial's are signalled (same host and boot, started after it, carrying its marker): a recorded
// process group id may belong to anyone by now.
void recover_running_trials(Study& study, const SearchSpace& space, const TuneProgress& progress) {
  for (auto t : checked_trials(study, space)) {
    if (t.status != TrialStatus::Running) continue;
    std::string why_not;
    const auto processes = study.trial_processes(t.id);
    const int killed = processes ? kill_leftover_trial(*processes, &why_not) : 0;
    if (!processes) why_not = "no record of its processes";
    if (killed == 0) tell(progress, LeftoverNotStopped{t.id, why_not});
    t.status = TrialStatus::Interrupted;
    t.reason = "interrupted: the tuner stopped while this trial ran; it is run again";
    t.pgid = 0;
    study.update_trial(t);
  }
}

}  // namespace collscope::autotuner::detail
