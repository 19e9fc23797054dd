#pragma once
// What the NCCL profiler plugin (profiler/) hands the recorder: one 128-byte ring event per finished collective
// and one per network transfer, of kind EventKind::Extension, decoded by the writer-side sink
// (nccl_profile_sink.hpp). Plain data, the same size as Event, copied whole into a ring slot.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/event.hpp"

namespace collscope::tracer::nccl_profile {

// Second byte of the event: which record it is.
enum class RecordKind : std::uint8_t { Collective = 1, ProxyOp = 2 };

// How the record names the call it belongs to.
enum class Identity : std::uint8_t {
  Unknown = 0,
  Call = 1,      // comm_slot + call_seq: the collectives row of that call (written by the interposer, or by the
                 // plugin itself for a communicator no interposer sees)
  NcclSeq = 2,   // comm_token + func + nccl_seq: NCCL's own per-function count, matched against the interposer's
};

// ncclFunc_t, as NCCL numbers it.
enum NcclFunc : std::uint8_t {
  kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4, kSendRecv = 5, kSend = 6,
  kRecv = 7, kNoFunc = 255
};

struct CollectiveRecord {
  EventKind kind = EventKind::Extension;
  RecordKind record = RecordKind::Collective;
  Identity identity = Identity::Unknown;
  std::uint8_t func = kNoFunc;       // NcclFunc
  std::uint8_t channels = 0;
  std::uint8_t warps = 0;
  std::uint8_t api_version = 0;      // profiler API version NCCL loaded
  std::uint8_t kernel_channels = 0;  // kernel-channel events with both timestamps (GPU times valid when > 0)
  std::uint32_t algorithm = 0;       // runtime string pool ids ("RING", "LL128")
  std::uint32_t protocol = 0;
  std::uint64_t record_id = 0;       // process-unique; ProxyOpRecord.record_id refers to it
  std::uint32_t comm_slot = 0;       // Identity::Call
  std::int32_t peer = -1;            // point-to-point peer, -1 for collectives
  std::uint64_t comm_token = 0;      // Identity::NcclSeq: the communicator's creation token (bridge)
  std::int64_t call_seq = -1;        // Identity::Call
  std::int64_t nccl_seq = -1;        // NCCL's sequence number of this function on the communicator, -1 unknown
  std::int64_t gpu_start_ns = 0;     // CLOCK_MONOTONIC, first kernel channel start (0: unknown)
  std::int64_t gpu_end_ns = 0;       // last kernel channel end
  std::uint64_t count = 0;           // as NCCL's task reports it (allgather, broadcast: bytes of ncclInt8)
  std::uint32_t datatype_bytes = 0;  // size of the task's datatype (0 unknown)
  std::uint32_t proxy_ops = 0;       // proxy operations started for it
  std::uint64_t sendbuf = 0;
  std::uint64_t recvbuf = 0;
  std::uint64_t reserved[3] = {};
};

struct ProxyOpRecord {
  EventKind kind = EventKind::Extension;
  RecordKind record = RecordKind::ProxyOp;
  std::uint8_t is_send = 0;
  std::uint8_t channel = 0;
  std::int32_t peer = -1;
  std::uint64_t record_id = 0;       // the collective's CollectiveRecord.record_id
  std::int32_t steps = 0;            // planned
  std::int32_t steps_done = 0;
  std::int64_t chunk_bytes = 0;
  std::int64_t bytes = 0;
  std::uint64_t start_ticks = 0;     // recorder ticks (clock.hpp), converted by the writer
  std::uint64_t end_ticks = 0;
  std::uint64_t reserved[9] = {};
};

static_assert(sizeof(CollectiveRecord) == sizeof(Event), "a record fills exactly one ring event");
static_assert(sizeof(ProxyOpRecord) == sizeof(Event), "a record fills exactly one ring event");
static_assert(std::is_trivially_copyable_v<CollectiveRecord> && std::is_trivially_copyable_v<ProxyOpRecord>);

// The record kind of an Extension event (its second byte).
inline RecordKind record_kind(const Event& e) {
  RecordKind k;
  std::memcpy(&k, reinterpret_cast<const unsigned char*>(&e) + 1, 1);
  return k;
}

}  // namespace collscope::tracer::nccl_profile
