#pragma once
// torch.profiler import: the Chrome traces a PyTorch job's ranks export (prof.export_chrome_trace, one file per
// rank) become a collscope run directory (one rank-NNNNN.sqlite per rank, the tracer's schema), so `collscope
// analyze`, `compare` and `view` work on jobs that were only profiled.
//
// Two shapes are read (see docs/formats.md):
// - Kineto's (torch 2.x, and 1.x builds with Kineto): an object with `distributedInfo` {rank, world_size, backend},
//   `traceEvents` and `baseTimeNanoseconds`; each c10d call has a `record_param_comms` op whose args carry the
//   collective ("Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name",
//   "Process Group Ranks", "Seq");
// - the autograd profiler's (torch 1.x without Kineto, as Debian's 1.13 builds it): a plain array of "X" events
//   with no args, each rank's time from its own profiler start; c10d calls are `c10d::allreduce_` etc. on the
//   calling thread, the work `gloo:all_reduce` etc. on gloo's worker threads.
// Each c10d call is one collective on its process group's communicator: it starts when the rank called it and ends
// when its work (the gloo:* span; for NCCL the call itself, with the kernel's span as its GPU time) ended.
// "ProfilerStep#N" ranges are the steps; inside them DDP's forward, the autograd engine's functions and the
// optimizer's step are the phases "forward", "backward", "optimizer" (as `collscope trace` records a Python job's). Each rank keeps its own clock; the run's clock alignment puts them on one
// time line from the ends of the synchronising collectives.
#include <cstdint>
#include <string>
#include <vector>

namespace collscope::formats {

struct TorchProfilerImportCounts {
  std::int64_t ranks = 0;           // files imported, one per rank
  std::int64_t world_size = 0;
  std::string shape;                // "kineto" or "autograd profiler"
  std::int64_t communicators = 0;   // process groups
  std::int64_t collectives = 0;     // rows, all ranks
  std::int64_t with_sizes = 0;      // rows sized from record_param_comms args (0 for the autograd shape)
  std::int64_t with_shapes = 0;     // rows sized from the input shapes of the c10d op or its gloo:*/nccl:* span
  std::int64_t without_work = 0;    // calls whose gloo:*/kernel span was not found: they end with the call
  std::int64_t steps = 0;           // ProfilerStep#N ranges (most on any rank)
  std::int64_t phases = 0;          // forward / backward / optimizer ranges inside them, all ranks
  // One line each, naming the file: what was left out or assumed (a rank without a file, a group whose ranks the
  // trace cut short, ...).
  std::vector<std::string> problems;
};

// Reads the traces (one per rank, any order), writes `run_dir` (created; existing rank files in it are replaced).
// A file's rank is its distributedInfo.rank, else the number after "rank" in its name, else its place in `paths`.
// `world_size` 0: distributedInfo.world_size, else the number of files. Throws InputError naming the file and
// the problem (missing, not JSON, truncated, not a trace, no collectives, two files of one rank).
TorchProfilerImportCounts import_torch_profiler(const std::vector<std::string>& paths, const std::string& run_dir,
                                                int world_size = 0);

// For `collscope import --format auto`: whether the first 256 KiB of `path` look like a torch.profiler trace
// (distributedInfo, record_param_comms, ProfilerStep#, aten::, c10d::, gloo:, "CPU functions") rather than a
// Horovod timeline (NEGOTIATE_, CYCLE_START). Unreadable files: false.
bool looks_like_torch_profiler_trace(const std::string& path);

}  // namespace collscope::formats
