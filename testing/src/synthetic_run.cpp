// Synthetic runs: a tiny discrete simulation of a data-parallel job, written through the real TraceWriter.
#include <collscope/testing/synthetic_run.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include "rank_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

namespace collscope::testing {
namespace {

// Deterministic noise in [0, 1): splitmix64 of (seed, rank, call).
double noise(std::uint64_t seed, std::uint64_t rank, std::uint64_t call) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ULL + rank * 0xbf58476d1ce4e5b9ULL + call * 0x94d049bb133111ebULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return double(z >> 11) / double(1ULL << 53);
}

}  // namespace

std::int64_t write_synthetic_run(const std::string& dir, const SyntheticRunSpec& spec) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const int n = spec.ranks;
  const std::int64_t kMonotonicBase = 1'000'000'000'000LL;     // 1000 s after boot
  const std::int64_t kRealtimeBase = 1'780'000'000'000'000'000LL;  // 2026
  std::vector<std::unique_ptr<store::TraceWriter>> writers;
  std::vector<std::int64_t> float_type(n), sum_op(n), step_name(n), backward_name(n);
  const std::uint64_t world_key = 0x5eed000000000001ULL;
  const std::uint64_t set_key[2] = {0x5eed000000000002ULL, 0x5eed000000000003ULL};
  auto shift = [&](int r) { return r < static_cast<int>(spec.clock_shift_ns.size()) ? spec.clock_shift_ns[r] : 0; };
  for (int r = 0; r < n; ++r) {
    // A shifted clock shifts everything the host's CLOCK_MONOTONIC gave, anchors too; its CLOCK_REALTIME anchor is
    // off by as much (NTP error), so the anchors alone place the host wrong by the shift and the collectives must
    // recover it.
    auto w = detail::open_rank_file(dir, {.rank = r,
                                          .world_size = n,
                                          .host = fmt::format("node{}", r / std::max(1, spec.ranks_per_host)),
                                          .monotonic_start_ns = kMonotonicBase + shift(r),
                                          .realtime_start_ns = kRealtimeBase + shift(r),
                                          .fusion_threshold = spec.horovod_env ? spec.fusion_threshold : 0});
    w->set_meta(store::meta_key::kCommandLine, fmt::format("{} --batch-size {}", spec.program, spec.batch_size));
    if (spec.horovod_env) w->set_meta("env.HOROVOD_CYCLE_TIME", fmt::format("{}", spec.cycle_time_ms));
    w->add_thread({1, 1000 + r, "main"});
    if (spec.compute_thread_ranges) w->add_thread({2, 3000 + r, "compute"});
    w->add_communicator(detail::world_communicator(world_key, r, n, kMonotonicBase));
    if (spec.process_sets) {
      store::CommunicatorRow set;
      set.id = 2;
      set.key = set_key[r % 2];
      set.parent = world_key;
      set.color = r % 2;
      for (int m = r % 2; m < n; m += 2) set.members.push_back(m);
      set.size = static_cast<std::int32_t>(set.members.size());
      set.rank = r / 2;
      set.name = fmt::format("process_set_{}", r % 2);
      set.created_ns = kMonotonicBase;
      w->add_communicator(set);
    }
    float_type[r] = w->intern("MPI_FLOAT");
    sum_op[r] = w->intern("MPI_SUM");
    step_name[r] = w->intern("step");
    backward_name[r] = w->intern("backward");
    writers.push_back(std::move(w));
  }

  std::int64_t rows = 0;
  std::vector<std::int64_t> ready(n, kMonotonicBase + 1'000'000);  // ns, true (shared) time
  std::vector<std::int64_t> world_seq(n, 0), set_seq(n, 0);
  std::uint64_t call_counter = 0;
  double link_gbps = spec.link_gbps;  // of the current step (degraded_from_step lowers it)
  double set_factor[2] = {1, 1};      // transfer time multiplier per process-set parity
  if (spec.slow_set_parity == 0 || spec.slow_set_parity == 1) set_factor[spec.slow_set_parity] = spec.slow_set_factor;
  auto transfer_ns = [&](std::int64_t bytes, int ranks, double gbps) {
    const double factor = 2.0 * (ranks - 1) / ranks;  // ring allreduce moves 2(n-1)/n of the data per rank
    return static_cast<std::int64_t>(spec.latency_us * 1e3 + double(bytes) * factor / gbps);
  };
  auto write_call = [&](int r, std::int64_t comm, std::int64_t seq, std::int64_t bytes, std::int64_t start,
                        std::int64_t end, int status) {
    store::CollectiveRow c;
    c.comm = comm;
    c.seq = seq;
    c.op = store::Op::Allreduce;
    c.count = bytes / 4;
    c.datatype = float_type[r];
    c.bytes = bytes;
    c.reduce_op = sum_op[r];
    c.thread = 1;
    c.start_ns = start + shift(r);
    c.end_ns = end + shift(r);
    c.status = status;
    writers[r]->add_collective(c);
    ++rows;
  };
  // One allreduce among `members`: everyone leaves together once the last one arrived and the data moved.
  auto allreduce = [&](const std::vector<int>& members, std::int64_t comm, std::vector<std::int64_t>& seqs,
                       std::int64_t bytes, double gbps) {
    std::int64_t last = 0;
    std::vector<std::int64_t> arrival(members.size());
    for (std::size_t k = 0; k < members.size(); ++k) {
      const int r = members[k];
      arrival[k] = ready[r] + static_cast<std::int64_t>(spec.jitter_us * 1e3 * noise(spec.seed, r, call_counter));
      last = std::max(last, arrival[k]);
    }
    const std::int64_t end = last + transfer_ns(bytes, static_cast<int>(members.size()), gbps);
    for (std::size_t k = 0; k < members.size(); ++k) {
      const int r = members[k];
      // Exit within ~1 us of each other (what the clock refinement relies on).
      const std::int64_t exit = end + static_cast<std::int64_t>(1000 * noise(spec.seed + 7, r, call_counter));
      write_call(r, comm, seqs[r]++, bytes, arrival[k], exit, 0);
      ready[r] = exit + 5000;  // 5 us of bookkeeping before the next call
    }
    ++call_counter;
  };

  std::vector<int> everyone(n);
  for (int r = 0; r < n; ++r) everyone[r] = r;
  const std::int64_t flush_every = std::max<std::int64_t>(1, 200000 / std::max(1, n));
  bool hung = false;
  std::vector<std::int64_t> cpu_ns(n, 0), instructions(n, 0);
  const auto sample = [&](int r, std::int64_t t) {
    if (spec.cpu_samples <= 0) return;
    store::CpuSampleRow row;
    row.thread = 1;
    row.t_ns = t + shift(r);
    row.site = 2;
    row.cpu_ns = cpu_ns[r];
    row.runq_ns = 0;
    row.timeslices = 0;
    if (spec.cpu_samples >= 2) row.instructions = instructions[r];
    writers[r]->add(row);
  };
  for (int step = 0; step < spec.steps && !hung; ++step) {
    std::vector<std::int64_t> step_start(n);
    for (int r = 0; r < n; ++r) {
      step_start[r] = ready[r];
      if (step == 0) sample(r, ready[r]);  // later steps start where the one before ended, sampled there
      double compute = spec.compute_ms * 1e6 * (0.98 + 0.04 * noise(spec.seed + 3, r, step));
      const bool slow_step = spec.slow_every_steps > 0 ? step > 0 && step % spec.slow_every_steps == 0
                                                         : spec.slow_only_step < 0 || step == spec.slow_only_step;
      if (r == spec.slow_rank && slow_step) {
        if (spec.slow_is_tracer_flush) {
          store::TracerFlushRow flush;
          flush.thread = 1;
          flush.start_ns = ready[r] + static_cast<std::int64_t>(compute) + shift(r);
          flush.end_ns = flush.start_ns + static_cast<std::int64_t>(spec.slow_ms * 1e6);
          flush.events = 1000;
          writers[r]->add(flush);
        }
        compute += spec.slow_ms * 1e6;
        if (spec.slow_rank_same_instructions && !spec.slow_is_tracer_flush)
          instructions[r] -= static_cast<std::int64_t>(spec.slow_ms * 1e6);
      }
      ready[r] += static_cast<std::int64_t>(compute);
      cpu_ns[r] += static_cast<std::int64_t>(compute);
      instructions[r] += static_cast<std::int64_t>(compute);
      sample(r, ready[r]);
    }
    const std::vector<std::int64_t> compute_end = ready;
    if (step == spec.degraded_from_step && spec.degraded_link_gbps > 0) link_gbps = spec.degraded_link_gbps;
    for (int k = 0; k < spec.allreduces_per_step; ++k) {
      for (int r = 0; r < n; ++r) ready[r] += static_cast<std::int64_t>(spec.idle_before_allreduce_ms * 1e6);
      allreduce(everyone, 1, world_seq, spec.allreduce_bytes, link_gbps);
    }
    if (spec.process_sets) {
      for (int parity = 0; parity < 2; ++parity) {
        std::vector<int> members;
        for (int m = parity; m < n; m += 2) members.push_back(m);
        if (members.size() < 2) continue;
        const bool skipping = step == spec.skip_step && spec.skip_rank >= 0 && spec.skip_rank % 2 == parity;
        if (!skipping) {
          allreduce(members, 2, set_seq, spec.allreduce_bytes / 4, spec.link_gbps / set_factor[parity]);
          continue;
        }
        // The skipping rank never calls; the others block until the job's timeout aborts the call with an error.
        for (int m : members) {
          if (m == spec.skip_rank) continue;
          write_call(m, 2, set_seq[m]++, spec.allreduce_bytes / 4, ready[m], ready[m] + 1'000'000'000LL, 1);
        }
        hung = true;
      }
    }
    if (spec.compute_thread_ranges)
      for (int r = 0; r < n; ++r) {
        store::NvtxRangeRow range;
        range.name = backward_name[r];
        range.start_ns = step_start[r] + shift(r);
        range.end_ns = (spec.compute_thread_ranges >= 2 ? ready[r] : compute_end[r]) + shift(r);
        range.thread = spec.compute_thread_ranges == 3 ? 1 : 2;
        writers[r]->add_nvtx_range(range);
      }
    for (int r = 0; r < n; ++r) sample(r, ready[r]);
    if (spec.nvtx_steps)
      for (int r = 0; r < n; ++r) {
        store::NvtxRangeRow range;
        range.name = step_name[r];
        range.start_ns = step_start[r] + shift(r);
        range.end_ns = ready[r] + shift(r);
        range.thread = 1;
        range.payload_int = step;
        writers[r]->add_nvtx_range(range);
      }
    if ((step + 1) % flush_every == 0)
      for (auto& w : writers) w->commit(), w->begin();
  }
  std::int64_t end = 0;
  for (int r = 0; r < n; ++r) end = std::max(end, ready[r]);
  for (int r = 0; r < n; ++r) {
    writers[r]->set_meta(store::meta_key::kMonotonicEnd, std::to_string(end + shift(r)));
    writers[r]->set_meta(store::meta_key::kRealtimeEnd, std::to_string(kRealtimeBase + end - kMonotonicBase + shift(r)));
    writers[r]->commit();
  }
  return rows;
}

}  // namespace collscope::testing
