#pragma once
// What the detectors share (internal to the analyzer): the common input and small helpers.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/findings.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace collscope::analyzer::detail {

inline std::int64_t next_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v && p < (std::int64_t{1} << 62)) p <<= 1;
  return p;
}

// Aligned first arrival to last completion over all matched instances (ns).
inline double run_wall_ns(const MatchedRun& m) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& i : m.instances) lo = std::min(lo, i.first_arrival_ns), hi = std::max(hi, i.last_completion_ns);
  return hi > lo ? double(hi - lo) : 0.0;
}

inline bool carries_payload(store::Op op) { return op != store::Op::Barrier && op != store::Op::Unknown; }

// The fusion threshold of the job (bytes): env HOROVOD_FUSION_THRESHOLD, else "--fusion-threshold N" on its
// command line; nullopt when neither says (or the number does not fit 64 bits).
inline std::optional<std::int64_t> fusion_threshold_of(const Run& run) {
  if (auto v = run.env_int("HOROVOD_FUSION_THRESHOLD")) return v;
  return command_line_int(run, "fusion-threshold");
}

// Horovod's tuning knobs as they were in effect: the job's environment, else Horovod's defaults for its version
// (0.21 changed them: fusion threshold 64 → 128 MiB, cycle time 5 → 1 ms). An unset knob is its default, never
// "unknown": advice must not recommend the value already in effect.
struct HorovodKnobs {
  std::int64_t fusion_threshold_bytes = 128 << 20;
  double cycle_time_ms = 1;
  bool threshold_set = false, cycle_set = false;  // from the job's environment or command line
  std::string defaults_text;  // "Horovod 0.28.1 defaults", "Horovod defaults (0.21 and later; version not recorded)"
};

// Horovod "major.minor[.patch]" → (major, minor); (0, 21) when unknown (assume current defaults).
inline std::pair<int, int> horovod_release(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {0, 21};
  return {major, minor};
}

inline HorovodKnobs horovod_knobs(const Run& run, const run::Workload& workload) {
  HorovodKnobs k;
  const bool old = horovod_release(workload.horovod_version) < std::pair(0, 21);
  k.fusion_threshold_bytes = old ? std::int64_t{64} << 20 : std::int64_t{128} << 20;
  k.cycle_time_ms = old ? 5 : 1;
  k.defaults_text = workload.horovod_version.empty()
                        ? "Horovod's defaults (0.21 and later; the trace does not record the version)"
                        : fmt::format("the defaults of Horovod {}", workload.horovod_version);
  if (auto t = fusion_threshold_of(run)) k.fusion_threshold_bytes = *t, k.threshold_set = true;
  if (auto c = run.env("HOROVOD_CYCLE_TIME")) {
    try {
      k.cycle_time_ms = std::stod(*c);  // milliseconds (Horovod's unit)
      k.cycle_set = true;
    } catch (const std::exception&) {
    }
  }
  return k;
}

// Whether a run's knobs are Horovod's: a Horovod job, or one that sets them (the sample, which mimics Horovod).
inline bool horovod_knobs_apply(const Run& run, const run::Workload& workload) {
  return workload.horovod || fusion_threshold_of(run).has_value() || run.env("HOROVOD_CYCLE_TIME").has_value();
}

}  // namespace collscope::analyzer::detail
