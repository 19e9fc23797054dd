#pragma once
// The run's replay model (collscope predict), built the first time a detector asks for it: only knob advice quotes
// its predicted step, and most runs get none. Building it eagerly for every Horovod run cost nothing measurable on
// analyzer_bench (10.24 M collectives, 64 ranks: 6.9-7.5 s eager, 6.6-8.0 s lazy, docs/performance.md), so this is
// for the runs it need not read at all. Internal to the analyzer; detectors reach it through
// DetectorInput::replay().
#include <collscope/analyzer/run_model.hpp>
#include <collscope/predict/replay.hpp>

#include <optional>

namespace collscope::analyzer {

class LazyReplayModel {
 public:
  LazyReplayModel(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched, const StepSummary& steps)
      : run_(run), clocks_(clocks), matched_(matched), steps_(steps) {}
  // The model, or nullptr where it cannot be built (no steps). Not thread-safe: the detectors run one after another.
  const predict::ReplayModel* get() const {
    if (!built_) {
      built_ = true;
      if (!steps_.steps.empty()) model_ = predict::build_model(run_, clocks_, matched_, steps_);
    }
    return model_ ? &*model_ : nullptr;
  }
  bool built() const { return built_; }

 private:
  const Run& run_;
  const ClockAlignment& clocks_;
  const MatchedRun& matched_;
  const StepSummary& steps_;
  mutable bool built_ = false;
  mutable std::optional<predict::ReplayModel> model_;
};

}  // namespace collscope::analyzer
