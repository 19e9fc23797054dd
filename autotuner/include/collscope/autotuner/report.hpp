#pragma once
// The study report: convergence (best so far vs trial) and per-knob effect (partial dependence from the
// GP fitted to all trials), as SVG files and one self-contained HTML page.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/study.hpp>

#include <string>
#include <vector>

namespace collscope::autotuner {

// Writes DIR/index.html, DIR/convergence.svg, DIR/effect-<knob>.svg. `notes`: lines for people under the best
// settings (the objective's source, the noise, the stop rule, the batch size: study_notes). Throws Error naming DIR.
void write_report(const SearchSpace& space, const std::vector<TrialRecord>& trials, const std::string& dir,
                  const std::string& title, const std::vector<std::string>& notes = {});

// Partial dependence of the GP mean on knob k: `points` values of k's unit coordinate, each averaged over
// `samples` random settings of the other knobs. Returns (unit, mean objective) pairs; empty without a model.
std::vector<std::pair<double, double>> partial_dependence(const SearchSpace& space, const std::vector<TrialRecord>& trials,
                                                          std::size_t knob, int points = 25, int samples = 64);

}  // namespace collscope::autotuner
