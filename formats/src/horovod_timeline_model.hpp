#pragma once
// The Horovod Timeline as the importer reads it (internal to formats/): per tensor, its operations with their
// negotiation ticks and activities. horovod_timeline_import.cpp reads and writes; horovod_timeline_rounds.cpp
// finds the training steps, sizes what the file leaves unsized and judges what the ticks can show.
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace collscope::formats::detail {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t kHorovodCommKey = 0x686f726f766f6400ULL;  // "horovod\0": one world communicator

struct Activity {
  std::string name;
  std::int64_t start_us = 0, end_us = 0;
};

// One tensor's operation: Horovod's top-level event of a tensor process, with the negotiation before it.
struct TensorOperation {
  std::string type;  // "ALLREDUCE", "ALLGATHER", "BROADCAST", ...
  std::int64_t tensor_pid = 0;
  std::map<int, std::int64_t> ready_us;  // rank -> first negotiation tick
  std::int64_t negotiation_start_us = kNone, negotiation_end_us = kNone;
  std::int64_t start_us = 0, end_us = kNone;
  std::vector<Activity> activities;
  std::int64_t elements = 0, element_bytes = 0;
  bool impossible_shape = false;  // more elements than PhysicalLimits allow: the operation is left out
  std::string dtype;
  std::int64_t comm_start_us = 0, comm_end_us = 0;  // the communication activity, else the whole operation
  bool has_comm_activity = false;
  bool nccl = false;
};

struct Timeline {
  std::int64_t origin_us = 0;  // start_time_since_epoch_in_micros: CLOCK_REALTIME of ts 0
  std::map<std::int64_t, std::string> tensor_names;  // pid -> name
  std::vector<TensorOperation> operations;
  std::vector<std::int64_t> cycle_starts_us;
  std::int64_t last_us = 0;
  std::int64_t ticks = 0;
  int max_rank = -1;
  std::set<int> ticking_ranks;  // every rank named by a negotiation tick
  std::uint64_t replaced_sequences = 0;  // ill-formed UTF-8 sequences read as U+FFFD
  std::vector<std::string> warnings;     // impossible values left out (LeftOut)
};

// Training steps, one window per round of the gradients (µs, rank 0's clock): round k runs from its first
// negotiation (or operation) to round k+1's, the last to its last operation's end. Empty when no round exists.
std::vector<std::pair<std::int64_t, std::int64_t>> infer_steps(const Timeline& t);

// Bytes per element of a dtype name; elements of a "[a, b]" shape (see the .cpp).
std::int64_t element_size(std::string dtype);

// Broadcasts (and other operations) whose end event carries no dtype/shape: sized from a tensor of the same name
// after its operation prefix ("broadcast.fc1.weight" from "allreduce.fc1.weight"). Returns how many were sized.
std::int64_t size_from_names(Timeline& t);

// What the readiness ticks of the gradients can show about lateness: "" when they are usable, else one line why
// not (the response cache hid them after the first step; they scatter from tensor to tensor of one step more
// than ranks lag each other, so negotiation delays, not compute, set them).
struct TickAssessment {
  std::int64_t rounds = 0, rounds_without_ticks = 0;
  std::string unusable;
};
TickAssessment assess_ticks(const Timeline& t, int ranks);

}  // namespace collscope::formats::detail
