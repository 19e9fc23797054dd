// The analyzer's advice as the tuner's first candidate after the job's defaults (advice.hpp).
#include <collscope/analyzer/analysis.hpp>
#include <collscope/autotuner/advice.hpp>
#include <collscope/run/job_settings.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace collscope::autotuner {

const std::vector<AdvisedKnob>& advised_knobs() {
  static const std::vector<AdvisedKnob> knobs = {
      {"suggested_fusion_threshold_bytes", run::horovod_env::kFusionThreshold},
      {"suggested_cycle_time_ms", run::horovod_env::kCycleTime},
  };
  return knobs;
}

namespace {
// The index of the knob that carries environment variable `env`; -1 when none does.
int knob_with_env(const SearchSpace& space, std::string_view env) {
  for (std::size_t i = 0; i < space.knobs().size(); ++i)
    if (space.knobs()[i].env && *space.knobs()[i].env == env) return static_cast<int>(i);
  return -1;
}

// The finding that advises `key` and would save the most time; nullptr when none does.
const analyzer::Finding* strongest_advice(const std::vector<analyzer::Finding>& findings, std::string_view key) {
  const analyzer::Finding* best = nullptr;
  for (const auto& f : findings)
    if (f.evidence.contains(std::string(key)) && (!best || f.cost_ns > best->cost_ns)) best = &f;
  return best;
}
}  // namespace

std::optional<AdvisedSetting> advised_setting(const SearchSpace& space, const std::vector<analyzer::Finding>& findings,
                                              const Assignment& baseline) {
  AdvisedSetting advice{baseline, ""};
  for (const auto& [key, env] : advised_knobs()) {
    const int k = knob_with_env(space, env);
    const analyzer::Finding* f = k < 0 ? nullptr : strongest_advice(findings, key);
    if (!f) continue;
    const auto value = space.nearest_value(static_cast<std::size_t>(k), f->evidence.at(std::string(key)));
    if (!value || *value == baseline[static_cast<std::size_t>(k)]) continue;
    advice.values[static_cast<std::size_t>(k)] = *value;
    advice.origin += fmt::format("{}{}: {}={}", advice.origin.empty() ? "" : "; ", analyzer::finding_kind_name(f->kind),
                                 env, *value);
  }
  if (advice.values == baseline) return std::nullopt;
  return advice;
}

std::optional<AdvisedSetting> advice_from_trace(const SearchSpace& space, const std::string& run_dir,
                                                const Assignment& baseline) {
  try {
    return advised_setting(space, analyzer::analyze_run(run_dir).findings, baseline);
  } catch (const std::exception&) {
    return std::nullopt;  // no readable trace (a job the tracer saw nothing of): no advice
  }
}

}  // namespace collscope::autotuner
