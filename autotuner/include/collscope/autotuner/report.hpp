#pragma once
// The study report: convergence (best so far vs trial) and per-knob effect (the GP fitted to all trials, with
// its uncertainty), as SVG files and one self-contained HTML page.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/study.hpp>

#include <string>
#include <vector>

namespace collscope::autotuner {

// Writes DIR/index.html, DIR/convergence.svg, DIR/effect-<knob>.svg. Throws Error naming DIR on failure.
void write_report(const SearchSpace& space, const std::vector<TrialRecord>& trials, const std::string& dir,
                  const std::string& title);

// What the GP fitted to all trials expects along knob k with every other knob at the best settings: `points`
// values across k's range (every level of a categorical or small integer knob), in the objective's own units and
// direction. Empty when fewer than two trials were scored.
struct KnobEffect {
  std::vector<std::string> values;  // k's values, as the job reads them
  std::vector<double> mean, sd;     // posterior mean and standard deviation
  std::string best_value;           // k at the best settings
};
KnobEffect knob_effect(const SearchSpace& space, const std::vector<TrialRecord>& trials, std::size_t knob,
                       int points = 41);

}  // namespace collscope::autotuner
