#pragma once
// The fixed-size record the hot path writes. 128 bytes, trivially copyable; the writer thread turns each into rows.
// Fields are interpreted per kind (see the comments); strings are never copied here except NVTX messages,
// which are short-lived in the caller and are truncated into `text`.
#include <cstdint>
#include <cstring>

namespace collscope::tracer {

enum class EventKind : std::uint8_t {
  None = 0,
  Collective,       // op, comm_slot, seq, count, bytes, datatype/reduce ids, root, peer, bufs, t0/t1, status
  CommCreated,      // comm_slot (the writer reads the slot's members), t0
  CommDestroyed,    // comm_slot, t0
  FusionPack,       // sendbuf = buffer, count = offset, bytes, t0
  NvtxPush,         // a[0] = domain string id (runtime), a[1] = name id or 0 (then text), category, payload
  NvtxPop,
  NvtxStart,        // a[2] = range id (nvtxRangeId_t)
  NvtxEnd,
  NvtxMark,
  GpuActivity,      // filled by the CUPTI collector
  CollectiveGpuTime,
  Extension,        // reserved for components that register their own handler
};

struct Event {
  EventKind kind;
  std::uint8_t op;
  std::uint16_t flags;
  std::int32_t status;
  std::uint64_t t0;  // ticks (clock.hpp)
  std::uint64_t t1;
  std::uint32_t comm_slot;
  std::int32_t root;  // -1 = none
  std::int64_t seq;
  std::int64_t count;
  std::int64_t bytes;
  std::uint64_t sendbuf;
  std::uint64_t recvbuf;
  std::uint32_t datatype;   // runtime string id (string_pool.hpp), 0 = none
  std::uint32_t reduce_op;  // runtime string id, 0 = none
  std::int32_t peer;        // -1 = none
  std::uint32_t thread;     // ThreadBuffer index of the recording thread (set by emit)
  std::uint64_t a[5];       // kind-specific; collectives: a[0] stream, a[1] correlation, a[2] group id,
                            // NCCL: a[3] NCCL's per-function seq + 1 (0 none), a[4] count x datatype size
};
static_assert(sizeof(Event) == 128, "Event must stay one fixed 128-byte record");

inline constexpr std::uint16_t kFlagInPlace = 1;

}  // namespace collscope::tracer
