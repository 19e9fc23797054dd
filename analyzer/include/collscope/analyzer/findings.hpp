#pragma once
// Findings: what slows the job, with evidence in numbers, the time it cost and what to change.
#include <collscope/analyzer/run_model.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::analyzer {

enum class FindingKind {
  Straggler,
  LatencyBound,
  LowBandwidth,
  ExposedCommunication,
  UnderfilledFusion,
  CycleTimeStall,
  ProcessSetImbalance,
  Mismatch,
};
std::string_view finding_kind_name(FindingKind k);  // "straggler", "latency_bound", ...

enum class Severity { Info = 0, Warning = 1, Critical = 2 };
std::string_view severity_name(Severity s);

struct Finding {
  FindingKind kind = FindingKind::Straggler;
  Severity severity = Severity::Info;
  std::string title;                     // one line
  std::vector<int> ranks;                // world ranks concerned
  std::optional<std::uint64_t> comm_key; // communicator concerned
  std::string comm_name;
  std::optional<std::int64_t> seq;       // collective concerned (mismatch)
  std::map<std::string, double> evidence;  // numbers behind it (units in the key: "_ns", "_gbps", "_bytes", "_pct")
  std::string evidence_text;             // the same in a sentence
  double cost_ns = 0;                    // estimated time the job would save (wall clock)
  std::string suggestion;                // what to change
};

struct AnalysisOptions {
  double link_gbps = 0;          // expected bus bandwidth (GB/s); 0 = compare with the best seen only
  std::int64_t batch_size = 0;   // samples per rank per step; 0 = from the command line ("--batch-size N") if any
  int threads = 0;               // loader threads, 0 = one per core
};

// Each detector looks at one thing; run them all with detect_findings.
std::vector<Finding> detect_stragglers(const Run&, const MatchedRun&, const StepSummary&);
std::vector<Finding> detect_latency_bound(const Run&, const MatchedRun&, const StepSummary&);
std::vector<Finding> detect_low_bandwidth(const Run&, const MatchedRun&, const AnalysisOptions&);
std::vector<Finding> detect_exposed_communication(const Run&, const StepSummary&);
std::vector<Finding> detect_fusion_and_cycle_time(const Run&, const MatchedRun&, const StepSummary&);
std::vector<Finding> detect_process_set_imbalance(const Run&, const MatchedRun&);
// From the calls in flight when a hung job was killed (part of detect_mismatches); step_evidence names the
// culprit of a deadlock cycle when the NVTX steps show one.
std::vector<Finding> detect_hangs(const Run&, const MatchedRun&, const std::vector<Mismatch>& step_evidence);
std::vector<Finding> detect_mismatches(const Run&, const MatchedRun&);

// All detectors, ordered by cost (mismatches first: they hang jobs).
std::vector<Finding> detect_findings(const Run&, const MatchedRun&, const StepSummary&, const AnalysisOptions&);

}  // namespace collscope::analyzer
