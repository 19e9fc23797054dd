#pragma once
// The binary layout of event_batches.payload (schema 1.3): while the job runs, the tracer's writer saves the rows
// of its busiest tables (collectives of MPI, point_to_point) as one blob per drain of one thread's ring instead of
// one SQLite row per event (SQLite needs ~6 000 instructions per 21-column row). Each record is the row itself,
// already resolved (times in ns of CLOCK_MONOTONIC, strings.id and communicators.id of the file), so a reader needs
// nothing but the file. A record is its fields in a fixed order (kCollectiveFields, kPointToPointFields), each
// written as the difference from a prediction (the same field of the previous record of the batch, 0 for the
// first; the record's own start_ns for end_ns and post_end_ns), zigzag-mapped and in LEB128 (7 bits a byte, low
// first): consecutive calls differ little, so a record is ~20 bytes instead of 104 fixed ones, and the writer's
// cost is the bytes it writes (docs/performance.md). docs/trace-format.md describes it field by field.
#include <collscope/store/schema.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

namespace collscope::store {

enum class BatchKind : std::int64_t { Collectives = 1, PointToPoint = 2 };
inline constexpr std::int64_t kBatchFormatVersion = 1;

// A collectives row of an MPI call (NCCL calls stay rows: their GPU times are filled in later by row id), its
// fields in payload order.
struct CollectiveRecord {
  std::int64_t start_ns = 0, end_ns = 0, seq = 0, count = 0, bytes = 0;
  std::uint64_t sendbuf = 0, recvbuf = 0;
  std::int64_t post_end_ns = 0, wait_ns = 0;  // when flags has kRecordNonBlocking
  std::uint32_t comm = 0, datatype = 0, reduce_op = 0;
  std::int32_t root = 0, peer = 0;  // when flags has kRecordRoot / kRecordPeer
  std::int32_t status = 0;
  std::uint32_t wait_calls = 0;  // when flags has kRecordNonBlocking
  std::uint8_t op = 0, flags = 0;
};
inline constexpr std::uint8_t kRecordRoot = 1, kRecordPeer = 2;

// A point_to_point row, its fields in payload order.
struct PointToPointRecord {
  std::int64_t start_ns = 0, end_ns = 0, seq = 0, count = 0;
  std::int64_t send_bytes = 0, recv_bytes = 0;  // when flags has kRecordSends / kRecordReceives
  std::uint64_t sendbuf = 0, recvbuf = 0;
  std::int64_t post_end_ns = 0, wait_ns = 0;  // when flags has kRecordNonBlocking
  std::uint32_t comm = 0, datatype = 0;
  std::int32_t send_peer = 0, send_tag = 0;  // when flags has kRecordSends
  std::int32_t recv_peer = 0, recv_tag = 0;  // when flags has kRecordReceives
  std::int32_t status = 0;
  std::uint32_t wait_calls = 0;
  std::uint8_t op = 0, flags = 0;
};
inline constexpr std::uint8_t kRecordSends = 1, kRecordReceives = 2;
inline constexpr std::uint8_t kRecordNonBlocking = 4;  // both kinds: post_end_ns, wait_ns, wait_calls

// One field of a record: its name (the column it fills), the values it may take, and whether it is predicted from
// the record's start_ns (field 0) rather than from the previous record.
struct BatchField {
  const char* name;
  std::int64_t min, max;
  bool from_start;
};
namespace detail {
inline constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
}  // namespace detail
inline constexpr std::array<BatchField, 18> kCollectiveFields = {{
    {"start_ns", detail::kI64Min, detail::kI64Max, false}, {"end_ns", detail::kI64Min, detail::kI64Max, true},
    {"seq", detail::kI64Min, detail::kI64Max, false},      {"count", detail::kI64Min, detail::kI64Max, false},
    {"bytes", detail::kI64Min, detail::kI64Max, false},    {"sendbuf", detail::kI64Min, detail::kI64Max, false},
    {"recvbuf", detail::kI64Min, detail::kI64Max, false},  {"post_end_ns", detail::kI64Min, detail::kI64Max, true},
    {"wait_ns", detail::kI64Min, detail::kI64Max, false},  {"comm", 0, detail::kU32Max, false},
    {"datatype", 0, detail::kU32Max, false},               {"reduce_op", 0, detail::kU32Max, false},
    {"root", detail::kI32Min, detail::kI32Max, false},     {"peer", detail::kI32Min, detail::kI32Max, false},
    {"status", detail::kI32Min, detail::kI32Max, false},   {"wait_calls", 0, detail::kU32Max, false},
    {"op", 0, 255, false},                                 {"flags", 0, 255, false},
}};
inline constexpr std::array<BatchField, 20> kPointToPointFields = {{
    {"start_ns", detail::kI64Min, detail::kI64Max, false}, {"end_ns", detail::kI64Min, detail::kI64Max, true},
    {"seq", detail::kI64Min, detail::kI64Max, false},      {"count", detail::kI64Min, detail::kI64Max, false},
    {"send_bytes", detail::kI64Min, detail::kI64Max, false}, {"recv_bytes", detail::kI64Min, detail::kI64Max, false},
    {"sendbuf", detail::kI64Min, detail::kI64Max, false},  {"recvbuf", detail::kI64Min, detail::kI64Max, false},
    {"post_end_ns", detail::kI64Min, detail::kI64Max, true}, {"wait_ns", detail::kI64Min, detail::kI64Max, false},
    {"comm", 0, detail::kU32Max, false},                   {"datatype", 0, detail::kU32Max, false},
    {"send_peer", detail::kI32Min, detail::kI32Max, false}, {"send_tag", detail::kI32Min, detail::kI32Max, false},
    {"recv_peer", detail::kI32Min, detail::kI32Max, false}, {"recv_tag", detail::kI32Min, detail::kI32Max, false},
    {"status", detail::kI32Min, detail::kI32Max, false},   {"wait_calls", 0, detail::kU32Max, false},
    {"op", 0, 255, false},                                 {"flags", 0, 255, false},
}};
// The fewest bytes a record takes (one per field): bounds the records a payload can hold.
inline constexpr std::size_t kMinCollectiveRecordBytes = kCollectiveFields.size();
inline constexpr std::size_t kMinPointToPointRecordBytes = kPointToPointFields.size();
// The most bytes a record takes (ten per field).
inline constexpr std::size_t kMaxRecordBytes = 10 * kPointToPointFields.size();

using CollectiveFields = std::array<std::int64_t, kCollectiveFields.size()>;
using PointToPointFields = std::array<std::int64_t, kPointToPointFields.size()>;

inline CollectiveFields fields_of(const CollectiveRecord& r) {
  // A blocking call's post_end_ns is written as its start_ns: a difference of 0, one byte.
  const std::int64_t post_end_ns = r.flags & kRecordNonBlocking ? r.post_end_ns : r.start_ns;
  return {r.start_ns, r.end_ns, r.seq, r.count, r.bytes, static_cast<std::int64_t>(r.sendbuf),
          static_cast<std::int64_t>(r.recvbuf), post_end_ns, r.wait_ns, r.comm, r.datatype, r.reduce_op, r.root,
          r.peer, r.status, r.wait_calls, r.op, r.flags};
}
inline PointToPointFields fields_of(const PointToPointRecord& r) {
  const std::int64_t post_end_ns = r.flags & kRecordNonBlocking ? r.post_end_ns : r.start_ns;
  return {r.start_ns, r.end_ns, r.seq, r.count, r.send_bytes, r.recv_bytes, static_cast<std::int64_t>(r.sendbuf),
          static_cast<std::int64_t>(r.recvbuf), post_end_ns, r.wait_ns, r.comm, r.datatype, r.send_peer,
          r.send_tag, r.recv_peer, r.recv_tag, r.status, r.wait_calls, r.op, r.flags};
}

// The inverse of fields_of (fields taken as they are: a decoder checks their ranges first).
CollectiveRecord record_of(const CollectiveFields& f);
PointToPointRecord record_of(const PointToPointFields& f);

// The row a record stands for: the one meaning of a record's fields and flags, for the decoder and for the
// tracer's row path alike.
CollectiveRow row_of(const CollectiveRecord& r, std::int64_t id, std::int64_t thread);
PointToPointRow row_of(const PointToPointRecord& r, std::int64_t id, std::int64_t thread);

// The field table of a record's field array.
template <typename Fields>
constexpr const auto& field_table() {
  if constexpr (std::tuple_size_v<Fields> == kCollectiveFields.size()) return kCollectiveFields;
  else return kPointToPointFields;
}

// Encodes the records of one batch, in order (reset() between batches). At most kMaxRecordBytes per record.
template <typename Fields>
class BatchEncoder {
 public:
  std::uint8_t* encode(const Fields& f, std::uint8_t* out) {
    constexpr auto& table = field_table<Fields>();
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::uint64_t diff =
          static_cast<std::uint64_t>(f[i]) - static_cast<std::uint64_t>(table[i].from_start ? f[0] : prev_[i]);
      std::uint64_t z = (diff << 1) ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(diff) >> 63);  // zigzag
      while (z >= 0x80) *out++ = static_cast<std::uint8_t>(z | 0x80), z >>= 7;
      *out++ = static_cast<std::uint8_t>(z);
    }
    prev_ = f;
    return out;
  }
  void reset() { prev_ = {}; }

 private:
  Fields prev_{};
};

// The kind's fields and the fewest bytes one of its records takes; 0 for a kind this version does not know.
std::size_t min_record_bytes(BatchKind kind);

// What is wrong with a batch whose row says (kind, first_id, count, format_version) and whose payload has
// `payload_bytes` bytes, given that the previous batch of that kind ended at id `previous_last_id` (0: none);
// "" when its header is well formed (the records are checked as they are decoded).
std::string event_batch_problem(std::int64_t kind, std::int64_t first_id, std::int64_t count,
                                std::int64_t format_version, std::size_t payload_bytes,
                                std::int64_t previous_last_id);

// Decodes the records of one batch payload, in order, into the rows they stand for. next() returns false at the
// end, and throws collscope::InputError("<where>: <problem>") when a record runs past the payload, a field is out
// of its range, or bytes are left after the last record.
template <typename Row>
class BatchDecoder {
 public:
  BatchDecoder(const std::uint8_t* payload, std::size_t bytes, std::int64_t first_id, std::int64_t count,
               std::int64_t thread, std::string where)
      : p_(payload), end_(payload + bytes), id_(first_id), left_(count), thread_(thread), where_(std::move(where)) {}
  bool next(Row& out);

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  std::int64_t id_, left_, thread_, index_ = 0;
  std::string where_;
  std::array<std::int64_t, 20> prev_{};
};
extern template class BatchDecoder<CollectiveRow>;
extern template class BatchDecoder<PointToPointRow>;

template <typename Row> inline constexpr std::int64_t kBatchKindOf = 0;
template <> inline constexpr std::int64_t kBatchKindOf<CollectiveRow> = static_cast<std::int64_t>(BatchKind::Collectives);
template <> inline constexpr std::int64_t kBatchKindOf<PointToPointRow> = static_cast<std::int64_t>(BatchKind::PointToPoint);

}  // namespace collscope::store
