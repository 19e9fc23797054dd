#pragma once
// A synthetic run with a known ground truth, written with the real TraceWriter: used by the viewer's
// tests and benchmark. Every step: compute, then `collectives_per_step` world collectives (allreduce, and a
// bcast every fourth), each rank's GPU kernels on one stream, NVTX "step" ranges on the main thread.
// Arrivals are exact: rank `late_rank` arrives `late_ns` late at every collective with seq % late_every == 0,
// so the wait of every other rank there is exactly late_ns; all ranks leave at last arrival + transfer_ns.
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <filesystem>
#include <string>

namespace collscope::gui::synthetic {

struct Spec {
  int ranks = 3;
  int ranks_per_host = 2;          // hosts "node0", "node1", ...
  bool hosts_round_robin = false;  // rank r on host r % hosts instead of r / ranks_per_host
  int steps = 10;
  int collectives_per_step = 4;
  int kernels_per_step = 4;        // GPU activities per rank per step
  std::int64_t compute_ns = 2'000'000;
  std::int64_t collective_gap_ns = 50'000;   // between the end of one collective and the next arrival
  std::int64_t transfer_ns = 200'000;
  std::int64_t bytes = 1 << 20;
  int late_rank = 2;
  std::int64_t late_ns = 1'000'000;
  int late_every = 4;              // seq % late_every == 0
  std::int64_t fusion_buffer_bytes = 4 << 20;  // collectives send from one reused buffer of this capacity
  std::int64_t base_ns = 1'000'000'000;        // CLOCK_MONOTONIC of the first step
};

inline std::int64_t step_ns(const Spec& s) {
  return s.compute_ns + s.collectives_per_step * (s.late_ns + s.transfer_ns + s.collective_gap_ns);
}

// Arrival (call entry) of `rank` at the k-th collective of step `step`, CLOCK_MONOTONIC ns.
inline std::int64_t arrival_ns(const Spec& s, int rank, int step, int k) {
  const std::int64_t seq = static_cast<std::int64_t>(step) * s.collectives_per_step + k;
  const std::int64_t slot = s.base_ns + step * step_ns(s) + s.compute_ns + k * (s.late_ns + s.transfer_ns + s.collective_gap_ns);
  return slot + (rank == s.late_rank && seq % s.late_every == 0 ? s.late_ns : 0);
}
inline std::int64_t end_ns(const Spec& s, int step, int k) {
  std::int64_t last = 0;
  for (int r = 0; r < s.ranks; ++r) last = std::max(last, arrival_ns(s, r, step, k));
  return last + s.transfer_ns;
}
inline store::Op op_of(int k) { return k % 4 == 3 ? store::Op::Bcast : store::Op::Allreduce; }

inline void write(const std::filesystem::path& dir, const Spec& s) {
  std::filesystem::create_directories(dir);
  const std::uint64_t world_key = 0x1234abcd5678ef00ULL;
  const std::uint64_t fusion_address = 0x7f0000100000ULL;
  for (int r = 0; r < s.ranks; ++r) {
    store::TraceWriter w((dir / store::rank_file_name(r)).string());
    w.begin();
    w.set_meta(store::meta_key::kWorldRank, std::to_string(r));
    w.set_meta(store::meta_key::kWorldSize, std::to_string(s.ranks));
    const int hosts = (s.ranks + s.ranks_per_host - 1) / s.ranks_per_host;
    w.set_meta(store::meta_key::kHost, "node" + std::to_string(s.hosts_round_robin ? r % hosts : r / s.ranks_per_host));
    w.set_meta(store::meta_key::kMonotonicStart, std::to_string(s.base_ns));
    w.set_meta(store::meta_key::kRealtimeStart, std::to_string(s.base_ns + 1'700'000'000'000'000'000LL));
    w.set_meta("env.HOROVOD_FUSION_THRESHOLD", std::to_string(s.fusion_buffer_bytes));
    w.add_thread({1, 1000 + r, "main"});
    w.add_thread({2, 2000 + r, "comm"});
    store::CommunicatorRow c;
    c.id = 1;
    c.key = world_key;
    c.size = s.ranks;
    c.rank = r;
    for (int m = 0; m < s.ranks; ++m) c.members.push_back(m);
    c.name = "MPI_COMM_WORLD";
    w.add_communicator(c);
    const auto float_type = w.intern("MPI_FLOAT");
    const auto sum = w.intern("MPI_SUM");
    const auto step_name = w.intern("step");
    const auto kernel_names = std::array{w.intern("gemm_fwd"), w.intern("gemm_bwd"), w.intern("ncclDevKernel_AllReduce")};
    for (int step = 0; step < s.steps; ++step) {
      if (step % 64 == 63) {
        w.commit();
        w.begin();
      }
      const std::int64_t step_start = s.base_ns + step * step_ns(s);
      store::NvtxRangeRow n;
      n.name = step_name;
      n.start_ns = step_start;
      n.end_ns = step_start + step_ns(s);
      n.thread = 1;
      w.add_nvtx_range(n);
      for (int g = 0; g < s.kernels_per_step; ++g) {
        store::GpuActivityRow a;
        a.name = kernel_names[g % kernel_names.size()];
        a.stream = 7;
        a.start_ns = step_start + g * (s.compute_ns / std::max(1, s.kernels_per_step));
        a.end_ns = a.start_ns + s.compute_ns / std::max(1, s.kernels_per_step) * 9 / 10;
        a.correlation = static_cast<std::uint64_t>(step) * 100 + g;
        w.add_gpu_activity(a);
      }
      for (int k = 0; k < s.collectives_per_step; ++k) {
        store::CollectiveRow row;
        row.comm = 1;
        row.seq = static_cast<std::int64_t>(step) * s.collectives_per_step + k;
        row.op = op_of(k);
        row.bytes = s.bytes;
        row.count = s.bytes / 4;
        row.datatype = float_type;
        row.reduce_op = row.op == store::Op::Allreduce ? sum : 0;
        if (row.op == store::Op::Bcast) row.root = 0;
        row.sendbuf = fusion_address;
        row.recvbuf = fusion_address;
        row.thread = 2;
        row.start_ns = arrival_ns(s, r, step, k);
        row.end_ns = end_ns(s, step, k);
        w.add_collective(row);
      }
    }
    // The fusion buffer: reused for every collective, between half and all of the payload.
    w.upsert_buffer({fusion_address, s.bytes, s.bytes / 2, s.bytes * s.steps * s.collectives_per_step,
                     static_cast<std::int64_t>(s.steps) * s.collectives_per_step, s.base_ns, s.base_ns + s.steps * step_ns(s), 0, 0});
    w.commit();
  }
}

}  // namespace collscope::gui::synthetic
