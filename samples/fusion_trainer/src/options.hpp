// Command line and environment of fusion_trainer.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace collscope::sample {

struct TrainerOptions {
  int steps = 30;
  int warmup_steps = 2;  // excluded from throughput
  int batch_size = 32;
  int max_batch_size = 1024;  // a larger batch "runs out of memory" (exit 1)
  double model_scale = 0.05;  // multiplies every tensor's element count of the ResNet-50 list
  double compute_scale = 1.0;  // multiplies the floating-point work per parameter and sample
  std::uint64_t fusion_threshold_bytes = 128ull << 20;  // HOROVOD_FUSION_THRESHOLD
  double cycle_time_ms = 1.0;                           // HOROVOD_CYCLE_TIME
  // Fixed CPU work per gradient allreduce on the background thread, microseconds: Horovod's
  // per-response cost (response cache lookup, building the response, framework callbacks).
  double op_overhead_us = 100.0;
  // Fixed CPU work per negotiation cycle, microseconds: Horovod's coordinator building and
  // checking the request list and response cache every cycle.
  double cycle_overhead_us = 20.0;
  int process_sets = 2;  // process-set communicator colour = world_rank % process_sets
  std::optional<int> slow_rank;
  double slow_ms = 0.0;  // extra compute per step on slow_rank
  int slow_every = 1;     // with slow_rank: the extra compute only in steps N, 2N, ... (a periodic pause)
  std::optional<int> mismatch_rank;
  int mismatch_step = 2;
  std::optional<int> hang_after_step;
  bool keep_mpi_binding = false;
  bool no_nvtx = false;  // mark no NVTX ranges (steps must be inferred, or read from the printed throughput)
  // HOROVOD_TIMELINE: rank 0 writes a Horovod Timeline there; every rank then negotiates by allgather so that
  // rank 0 sees when each rank reported each tensor ready (as Horovod's coordinator does).
  std::string timeline_path;  // keep mpirun's core binding (default: float over all cores)
};

// Bad command line or environment: main prints "fusion_trainer: <what>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown for --help after the help text is printed: main exits 0.
struct HelpRequested {};

// Reads HOROVOD_FUSION_THRESHOLD / HOROVOD_CYCLE_TIME from the environment, then the flags
// (flags override the environment). Throws UsageError or HelpRequested.
TrainerOptions parse_options(int argc, char** argv);

}  // namespace collscope::sample
