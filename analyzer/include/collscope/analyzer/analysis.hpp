#pragma once
// The whole pipeline: load → align clocks → match → steps → metrics → findings. What reports and the
// autotuner consume.
#include <collscope/analyzer/run_model.hpp>
#include <collscope/analyzer/findings.hpp>
#include <collscope/run/point_to_point.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::analyzer {

// Aggregate per (op, power-of-two size bucket): for "busbw vs message size" and compare.
struct OpSizeStats {
  store::Op op = store::Op::Unknown;
  std::int64_t size_bucket_bytes = 0;  // lower bound: 2^k
  std::int64_t min_bytes = 0, max_bytes = 0;  // the sizes actually seen in the bucket (reports show these)
  std::int64_t instances = 0;
  double total_duration_ns = 0;
  double median_busbw_gbps = 0;
  double best_busbw_gbps = 0;  // the 95th percentile (run::p95_of_sorted), as in the findings
  std::vector<double> busbw_samples;  // up to 256, for compare's statistics
};

// What the analysis adds to a run already loaded, aligned and matched.
struct RunResults {
  AnalysisOptions options;  // what it ran with (the reports draw options.link_gbps)
  StepSummary steps;
  Lateness lateness;  // who is late and who waits, per step and rank (the one definition, run/lateness.hpp)
  std::vector<OpSizeStats> op_sizes;
  run::PointToPointSummary point_to_point;  // time, waits, messages per rank and pair, message sizes
  std::vector<Finding> findings;
  // Statements that are not findings: what the trace lacks and why (a rank's file cut short by a kill), one line
  // each, printed under the summary.
  std::vector<std::string> notes;
  double wall_ns = 0;       // MatchedRun::wall_ns: first entry to last exit of any MPI call, aligned
  double comm_ns = 0;       // mean over ranks: time inside collectives (point-to-point: point_to_point)
  double analysis_seconds = 0;
};

// A run with everything the analysis found in it (analysis_seconds counts the alignment and matching too).
struct Analysis : RunResults {
  Run run;
  ClockAlignment clocks;
  MatchedRun matched;
};

Analysis analyze_run(const std::string& run_dir, const AnalysisOptions& options = {});
Analysis analyze(Run run, const AnalysisOptions& options = {});
// The same analysis on a run its caller already aligned and matched with collscope::run, and keeps (the viewer:
// it reads each rank file once and draws from the same run and matching). `options.threads` is not used.
RunResults analyze_matched(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched,
                           const AnalysisOptions& options = {});

}  // namespace collscope::analyzer
