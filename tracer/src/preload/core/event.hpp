#pragma once
// The fixed-size record the hot path writes. 128 bytes, trivially copyable; the writer thread turns each into rows.
// A header common to all kinds, then a payload whose fields are named per kind (the union at the end). Strings
// are never copied here except NVTX messages, which are short-lived in the caller and are interned.
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <cstring>

namespace collscope::tracer {

enum class EventKind : std::uint8_t {
  None = 0,
  Collective,       // op, comm_slot, seq, count, bytes, datatype/reduce ids, root, bufs, t0/t1, status; nccl or mpi
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
  PointToPoint,     // MPI: op, comm_slot, seq, count, datatype, peer + bytes (send side), mpi (receive side, times)
  CpuSample,        // op = site (0 entry, 1 exit), t0, a[0] = cpu ns, a[1] = run-queue ns, a[2] = timeslices
};

// MPI calls: what a non-blocking call adds to its row, and the point-to-point fields beyond the header.
struct MpiPayload {
  std::uint64_t post_end;    // ticks: the posting call (I-call, MPI_Start) returned; 0 for a blocking call
  std::uint64_t wait_ticks;  // ticks spent inside completion calls (Wait*/Test*) that covered this request
  std::uint32_t wait_calls;  // how many completion calls covered it
  std::int32_t send_tag;
  std::int32_t recv_tag;
  std::int32_t recv_peer;    // world rank; store::kPeerProcNull, store::kPeerUnknown
  std::int64_t recv_bytes;   // bytes received (from the status when the call gives one)
};

// NCCL collectives and point-to-point calls.
struct NcclPayload {
  std::uint64_t stream;       // cudaStream_t
  std::uint64_t correlation;  // CUPTI external correlation id (collectives.correlation)
  std::uint64_t group;        // ncclGroupStart/End id, 0 = none
  std::uint64_t nccl_seq_plus1;  // NCCL's own per-function number of the call + 1 (0: none; nccl_profile_sink.cpp)
  std::uint64_t count_bytes;     // count x datatype size: what NCCL's profiler reports per rank
};

struct Event {
  EventKind kind;
  std::uint8_t op;
  std::uint16_t flags;  // kFlag*
  std::int32_t status;
  std::uint64_t t0;  // ticks (clock.hpp)
  std::uint64_t t1;
  std::uint32_t comm_slot;
  std::int32_t root;  // -1 = none
  std::int64_t seq;
  std::int64_t count;
  std::int64_t bytes;       // point-to-point: bytes sent
  std::uint64_t sendbuf;
  std::uint64_t recvbuf;
  std::uint32_t datatype;   // runtime string id (string_pool.hpp), 0 = none
  std::uint32_t reduce_op;  // runtime string id, 0 = none
  std::int32_t peer;        // -1 = none; point-to-point: the world rank sent to (store::kPeerProcNull, ...)
  std::uint32_t thread;     // ThreadBuffer index of the recording thread (set by emit)
  union {
    std::uint64_t a[5];  // NVTX and extension kinds: see their handlers
    NcclPayload nccl;    // Collective with kFlagNccl
    MpiPayload mpi;      // Collective without kFlagNccl, PointToPoint
  };
};
static_assert(sizeof(Event) == 128, "Event must stay one fixed 128-byte record");
static_assert(sizeof(MpiPayload) <= sizeof(Event::a) && sizeof(NcclPayload) <= sizeof(Event::a));

inline constexpr std::uint16_t kFlagInPlace = 1;
inline constexpr std::uint16_t kFlagNccl = 2;         // payload is `nccl`
inline constexpr std::uint16_t kFlagNonBlocking = 4;  // mpi.post_end, wait_ticks, wait_calls are meaningful
inline constexpr std::uint16_t kFlagSends = 8;        // point-to-point: peer, mpi.send_tag, bytes
inline constexpr std::uint16_t kFlagReceives = 16;    // point-to-point: mpi.recv_peer, recv_tag, recv_bytes

using store::kPeerProcNull;
using store::kPeerUnknown;

}  // namespace collscope::tracer
