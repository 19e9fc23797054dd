#pragma once
// What the tuning loop (tuner.cpp) and the study's results (study_results.cpp) share. Internal to the autotuner.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/tuner.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace collscope::autotuner::detail {

inline double oriented(const Objective& o, double v) { return o.maximize ? v : -v; }

inline std::string format_score(double v, const std::string& unit) {
  return unit.empty() ? fmt::format("{:.6g}", v) : fmt::format("{:.6g} {}", v, unit);
}

// The unit of a study's scores: what the first score's source said (printed "img/s"), else the objective's.
std::string score_unit(const Study& study, const Objective& objective);

// Whether a trial's score counts toward its setting's mean: a successful run with a finite score whose values fit
// the space (Horovod's warm-up samples are discarded, as Horovod discards them).
bool scores_its_setting(const SearchSpace& space, const TrialRecord& t);

// Candidates for confirmation: distinct successful settings, best mean first (warm-up samples left out).
std::vector<BestSettings> ranked_settings(const SearchSpace& space, const std::vector<TrialRecord>& trials);

}  // namespace collscope::autotuner::detail
