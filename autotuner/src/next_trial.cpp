// Choosing the next trial: the job's defaults first, the analyzer's advice on their trace, the warm start's best, one
// deliberate repeat to measure the noise, then the strategy's suggestions until the budget is spent or a stop rule
// fires; then the confirmation runs.
#include <collscope/autotuner/search_rules.hpp>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "tuner_support.hpp"
#include "tuning_steps.hpp"

namespace collscope::autotuner::detail {

namespace {
// Mean of the known values; nullopt when none.
std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Seconds per step of the best setting's runs, where their scores said (the payback rule's step time).
std::optional<double> best_step_s(const StudyState& state) {
  if (state.ranked.empty()) return std::nullopt;
  const auto& ids = state.ranked.front().trial_ids;
  std::vector<double> steps_s;
  for (const auto& t : state.history)
    if (t.step_s && std::find(ids.begin(), ids.end(), t.id) != ids.end()) steps_s.push_back(*t.step_s);
  return mean_of(steps_s);
}

// The rule that ends exploration before `suggestion` runs, or nullopt. The time budget holds for every strategy;
// noise and payback once the model has had two trials after its initial design.
std::optional<std::string> stop_rule_before(const TuningPlan& plan, const StudyState& state,
                                            const Suggestion& suggestion, int index) {
  StopInputs in;
  in.time_budget_s = plan.options.time_budget_s;
  in.mean_trial_s = mean_of(state.walls).value_or(0);
  // The budget holds the confirmation runs too: exploration ends when what is spent plus them reaches it.
  for (double w : state.walls) in.elapsed_s += w;
  in.elapsed_s += in.mean_trial_s * (1 + plan.confirm_top * plan.confirm_repeats);
  const bool modelled = plan.bayesian && suggestion.model && index >= plan.strategy.initial_design_size() + 2;
  if (!modelled && !in.time_budget_s) return std::nullopt;
  if (modelled) {
    const Objective& objective = plan.space.objective();
    in.expected_gain = std::exp(suggestion.log_acquisition);
    in.best = state.ranked.empty() ? 0 : oriented(objective, state.ranked.front().mean_score);
    in.noise = estimate_noise(plan.space, state.history);
    in.confirm_repeats = plan.confirm_repeats;
    in.job_steps = plan.options.job_steps;
    in.step_time_objective = objective.kind == ObjectiveKind::StepTime;
    in.best_step_s = best_step_s(state);
  }
  return stop_rule(in);
}

// The strategy's next point; nullopt when it has none left or a stop rule ends exploration first.
struct StrategyChoice {
  std::optional<Suggestion> suggestion;
  std::optional<std::string> stop_rule;  // the rule that fired (recorded in the study)
};
StrategyChoice strategy_suggestion(Study& study, const TuningPlan& plan, const StudyState& state,
                                   const TuneProgress& progress) {
  const int index = state.strategy_trials + plan.design_skip;
  StrategyChoice choice{plan.strategy.suggest(index, state.observations), std::nullopt};
  if (!choice.suggestion) return choice;
  if ((choice.stop_rule = stop_rule_before(plan, state, *choice.suggestion, index))) {
    study.set_meta("stop_rule", *choice.stop_rule);
    tell(progress, ExplorationStopped{*choice.stop_rule});
    choice.suggestion.reset();
  }
  return choice;
}

// An exploration trial (next.record.kind empty when exploration is over: budget spent, grid exhausted, a rule
// fired), and whether exploration has stopped early.
struct Exploration {
  NextTrial next;
  bool stopped = false;
};
Exploration choose_exploration(Study& study, const TuningPlan& plan, const StudyState& state,
                               const TuneProgress& progress) {
  Exploration out;
  out.stopped = state.stopped_by.has_value();
  if (out.stopped || state.explored >= plan.budget) return out;
  NextTrial& next = out.next;
  TrialRecord& record = next.record;
  const auto defaults = plan.space.defaults();
  if (plan.bayesian && defaults && !state.default_done) {
    record.kind = kKindDefault;  // the baseline every gain is against; the documented example's first trial
    record.values = *defaults;
  } else if (plan.bayesian && state.advice && !state.advice_done) {
    record.kind = kKindAdvice;  // what the analyzer advises on the defaults' trace: a first guess that often wins
    record.values = state.advice->values;
  } else if (state.screened) {
    record.kind = kKindPredicted;  // the replay model's pick from the best trial's trace
    record.values = state.screened->values;
  } else if (plan.bayesian && plan.warm.best && !state.warm_best_done) {
    record.kind = kKindWarmBest;
    record.values = plan.warm.best->values;
  } else if (plan.bayesian && state.strategy_trials + plan.design_skip >= plan.strategy.initial_design_size() &&
             !state.noise_done && !state.ranked.empty() && !estimate_noise(plan.space, state.history)) {
    record.kind = kKindNoiseRepeat;  // a deliberate repeat: how far apart two runs of one setting land
    record.values = state.ranked.front().values;
  } else {
    StrategyChoice choice = strategy_suggestion(study, plan, state, progress);
    out.stopped = choice.stop_rule.has_value();
    if ((next.suggestion = std::move(choice.suggestion))) {
      record.kind = next.suggestion->source;
      record.unit = next.suggestion->unit;
      record.values = next.suggestion->values.value_or(plan.space.to_values(next.suggestion->unit));
    }
  }
  return out;
}

// Confirmation: the best few distinct settings get extra runs, so a lucky noisy run does not win. Sets the next one
// that needs a run (none when all have theirs) and returns how many runs are left, this one included.
int choose_confirmation(const TuningPlan& plan, const StudyState& state, TrialRecord& record) {
  int confirm_left = 0;
  for (std::size_t i = 0; i < state.ranked.size() && static_cast<int>(i) < plan.confirm_top; ++i) {
    confirm_left += std::max(0, 1 + plan.confirm_repeats - state.ranked[i].runs);
    if (record.kind.empty() && state.ranked[i].runs < 1 + plan.confirm_repeats) {
      record.kind = kKindConfirm;
      record.values = state.ranked[i].values;
    }
  }
  return confirm_left;
}

std::string phase_of(const std::string& kind) {
  if (kind == kKindConfirm) return "confirming";
  if (kind == kKindNoiseRepeat) return "repeating the best to measure the noise";
  if (kind == kKindDefault) return "the job's defaults";
  if (kind == kKindAdvice) return "the analyzer's advice";
  if (kind == kKindPredicted) return "the replay model's pick";
  return "exploring";
}

// Trials this study will have run at the end, as far as is known now: what is done, this one, what is left of the
// exploration budget, the confirmation runs and the noise repeat.
int planned_trials(const TuningPlan& plan, const StudyState& state, const std::string& kind, int confirm_left,
                   bool stopped) {
  const bool counts_as_exploration = kind != kKindConfirm && kind != kKindNoiseRepeat;
  const int remaining_explore =
      stopped ? 0 : std::max(0, plan.budget - state.explored - (counts_as_exploration ? 1 : 0));
  return state.done + 1 + remaining_explore +
         (kind == kKindConfirm ? confirm_left - 1 : plan.confirm_top * plan.confirm_repeats) +
         (plan.bayesian && !state.noise_done && kind != kKindNoiseRepeat && !stopped ? 1 : 0);
}
// meta "advice": {"values": [...], "origin": "..."}, or {} when the defaults' trace advised nothing.
std::string advice_json(const std::optional<AdvisedSetting>& advice) {
  if (!advice) return "{}";
  return nlohmann::json{{"values", advice->values}, {"origin", advice->origin}}.dump();
}

std::optional<AdvisedSetting> parse_advice(const SearchSpace& space, const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("values") || !j["values"].is_array()) return std::nullopt;
  AdvisedSetting advice;
  for (const auto& v : j["values"]) {
    if (!v.is_string()) return std::nullopt;
    advice.values.push_back(v.get<std::string>());
  }
  if (advice.values.size() != space.knobs().size()) return std::nullopt;  // a hand-edited study: no advice
  advice.origin = j.value("origin", "");
  return advice;
}

// The trial that ran the job's defaults and succeeded; nullptr when none did.
const TrialRecord* successful_defaults(const StudyState& state) {
  for (const auto& t : state.history)
    if (t.kind == kKindDefault && t.status == TrialStatus::Ok && !t.dir.empty()) return &t;
  return nullptr;
}
}  // namespace

void ask_for_advice(Study& study, const TuningPlan& plan, StudyState& state, const TuneProgress& progress) {
  if (!plan.bayesian || state.advice_read || state.advice_done || !state.default_done) return;
  const TrialRecord* baseline = successful_defaults(state);
  if (baseline)
    state.advice =
        advice_from_trace(plan.space, (std::filesystem::path(baseline->dir) / "trace").string(), baseline->values);
  study.set_meta("advice", advice_json(state.advice));
  state.advice_read = true;
  if (state.advice) tell(progress, AdviceFound{state.advice->origin});
}

void screen_next_trial(Study& study, const TuningPlan& plan, StudyState& state, const TuneProgress& progress) {
  state.screened.reset();
  if (!plan.model_screening || state.stopped_by || state.explored >= plan.budget || !state.default_done) return;
  if (!state.advice_read || (state.advice && !state.advice_done)) return;  // the advice runs first
  if (state.ranked.empty()) return;
  // The best setting's latest successful run with a trace: the model is anchored on what was measured nearest.
  const TrialRecord* traced = nullptr;
  for (const auto& t : state.history) {
    const auto& ids = state.ranked.front().trial_ids;
    if (t.status == TrialStatus::Ok && !t.dir.empty() && std::find(ids.begin(), ids.end(), t.id) != ids.end())
      traced = &t;
  }
  if (!traced) return;
  std::vector<TriedSetting> tried;
  for (const auto& t : state.history)
    if (is_finished(t.status)) tried.push_back({t.values, t.status == TrialStatus::Ok ? t.score : std::nullopt});
  const Screening s = screen_with_model(plan.space, (std::filesystem::path(traced->dir) / "trace").string(),
                                        state.ranked.front().values, traced->id, tried, kMinPredictedGain);
  if (!s.usable) {
    // The strategy goes on, as without a model. Said once per trace: in meta, so that a resume does not repeat it.
    const std::string id = std::to_string(traced->id);
    if (study.meta("model_not_used_trial") != id) {
      study.set_meta("model_not_used_trial", id);
      tell(progress, ModelNotUsed{traced->id, s.why_not});
    }
    return;
  }
  std::optional<std::string> rule;
  if (state.predicted_done >= kMaxPredictedTrials)
    rule = fmt::format("the replay model's {} picks ran (the most it gets)", kMaxPredictedTrials);
  else if (!s.best)
    rule = fmt::format("the replay model of trial {}'s trace (the best so far) predicts none of {} untried settings "
                       "{:.0f} % better",
                       traced->id, s.candidates, 100 * kMinPredictedGain);
  if (rule) {
    study.set_meta("stop_rule", *rule);
    state.stopped_by = *rule;
    tell(progress, ExplorationStopped{*rule});
    return;
  }
  state.screened = s.best;
  tell(progress, ModelScreened{s.best->origin});
}

StudyState read_study_state(const Study& study, const TuningPlan& plan) {
  StudyState state;
  state.history = study.trials();
  state.observations = plan.warm.observations;
  for (auto& o : observations(plan.space, state.history)) state.observations.push_back(std::move(o));
  for (const auto& t : state.history) {
    if (!is_finished(t.status)) continue;
    ++state.done;
    state.walls.push_back(t.wall_s);
    if (is_strategy_kind(t.kind)) ++state.strategy_trials;
    state.default_done |= t.kind == kKindDefault;
    state.advice_done |= t.kind == kKindAdvice;
    state.warm_best_done |= t.kind == kKindWarmBest;
    if (t.kind == kKindPredicted) ++state.predicted_done;
    state.noise_done |= t.kind == kKindNoiseRepeat;
  }
  state.explored = state.strategy_trials + (state.default_done ? 1 : 0) + (state.advice_done ? 1 : 0) +
                   (state.warm_best_done ? 1 : 0) + state.predicted_done;
  if (const auto advice = study.meta("advice")) {
    state.advice_read = true;
    state.advice = parse_advice(plan.space, *advice);
  }
  state.stopped_by = study.meta("stop_rule");
  if (state.stopped_by && state.stopped_by->empty()) state.stopped_by.reset();
  state.ranked = ranked_settings(plan.space, state.history);
  return state;
}

std::optional<NextTrial> choose_next_trial(Study& study, const TuningPlan& plan, const StudyState& state,
                                           const TuneProgress& progress) {
  auto [next, stopped] = choose_exploration(study, plan, state, progress);
  TrialRecord& record = next.record;
  int confirm_left = 0;
  if (record.kind.empty()) {
    confirm_left = choose_confirmation(plan, state, record);
    if (record.kind.empty()) return std::nullopt;
  }
  // The batch size's memory limit: a setting above it is moved below it (a probe), not run to fail again.
  if (record.kind != kKindConfirm)
    next.batch_probe = keep_batch_below_limit(plan.space, batch_limit(plan.space, state.history), record.values);
  if (record.unit.empty() || !next.batch_probe.empty()) record.unit = plan.space.to_unit(record.values);
  next.counter = TrialCounter{state.done + 1, planned_trials(plan, state, record.kind, confirm_left, stopped),
                              phase_of(record.kind)};
  return next;
}

}  // namespace collscope::autotuner::detail
