// Low bandwidth: a size of a collective on a communicator reaching far less bus bandwidth than the link or its own best.
#include "detector_support.hpp"

#include <collscope/run/format.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {

using detail::carries_payload;

std::vector<Finding> detect_low_bandwidth(const DetectorInput& in) {
  const Run& run = in.run;
  const MatchedRun& m = in.matched;
  const AnalysisOptions& options = in.options;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  struct Bucket {
    std::vector<double> busbw;
    std::vector<double> durations;  // ns, per instance (parallel to busbw)
    double duration = 0;
    std::int64_t bytes = 0, min_bytes = INT64_MAX;
  };
  std::map<std::tuple<int, int, int>, Bucket> buckets;  // (comm, op, log2 bytes)
  double total_ns = 0;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || !carries_payload(i.op) || i.duration_ns <= 0 || run::is_nonblocking(i.op)) continue;
    total_ns += double(i.duration_ns);
    if (i.bytes < limits.bandwidth_min_bytes) continue;
    auto& b = buckets[{i.comm, static_cast<int>(i.op), static_cast<int>(std::log2(double(i.bytes)))}];
    b.busbw.push_back(i.busbw_gbps());
    b.durations.push_back(double(i.duration_ns));
    b.duration += double(i.duration_ns);
    b.bytes = std::max(b.bytes, i.bytes);
    b.min_bytes = std::min(b.min_bytes, i.bytes);
  }
  for (auto& [key, b] : buckets) {
    if (b.busbw.size() < static_cast<std::size_t>(limits.bandwidth_min_instances)) continue;
    auto sorted = b.busbw;
    std::sort(sorted.begin(), sorted.end());
    const double best = run::p95_of_sorted(sorted);  // p95: the best this size reaches here, not one outlier
    const double median = sorted[sorted.size() / 2];
    const auto [comm, op, log2bytes] = key;
    const auto& cname = run.communicators[comm].name;  // the finding's key (compare matches findings by it)
    const auto& shown = run.communicators[comm].shown_name();
    const double link = options.link_gbps;
    const bool below_link = link > 0 && b.bytes >= (1 << 20) && median < limits.bandwidth_low_fraction * link;
    const bool below_best = median < limits.bandwidth_low_fraction * best;
    if (!below_link && !below_best) continue;
    const double target = below_link ? link : best;
    // Time above what the target bandwidth would have taken, instance by instance: a slow instance is also a
    // long one, so weighting by the bucket's mean duration would undercount it.
    double cost = 0;
    for (std::size_t k = 0; k < b.busbw.size(); ++k)
      if (b.busbw[k] < target) cost += (1.0 - b.busbw[k] / target) * b.durations[k];
    if (cost < limits.bandwidth_min_cost_share * total_ns || cost < limits.bandwidth_min_cost_ns) continue;
    Finding f;
    f.kind = FindingKind::LowBandwidth;
    f.severity = Severity::Warning;
    f.comm_key = run.communicators[comm].key;
    f.comm_name = cname;
    f.ranks = run.communicators[comm].members;
    // The sizes seen, never the bucket's power-of-two bounds.
    const std::string size = b.min_bytes == b.bytes ? format_bytes(double(b.bytes))
                                                    : format_bytes(double(b.min_bytes)) + "–" + format_bytes(double(b.bytes));
    // Bandwidths through run::format_bandwidth, the one format (a slow small call reads "512 kB/s", not "0.00 GB/s").
    f.title = fmt::format("{} of {} on {} reach {} bus bandwidth (median), {} {}",
                          store::op_name(static_cast<store::Op>(op)), size, shown.empty() ? "comm" : shown,
                          run::format_bandwidth(median), below_link ? "link" : "best seen (p95)", run::format_bandwidth(target));
    f.cost_ns = cost;
    f.evidence = {{"median_busbw_gbps", median}, {"best_busbw_gbps", best}, {"instances", double(b.busbw.size())},
                  {"time_ns", b.duration}, {"size_bucket_bytes", std::ldexp(1.0, log2bytes)}};
    if (link > 0) f.evidence["link_gbps"] = link;
    f.evidence_text = fmt::format("{} instances, median busbw {}, p95 {}{}; {} spent in them.", b.busbw.size(),
                                  run::format_bandwidth(median), run::format_bandwidth(best),
                                  link > 0 ? ", link " + run::format_bandwidth(link) : "", format_ms(b.duration));
    // Knobs of the backend the communicator uses: NCCL's for NCCL communicators, the MPI library's for MPI ones,
    // gloo's (its transport) for torch.distributed groups on gloo; none for a custom backend.
    const store::Backend backend = run.communicators[comm].backend;
    const bool nccl = backend == store::Backend::Nccl;
    const auto workload = run::describe_workload(run);
    const bool mpich = workload.mpi_library.find("MPICH") != std::string::npos;
    const std::string mpi_knobs =
        mpich ? "MPICH's algorithm for it (MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM and its siblings)"
              : "Open MPI's algorithm for it (--mca coll_tuned_use_dynamic_rules 1 with coll_tuned_<op>_algorithm), the "
                "transport (--mca btl / pml)";
    if (backend == store::Backend::Gloo || backend == store::Backend::Torch)
      f.suggestion = fmt::format(
          "{}look for contention (other jobs, more busy threads than cores: torch.set_num_threads against the "
          "cores per rank){}.",
          below_link ? "" : "The same size sometimes runs much faster: ",
          backend == store::Backend::Gloo ? "; gloo's transport is the network interface it picked "
                                            "(GLOO_SOCKET_IFNAME names the one to use)"
                                          : "");
    else if (nccl)
      f.suggestion = below_link
                         ? "Check the transport actually used (NCCL_DEBUG=INFO: IB/NVLink vs sockets, NCCL_IB_HCA, "
                           "NCCL_SOCKET_IFNAME), NIC/GPU affinity and NCCL_ALGO/NCCL_PROTO for this size."
                         : "The same size sometimes runs much faster: look for contention (other jobs, concurrent "
                           "collectives on other communicators) and pin NCCL_ALGO/NCCL_PROTO for this size.";
    else
      f.suggestion = below_link
                         ? "Check the transport the MPI library uses (shared memory, TCP or the fast network) and " +
                               mpi_knobs + ", and the ranks' placement and binding."
                         : "The same size sometimes runs much faster: look for contention (other jobs, concurrent "
                           "collectives on other communicators, more busy threads than cores: busy-polling ranks and "
                           "the job's own threads share them) before tuning " + mpi_knobs + ".";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace collscope::analyzer
