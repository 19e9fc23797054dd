#pragma once
// What the detectors share (internal to the analyzer): the common input and small helpers.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/findings.hpp>
#include <collscope/predict/replay.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace collscope::analyzer::detail {

inline std::int64_t next_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v && p < (std::int64_t{1} << 62)) p <<= 1;
  return p;
}

inline bool carries_payload(store::Op op) { return op != store::Op::Barrier && op != store::Op::Unknown; }

// P(X >= k) for X ~ Binomial(n, p): the sign test of a rank that stands out in k of n measured steps (the latest,
// the one most waited for) when every rank were equally likely to.
inline double binomial_tail(int k, int n, double p) {
  double sum = 0;
  for (int i = k; i <= n; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                    (n - i) * std::log1p(-p));
  return std::min(1.0, sum);
}

// The replay model's prediction of the run's median step under `change`, as one sentence for a knob's advice
// (" The replay of this run (`collscope predict`) gives 141.39 ms per step (...), -25 % against the measured ...").
// Adds its figures to f's evidence (predicted_step_ns, predicted_step_low_ns/_high_ns, predicted_change_pct). Empty
// when the run has no usable model or the model cannot predict the change: the advice then quotes no saving.
std::string predicted_step_clause(const DetectorInput& in, const predict::Change& change, Finding& f);

// A probability as people read it, never in scientific notation: "0.073", "< 0.001".
inline std::string format_chance(double p) { return p < 0.001 ? std::string("< 0.001") : fmt::format("{:.3f}", p); }

}  // namespace collscope::analyzer::detail
