#pragma once
// `collscope compare BASE NEW`: a CI verdict from two runs, judged over steps (Mann–Whitney U + effect size).
#include <collscope/analyzer/analysis.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace collscope::analyzer {

struct MetricComparison {
  std::string name;        // for machines: "step_time", "comm_time", "wall_time", "busbw:allreduce:1048576"
  std::string label;       // for people: "step time", "time in collectives", "busbw allreduce 1 MiB..2 MiB"
  std::string unit;        // "ms", "GB/s"
  bool higher_is_better = false;
  double base_median = 0, new_median = 0;
  double change = 0;        // how much worse, as a fraction: new/base − 1, or base/new − 1 when higher is better
  double p_value = 1;       // one-sided Mann–Whitney U (new worse than base)
  double effect_size = 0;   // rank-biserial correlation, > 0: new worse
  int base_samples = 0, new_samples = 0;
  bool gated = false;       // counts for the verdict
  bool regression = false;
  std::string no_data;      // why it could not be compared ("the new run has no steps (the base run has 40)"); "" when it was
  // new/base − 1: the change of the value itself, as people read "0.731 → 0.058 GB/s" (−92 %).
  double relative_change() const { return base_median != 0 ? new_median / base_median - 1 : 0; }
};

// A finding of one run that the other does not have, by identity (kind, ranks for a straggler, communicator).
struct FindingChange {
  std::string key;    // "straggler rank 1", "low_bandwidth on MPI_COMM_WORLD": the same in both runs
  FindingKind kind = FindingKind::Straggler;
  Severity severity = Severity::Info;
  std::string title;
};

struct Comparison {
  std::string base_dir, new_dir;
  double max_regression = 0.05;  // fraction
  bool gate_new_findings = true;  // a new finding (warning or critical) is a regression
  std::vector<MetricComparison> metrics;
  std::vector<FindingChange> findings_new, findings_gone;
  bool regression = false;        // a gated metric regressed, or a gated new finding
  std::string no_data;  // a gated metric without data in a run (its reason): the gate fails, as on a regression
  bool gate_failed() const { return regression || !no_data.empty(); }
  // The new findings that fail the comparison: warning or critical, when gate_new_findings.
  std::vector<const FindingChange*> failing_findings() const;
};

struct MannWhitneyResult {
  double u = 0;
  double p_greater = 1;  // P-value for "b tends to be larger than a"
  double effect_size = 0;  // rank-biserial: 2U/(n1 n2) − 1 for b over a
};
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Busbw is compared only for sizes from base.options.thresholds.bandwidth_min_bytes (below that, latency decides).
Comparison compare_analyses(const Analysis& base, const Analysis& next, double max_regression,
                            bool gate_new_findings = true);
// The same from the two runs' results alone (`collscope compare` keeps one run's events at a time: the base run's
// are freed before the new run is read, so its peak memory is one analysis's, not two).
Comparison compare_results(const RunResults& base, const std::string& base_dir, const RunResults& next,
                           const std::string& new_dir, double max_regression, bool gate_new_findings = true);
std::string comparison_text(const Comparison& c);
std::string comparison_markdown(const Comparison& c);
nlohmann::json comparison_json(const Comparison& c);
// One test case per gated metric, one for the time in collectives, one for busbw (all sizes) and one per finding
// kind: names that stay the same from run to run, so CI tracks each case's history.
std::string comparison_junit(const Comparison& c);

}  // namespace collscope::analyzer
