#pragma once
// What kind of job a run is, from what the trace shows: the evidence that decides which steps, lateness and
// advice make sense (a benchmark has no steps; Horovod's knobs only for Horovod jobs; NCCL knobs only for NCCL
// communicators).
#include <collscope/run/run.hpp>

#include <string>

namespace collscope::run {

// The benchmark a rank's command line runs ("osu_allreduce", "IMB-MPI1", "all_reduce_perf"), or "" when its
// program is not a known benchmark. Their loops repeat one call to time it: repetitions, not training steps.
std::string benchmark_in_command(const Run& run);

// Whether every rank makes all its collectives from one thread that is not the process's main thread (Horovod's
// background thread, a communication thread). Then the ranks meet in lockstep whatever their compute does, and
// who arrives last at a collective says nothing about who computes slowly.
bool collectives_from_background_thread(const Run& run);

// The framework and libraries a run shows, for advice that fits it.
struct Workload {
  std::string benchmark;        // benchmark_in_command
  bool horovod = false;         // HOROVOD_* knobs in the environment, or Horovod's signature: all collectives from
                                // one background thread, with bitwise-reduction readiness negotiation among them
  std::string horovod_version;  // meta "python.horovod_version" (written by collscope trace's Python annotation when Horovod is imported)
  bool mpi = false, nccl = false;  // backends of the communicators with collectives
  bool torch_distributed = false;  // torch.distributed process groups on gloo or a custom backend (Python annotation)
  std::string mpi_library;      // meta mpi_library_version ("Open MPI v4.1.4, ...", "MPICH Version: 4.0 ...")
  bool compute_recorded = false;  // GPU kernels or NVTX ranges other than steps: what overlap claims need
  // The job packs tensors into fusion buffers, so a reused send buffer (CollectiveCall::fusion_fill_pct) is one:
  // Horovod, DDP's gradient buckets (meta ddp.bucket_cap_mb), or tensors recorded as packed into a buffer
  // (collscope_fusion_pack, GPU copies: buffers.tensors_packed). Elsewhere a reused buffer of varying size is the
  // application's own (LAMMPS reduces 16 and 24 bytes from one array) and says nothing about fusion.
  bool fusion_buffers = false;
};
Workload describe_workload(const Run& run);

}  // namespace collscope::run
