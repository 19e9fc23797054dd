// Findings: kinds, severities and the list of detectors (each in its own file under src/detectors/).
#include <collscope/analyzer/findings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <regex>


namespace collscope::analyzer {

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::Straggler: return "straggler";
    case FindingKind::LatencyBound: return "latency_bound";
    case FindingKind::LowBandwidth: return "low_bandwidth";
    case FindingKind::ExposedCommunication: return "exposed_communication";
    case FindingKind::UnderfilledFusion: return "underfilled_fusion";
    case FindingKind::CycleTimeStall: return "cycle_time_stall";
    case FindingKind::ProcessSetImbalance: return "process_set_imbalance";
    case FindingKind::Mismatch: return "mismatch";
    case FindingKind::Stall: return "stall";
    case FindingKind::PointToPointWait: return "point_to_point_wait";
    case FindingKind::FrameworkSetting: return "framework_setting";
    case FindingKind::SlowSteps: return "slow_steps";
    case FindingKind::CpuContention: return "cpu_contention";
  }
  return "unknown";
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "info";
}


namespace {

// The detectors, in one list: adding one is a file in src/detectors/ and a line here.
constexpr std::vector<Finding> (*kDetectors[])(const DetectorInput&) = {
    detect_mismatches,           detect_stragglers,            detect_latency_bound,
    detect_low_bandwidth,        detect_exposed_communication, detect_fusion_and_cycle_time,
    detect_process_set_imbalance, detect_stall,                 detect_point_to_point_waits,
    detect_ddp_buckets,          detect_ddp_knobs,             detect_slow_steps,
    detect_cpu_contention,
};

}  // namespace

std::vector<Finding> detect_findings(const DetectorInput& input) {
  std::vector<Finding> all;
  for (const auto detector : kDetectors) {
    auto found = detector(input);
    all.insert(all.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  // A DDP job whose torch threads outnumber its CPUs gets that finding (the knob and its value) in place of the
  // general one on CPU contention: one cause, said once, with the advice that names the setting.
  const bool torch_threads = std::any_of(all.begin(), all.end(), [](const Finding& f) {
    return f.kind == FindingKind::FrameworkSetting && f.evidence.contains("torch_threads_on_host");
  });
  if (torch_threads)
    std::erase_if(all, [](const Finding& f) { return f.kind == FindingKind::CpuContention; });
  std::stable_sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    const bool am = a.kind == FindingKind::Mismatch || a.kind == FindingKind::Stall,
               bm = b.kind == FindingKind::Mismatch || b.kind == FindingKind::Stall;
    if (am != bm) return am;
    return a.cost_ns > b.cost_ns;
  });
  return all;
}

}  // namespace collscope::analyzer
