#pragma once
// Synthetic runs written with the real TraceWriter: for tests (known ground truth), the benchmark and anyone
// who needs a run without MPI. Each step: compute on every rank, then `allreduces_per_step` world allreduces
// and optionally one allreduce on each of two process sets (ranks split by parity).
#include <cstdint>
#include <string>
#include <vector>

namespace collscope::testing {

struct SyntheticRunSpec {
  int ranks = 4;
  int steps = 20;
  int allreduces_per_step = 4;
  std::int64_t allreduce_bytes = 4 << 20;
  double compute_ms = 10;
  double link_gbps = 10;           // transfer time = bytes / link_gbps ns-equivalent
  double latency_us = 20;          // per collective
  int slow_rank = -1;              // extra compute per step on this world rank
  double slow_ms = 0;
  int slow_only_step = -1;         // with slow_rank: the delay comes in this step only (a one-off stall)
  int slow_every_steps = 0;        // with slow_rank: the delay comes in steps N, 2N, ... only (a checkpoint)
  bool slow_is_tracer_flush = false;  // with slow_rank: the delay is the tracer writing its full buffers out
                                      //   (a tracer_flushes row over it), not the job's own compute
  bool process_sets = false;       // add one allreduce per step on split(parity) communicators
  int skip_rank = -1;              // this rank skips the process-set allreduce of `skip_step` (and stops after)
  int skip_step = -1;
  bool nvtx_steps = true;          // write NVTX "step" ranges
  std::vector<std::int64_t> clock_shift_ns;  // per rank: its clock's error, added to every time of its file (rows
                                             // and anchors alike: the anchors do not reveal it)
  int ranks_per_host = 8;          // host "nodeK" holds world ranks [8K, 8K+8); ranks of one host share a clock,
                                   // so clock_shift_ns models different hosts only with ranks_per_host = 1
  double jitter_us = 5;            // arrival noise, deterministic per (rank, call)
  std::uint64_t seed = 1;
  std::int64_t fusion_threshold = 64 << 20;  // written as env.HOROVOD_FUSION_THRESHOLD
  double cycle_time_ms = 1;                   // env.HOROVOD_CYCLE_TIME
  bool horovod_env = true;                    // false: neither is written (a plain MPI program)
  int batch_size = 32;                        // in command_line "--batch-size N"
  std::string program = "synthetic_trainer";  // the command line's program
  // Injected communication problems (ground truth for the detectors):
  int degraded_from_step = -1;     // from this step on, world allreduces move data at degraded_link_gbps
  double degraded_link_gbps = 0;   //   (a link falling back to a slower transport)
  double idle_before_allreduce_ms = 0;  // every rank idles this long before each world allreduce (a cycle wait)
  // 1: a "backward" NVTX range on a second thread over each step's compute; 2: the same range lasting until the
  // step's world allreduces end (Horovod-style overlap: the background thread communicates during backward);
  // 3: that long range on the thread that makes the allreduces (blocking calls inside it: no overlap).
  int compute_thread_ranges = 0;
  int slow_set_parity = -1;        // with process_sets: that set moves its data slow_set_factor times slower
  double slow_set_factor = 1;
  // Scheduler counters (cpu_samples) on thread 1 at the first step's start, at the end of each step's compute and
  // at its end:
  // compute on a CPU, the collectives off one. 0: none; 1: CPU time and run queue (schema 1.4); 2: also
  // instructions retired (1.8), one per ns of compute.
  int cpu_samples = 0;
  bool slow_rank_same_instructions = false;  // with slow_rank and cpu_samples 2: its extra compute retires no more
                                              // instructions (a slower CPU), else one per ns as well (more work)
};

// Writes dir/rank-NNNNN.sqlite for every rank (creates dir). Returns the number of collective rows written.
std::int64_t write_synthetic_run(const std::string& dir, const SyntheticRunSpec& spec);

}  // namespace collscope::testing
