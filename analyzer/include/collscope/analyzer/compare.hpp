#pragma once
// `collscope compare BASE NEW`: a CI verdict from two runs, judged over steps (Mann–Whitney U + effect size).
#include <collscope/analyzer/analysis.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace collscope::analyzer {

struct MetricComparison {
  std::string name;        // "step_time", "comm_time", "busbw allreduce 1MiB"
  std::string unit;        // "ms", "GB/s"
  bool higher_is_better = false;
  double base_median = 0, new_median = 0;
  double change = 0;        // new/base − 1, signed so that > 0 is worse
  double p_value = 1;       // one-sided Mann–Whitney U (new worse than base)
  double effect_size = 0;   // rank-biserial correlation, > 0: new worse
  int base_samples = 0, new_samples = 0;
  bool gated = false;       // counts for the verdict
  bool regression = false;
  std::string no_data;      // why it could not be compared ("the new run has no steps (the base run has 40)"); "" when it was
};

struct Comparison {
  std::string base_dir, new_dir;
  double max_regression = 0.05;  // fraction
  std::vector<MetricComparison> metrics;
  std::vector<std::string> findings_new, findings_gone;  // "straggler rank 1"
  bool regression = false;
  std::string no_data;  // a gated metric without data in a run (its reason): the gate fails, as on a regression
  bool gate_failed() const { return regression || !no_data.empty(); }
};

struct MannWhitneyResult {
  double u = 0;
  double p_greater = 1;  // P-value for "b tends to be larger than a"
  double effect_size = 0;  // rank-biserial: 2U/(n1 n2) − 1 for b over a
};
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

Comparison compare_analyses(const Analysis& base, const Analysis& next, double max_regression);
std::string comparison_text(const Comparison& c);
std::string comparison_markdown(const Comparison& c);
nlohmann::json comparison_json(const Comparison& c);
std::string comparison_junit(const Comparison& c);

}  // namespace collscope::analyzer
