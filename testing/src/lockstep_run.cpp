// The lockstep run (see lockstep_run.hpp): every time computed from the spec, nothing random.
#include <collscope/testing/lockstep_run.hpp>

#include "rank_file.hpp"

#include <array>
#include <filesystem>

namespace collscope::testing {

void write_lockstep_run(const std::string& dir, const LockstepSpec& s) {
  std::filesystem::create_directories(dir);
  const std::uint64_t world_key = 0x1234abcd5678ef00ULL;
  const std::uint64_t fusion_address = 0x7f0000100000ULL;
  const int hosts = (s.ranks + s.ranks_per_host - 1) / s.ranks_per_host;
  for (int r = 0; r < s.ranks; ++r) {
    auto w = detail::open_rank_file(
        dir, {.rank = r,
              .world_size = s.ranks,
              .host = "node" + std::to_string(s.hosts_round_robin ? r % hosts : r / s.ranks_per_host),
              .monotonic_start_ns = s.base_ns,
              .realtime_start_ns = s.base_ns + 1'700'000'000'000'000'000LL,
              .fusion_threshold = s.fusion_buffer_bytes});
    w->add_thread({1, 1000 + r, "main"});
    w->add_thread({2, 2000 + r, "comm"});
    const bool nccl = s.backend == store::Backend::Nccl;
    auto world = detail::world_communicator(world_key, r, s.ranks, 0);
    world.backend = s.backend;
    if (nccl) world.name = "nccl";  // as the tracer names a communicator made by ncclCommInitRank
    w->add_communicator(world);
    const auto float_type = w->intern(nccl ? "ncclFloat32" : "MPI_FLOAT");
    const auto sum = w->intern(nccl ? "ncclSum" : "MPI_SUM");
    const auto step_name = w->intern("step");
    const auto kernel_names =
        std::array{w->intern("gemm_fwd"), w->intern("gemm_bwd"), w->intern("ncclDevKernel_AllReduce")};
    for (int step = 0; step < s.steps; ++step) {
      if (step % 64 == 63) {
        w->commit();
        w->begin();
      }
      const std::int64_t step_start = s.base_ns + step * step_ns(s);
      store::NvtxRangeRow n;
      n.name = step_name;
      n.start_ns = step_start;
      n.end_ns = step_start + step_ns(s);
      n.thread = 1;
      w->add_nvtx_range(n);
      for (int g = 0; g < s.kernels_per_step; ++g) {
        store::GpuActivityRow a;
        a.name = kernel_names[g % kernel_names.size()];
        a.stream = 7;
        a.start_ns = step_start + g * (s.compute_ns / std::max(1, s.kernels_per_step));
        a.end_ns = a.start_ns + s.compute_ns / std::max(1, s.kernels_per_step) * 9 / 10;
        a.correlation = static_cast<std::uint64_t>(step) * 100 + g;
        w->add_gpu_activity(a);
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
        w->add_collective(row);
      }
    }
    // The fusion buffer: reused for every collective, between half and all of the payload.
    w->upsert_buffer({fusion_address, s.bytes, s.bytes / 2, s.bytes * s.steps * s.collectives_per_step,
                      static_cast<std::int64_t>(s.steps) * s.collectives_per_step, s.base_ns,
                      s.base_ns + s.steps * step_ns(s), 0, 0});
    w->commit();
  }
}

}  // namespace collscope::testing
