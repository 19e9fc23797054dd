#pragma once
// Horovod Timeline import: the JSON file HOROVOD_TIMELINE makes rank 0 write becomes a collscope run directory
// (one rank-NNNNN.sqlite per rank, the same schema as the tracer's), so `collscope analyze`, `compare` and `view`
// work on jobs that were never traced by collscope.
//
// What the timeline holds and how it maps (rank 0's clock throughout; see docs/formats.md):
// - each fused operation (tensors whose MPI_/NCCL_/GLOO_ activity ran together) is one collective, seq in order,
//   on one world communicator; its bytes are the sum of its tensors' shape × dtype;
// - a rank arrives at it when it had reported the last of its tensors ready (the negotiation ticks), and leaves
//   when the communication activity ends; tensors answered from Horovod's response cache have no ticks, so every
//   rank arrives when the operation starts; when most steps have no ticks (the cache on, Horovod's default), or
//   the ticks of one step scatter more than ranks lag each other, meta `arrivals_unknown` says why lateness cannot
//   be measured, and the analyzer reports it so instead of naming nobody (or the wrong rank);
// - the tensors sharing the most common operation count (the gradients, reduced once per step) give the steps:
//   their k-th round of operations is training step k, an NVTX "step" range on every rank, from the round's first
//   negotiation to the next round's (compute included);
// - broadcasts, whose end events carry no shape, take the shape of a tensor with the same name after the prefix
//   ("broadcast.fc1.weight" ← "allreduce.fc1.weight");
// - rank 0 also gets the activities (QUEUE, MEMCPY_IN_FUSION_BUFFER, MPI_ALLREDUCE, ...) as NVTX ranges of
//   domain "horovod", one per fused operation, and CYCLE_START marks.
#include <cstdint>
#include <string>
#include <vector>

namespace collscope::formats {

struct HorovodImportCounts {
  std::int64_t ranks = 0;
  std::int64_t tensors = 0;            // distinct tensor names
  std::int64_t tensor_operations = 0;  // one tensor's ALLREDUCE (etc.), as Horovod's top-level event
  std::int64_t collectives = 0;        // fused operations (rows per rank)
  std::int64_t ticks = 0;              // negotiation ticks (a rank reporting a tensor ready)
  std::int64_t steps = 0;              // rounds of the gradients (tensors sharing the most common count); 0: none
  std::int64_t steps_without_ticks = 0;  // rounds answered from Horovod's response cache: no readiness ticks
  std::int64_t sized_from_names = 0;   // operations without dtype/shape (broadcasts) sized from a same-named tensor
  std::string lateness_unknown;        // "" when the ticks can show who is late, else why not (meta arrivals_unknown)
  bool truncated = false;              // the file ended mid-event (the job was killed); what was complete is kept
  std::int64_t replaced_utf8 = 0;      // ill-formed UTF-8 sequences (Latin-1 names, corrupt bytes) read as U+FFFD
  // One line each, naming the file and the first event: values out of physical range (a ts or start time no clock
  // holds, a shape of more than 2^48 elements, a tick naming an impossible rank), left out of the import.
  std::vector<std::string> problems;
};

// Reads `timeline_path`, writes `run_dir` (created; existing rank files in it are replaced). `world_size` 0: the
// highest rank seen in a tick + 1. Throws InputError naming the file and the problem; a file that stops being JSON
// before its end is such an error, naming the byte.
HorovodImportCounts import_horovod_timeline(const std::string& timeline_path, const std::string& run_dir,
                                            int world_size = 0);

}  // namespace collscope::formats
