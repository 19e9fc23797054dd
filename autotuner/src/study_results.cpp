// What a study says: its best settings, its observations for the model, its notes, `tune show`, --export-env.
#include <collscope/autotuner/search_rules.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "tuner_support.hpp"

namespace collscope::autotuner {
namespace detail {

std::string score_unit(const Study& study, const Objective& objective) {
  if (auto u = study.meta("objective_unit"); u && !u->empty()) return *u;
  return objective.unit;
}


bool scores_its_setting(const SearchSpace& space, const TrialRecord& t) {
  // A row whose values do not fit the space, or a score that is no number, is no candidate (older or edited studies).
  return t.status == TrialStatus::Ok && t.kind != kKindWarmup && t.score && std::isfinite(*t.score) &&
         t.values.size() == space.knobs().size();
}

std::vector<BestSettings> ranked_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::map<Assignment, BestSettings> by_values;
  for (const auto& t : trials) {
    if (!scores_its_setting(space, t)) continue;
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

namespace {
// `v` in single quotes for a POSIX shell: nothing inside is expanded; a quote is closed, escaped and reopened.
std::string shell_quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace
}  // namespace detail

using namespace detail;

std::optional<BestSettings> best_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  auto ranked = ranked_settings(space, trials);
  if (ranked.empty()) return std::nullopt;
  return ranked.front();
}

std::vector<std::optional<double>> best_mean_after_each(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  // Settings ordered as ranked_settings() orders them (higher oriented mean, then more runs); a setting's entry is
  // replaced when another run of it changes its mean, so each trial costs a logarithm, not a re-ranking.
  struct Sum {
    double total = 0;  // objective units
    int runs = 0;
  };
  const Objective& o = space.objective();
  std::map<Assignment, Sum> sums;
  std::set<std::tuple<double, int, Assignment>> ranked;  // (oriented mean, runs, values), best last
  std::vector<std::optional<double>> out;
  out.reserve(trials.size());
  for (const auto& t : trials) {
    if (scores_its_setting(space, t)) {
      Sum& s = sums[t.values];
      if (s.runs > 0) ranked.erase({oriented(o, s.total / s.runs), s.runs, t.values});
      s.total += *t.score;
      ++s.runs;
      ranked.insert({oriented(o, s.total / s.runs), s.runs, t.values});
    }
    if (ranked.empty()) out.push_back(std::nullopt);
    else out.push_back(oriented(o, std::get<0>(*ranked.rbegin())));  // oriented() is its own inverse
  }
  return out;
}

std::vector<Observation> observations(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::vector<Observation> out;
  for (const auto& t : trials) {
    if (!is_finished(t.status) || t.kind == kKindWarmup || t.unit.size() != space.dimensions()) continue;
    Observation o{t.unit, std::nullopt, t.values};
    if (keeps_score(t.status) && t.score && std::isfinite(*t.score))
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
  store::write_output_file(path, [&](std::ostream& out) {
    out << fmt::format("# collscope tune: best settings, mean {} over {} run(s)\n",
                       format_score(best.mean_score, space.objective().unit), best.runs);
    for (std::size_t i = 0; i < space.knobs().size(); ++i) {
      const Knob& k = space.knobs()[i];
      if (k.env) out << "export " << *k.env << "=" << shell_quote(best.values[i]) << "\n";
      else
        out << "# " << k.name << "=" << shell_quote(best.values[i]) << " (passed as {" << k.name
            << "} in the command)\n";
    }
  });
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
  return effective_space(study, SearchSpace::parse(study.meta("space").value_or(""), study.path() + " (stored space)"));
}

SearchSpace effective_space(const Study& study, SearchSpace space) {
  if (study.meta("fixed_batch").value_or("") == "1") return space.with_knob_fixed(space.objective().batch_size);
  return space;
}

std::vector<std::string> study_notes(const Study& study, const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  std::vector<std::string> notes;
  const std::string unit = score_unit(study, space.objective());
  if (const auto best = best_settings(space, trials)) {
    for (const auto& t : trials)
      if (t.id == best->trial_ids.front() && !t.source.empty())
        notes.push_back(fmt::format("Objective: {} from {}.", unit.empty() ? "the score" : unit, t.source));
  }
  if (const auto noise = estimate_noise(space, trials))
    notes.push_back(fmt::format("Noise: one run's score varies by {} ({:.1f} %), from {} setting(s) run {} times in all.",
                                format_score(noise->sd, unit), 100 * noise->relative, noise->settings, noise->runs));
  if (auto stop = study.meta("stop_rule"); stop && !stop->empty()) notes.push_back("Stopped exploring: " + *stop + ".");
  const auto best = best_settings(space, trials);
  const std::string batch = batch_note(space, batch_limit(space, trials), best ? best->values : Assignment{});
  if (!batch.empty()) notes.push_back(batch);
  return notes;
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
    std::string line = fmt::format("{:>4}  {:<20}  {:<11}  {:>14}  {:>7.2f}", t.id, t.kind.substr(0, 20), trial_status_name(t.status),
                                   t.score ? fmt::format("{:.6g}", *t.score) : "-", t.wall_s);
    for (const auto& v : t.values) line += fmt::format("  {:>12}", v);
    out << line << "  " << t.reason << "\n";
  }
  if (const auto best = best_settings(space, trials)) {
    out << fmt::format("best: {} (mean of {} run(s), trials {}): {}\n", space.describe(best->values), best->runs,
                       fmt::join(best->trial_ids, ","), format_score(best->mean_score, score_unit(study, space.objective())));
  } else {
    out << "best: none (no trial succeeded)\n";
  }
  for (const auto& note : study_notes(study, space, trials)) out << note << "\n";
}

}  // namespace collscope::autotuner
