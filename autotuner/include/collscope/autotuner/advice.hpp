#pragma once
// The analyzer's advice as a setting of a search space: the tuner's first candidate after the job's defaults. A
// finding advises a knob through its evidence ("suggested_cycle_time_ms"); a space knob takes the advice when it
// carries the environment variable the advice is for.
#include <collscope/analyzer/findings.hpp>
#include <collscope/autotuner/search_space.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::autotuner {

// Evidence keys of findings that advise a value, and the environment variable the value is for (the same unit).
struct AdvisedKnob {
  std::string_view evidence_key;
  std::string_view env;
};
// HOROVOD_FUSION_THRESHOLD in bytes, HOROVOD_CYCLE_TIME in milliseconds (latency_bound.cpp, fusion_cycle_time.cpp).
const std::vector<AdvisedKnob>& advised_knobs();

struct AdvisedSetting {
  Assignment values;   // the baseline with the advised knobs set, each snapped into the space
  std::string origin;  // for people: "latency_bound: HOROVOD_FUSION_THRESHOLD=1048576"
};

// The findings' advice on the knobs of `space`, the other knobs as in `baseline`. Where findings disagree on a knob,
// the one that would save the most time (cost_ns) decides. nullopt when no finding advises a knob the space has, or
// the advice snapped into the space is the baseline itself.
std::optional<AdvisedSetting> advised_setting(const SearchSpace& space, const std::vector<analyzer::Finding>& findings,
                                              const Assignment& baseline);

// The same from a trial's trace, analyzed here; nullopt also when the trace cannot be read.
std::optional<AdvisedSetting> advice_from_trace(const SearchSpace& space, const std::string& run_dir,
                                                const Assignment& baseline);

}  // namespace collscope::autotuner
