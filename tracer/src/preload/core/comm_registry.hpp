#pragma once
// Communicators the tracer has seen (MPI and NCCL). Each gets a slot, never reused, whose index is its id in the
// trace file; a handle→slot map finds it on the hot path without a lock. Creation and destruction are rare and
// take a lock. Slot data is written before the CommCreated event is published, so the writer can read it.
#include <collscope/store/schema.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::tracer {

inline constexpr std::uint32_t kMaxCommunicators = 4096;

struct CommDescription {
  std::uint64_t key = 0;
  store::Backend backend = store::Backend::Mpi;
  std::int32_t size = 0;
  std::int32_t rank = 0;
  std::optional<std::uint64_t> parent;
  std::optional<std::int64_t> color;
  std::vector<std::int32_t> members;  // world ranks of the (local) group, in communicator rank order
  std::string name;
  bool intercommunicator = false;     // peers' ranks are in the remote group, which `members` does not list
  std::string seq_numbering;          // communicators.seq_numbering: "" call order, "gloo tag"
};

// What the writer reads of a slot is its description; the counters are the hot path's.
struct CommSlot : CommDescription {
  std::atomic<std::int64_t> next_seq{0};      // per-communicator collective call index (recorder.hpp)
  std::atomic<std::int64_t> next_p2p_seq{0};  // per-communicator point-to-point call index on this rank
  std::atomic<std::uint32_t> children{0};    // communicators created from this one (part of the child's key)
};

// Registers `handle` (replacing an older registration of the same handle) and records a CommCreated event.
// Returns the slot index (>= 1), or 0 when the table is full.
std::uint32_t comm_register(const void* handle, CommDescription description);
// Slot index for handle, 0 when unknown. Lock-free.
std::uint32_t comm_lookup(const void* handle);
// Forgets handle and records a CommDestroyed event.
void comm_unregister(const void* handle);
CommSlot& comm_slot(std::uint32_t index);

// 64-bit FNV-1a, used for communicator keys (identical on all members when fed identical data).
std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t seed = 1469598103934665603ULL);

}  // namespace collscope::tracer
