#pragma once
// The replay model (collscope predict) as the tuner's screen: from the best trial's trace, the untried setting of
// the space it predicts best, among a grid over the knobs it can change (HOROVOD_FUSION_THRESHOLD,
// HOROVOD_CYCLE_TIME, the objective's batch size), the other knobs as in that trial. The tuner runs it for real; each
// real run refines the model: a prediction is scaled by what real runs near it measured against their own
// predictions (measured / predicted, weighted by nearness on the unit cube), so a region the model overrated is not
// proposed again, and a run that becomes the best anchors the next screen on its own trace.
#include <collscope/autotuner/search_space.hpp>

#include <optional>
#include <string>
#include <vector>

namespace collscope::autotuner {

// What the model predicts best, with its gain over the traced trial's measured score (a fraction, oriented: 0.2 =
// 20 % better: more samples/s, or a shorter step for a step-time objective).
struct ScreenedSetting {
  Assignment values;
  double predicted_gain = 0;
  std::string origin;  // for people: "cycle_time_ms=9.6: predicted +22 % samples/s over trial 2"
};

// A setting run for real: its measured score (objective units, as the study records it), none when it failed.
struct TriedSetting {
  Assignment values;
  std::optional<double> score;
};

struct Screening {
  bool usable = false;                  // the model replays this trace and changes at least one of the space's knobs
  std::string why_not;                  // one line when !usable
  std::optional<ScreenedSetting> best;  // the best untried setting predicted at least `min_gain` better; else none
  int candidates = 0;                   // settings predicted
};

// Screens the grid from the trace in `run_dir` (the trial that ran `traced`, numbered `trial_id` for people).
// `tried`: every run so far, `traced` among them with a score (never proposed again; their scores refine the
// predictions). Never throws: an unreadable trace is !usable.
Screening screen_with_model(const SearchSpace& space, const std::string& run_dir, const Assignment& traced,
                            int trial_id, const std::vector<TriedSetting>& tried, double min_gain);

}  // namespace collscope::autotuner
