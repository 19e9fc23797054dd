// What a knob's advice quotes for its effect: the replay model's predicted step (collscope predict), the one
// definition of a predicted step time (docs/design.md, "Predict").
#include "../lazy_replay_model.hpp"
#include "detector_support.hpp"

#include <collscope/predict/replay.hpp>
#include <collscope/run/format.hpp>

#include <fmt/format.h>

namespace collscope::analyzer {

const predict::ReplayModel* DetectorInput::replay() const { return replay_model ? replay_model->get() : nullptr; }

namespace detail {
namespace {

// Where the model cannot replay CPU sharing (docs/design.md, "Predict"), what its figure leaves out: on real
// Horovod 0.28.1 on 2 busy cores a 4.5-20 ms cycle gave 16-38 % shorter steps, nearly all from the CPU the polling
// thread gave back, where the replay without it predicted +1-2 %.
std::string cpu_caveat(const predict::ReplayModel& model) {
  if (!model.negotiates || model.cpu_sharing) return "";
  return " The replay leaves out the CPU that Horovod's background thread takes from the training thread while it "
         "polls in MPI (this trace has no scheduler counters on the training thread): where ranks share cores, a "
         "longer cycle gives more than that.";
}

}  // namespace

std::string predicted_step_clause(const DetectorInput& in, const predict::Change& change, Finding& f) {
  const predict::ReplayModel* model = in.replay();
  if (!model || !model->usable) return "";
  const predict::Prediction p = predict::predict(*model, change);
  if (!p.not_predicted.empty() || p.steps_replayed == 0 || !(p.baseline_step_ms > 0) || !(p.step_ms > 0)) return "";
  const double change_pct = 100 * (p.step_ms / p.baseline_step_ms - 1);
  f.evidence["predicted_step_ns"] = p.step_ms * 1e6;
  f.evidence["predicted_step_low_ns"] = p.step_low_ms * 1e6;
  f.evidence["predicted_step_high_ns"] = p.step_high_ms * 1e6;
  f.evidence["predicted_change_pct"] = change_pct;
  const std::string band = fmt::format("{} per step ({}–{})", run::format_ms(p.step_ms * 1e6),
                                       run::format_ms(p.step_low_ms * 1e6), run::format_ms(p.step_high_ms * 1e6));
  if (change_pct >= 0)
    return fmt::format(
        " The replay of this run (`collscope predict`) does not expect it to shorten the step here: {}, "
        "{:+.0f} % against the measured {}.{}",
        band, change_pct, run::format_ms(p.baseline_step_ms * 1e6), cpu_caveat(*model));
  const int steps = in.steps.measured_steps();
  return fmt::format(" The replay of this run (`collscope predict`) gives {}, {:+.0f} % against the measured {}{}.{}",
                     band, change_pct, run::format_ms(p.baseline_step_ms * 1e6),
                     steps > 0 ? fmt::format(": about {} over the {} measured steps",
                                             run::format_ms((p.baseline_step_ms - p.step_ms) * 1e6 * steps), steps)
                               : "",
                     cpu_caveat(*model));
}

}  // namespace detail
}  // namespace collscope::analyzer
