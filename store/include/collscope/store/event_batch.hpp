#pragma once
// The binary layout of event_batches.payload (schema 1.3): while the job runs, the tracer's writer saves the rows
// of its busiest tables (collectives of MPI, point_to_point) as one blob per drain of one thread's ring instead of
// one SQLite row per event (SQLite needs ~6 000 instructions per 21-column row; a record is a few stores). Each
// record is the row itself, already resolved (times in ns of CLOCK_MONOTONIC, strings.id and communicators.id of
// the file), so a reader needs nothing but the file. Fields are little-endian, packed in the order of the structs
// below, with no padding but the reserved bytes at the end (zero). docs/trace-format.md lists every field.
#include <collscope/store/schema.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace collscope::store {

enum class BatchKind : std::int64_t { Collectives = 1, PointToPoint = 2 };
inline constexpr std::int64_t kBatchFormatVersion = 1;

// A collectives row of an MPI call (NCCL calls stay rows: their GPU times are filled in later by row id).
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
inline constexpr std::size_t kCollectiveRecordBytes = 9 * 8 + 7 * 4 + 2 + 2;  // 104
inline constexpr std::uint8_t kRecordRoot = 1, kRecordPeer = 2;

// A point_to_point row.
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
inline constexpr std::size_t kPointToPointRecordBytes = 10 * 8 + 8 * 4 + 2 + 6;  // 120
inline constexpr std::uint8_t kRecordSends = 1, kRecordReceives = 2;
inline constexpr std::uint8_t kRecordNonBlocking = 4;  // both kinds: post_end_ns, wait_ns, wait_calls

namespace detail {
template <typename T>
inline std::uint8_t* put_le(std::uint8_t* out, T v) {
  static_assert(std::is_integral_v<T>);
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &v, sizeof v);
  } else {
    auto u = static_cast<std::make_unsigned_t<T>>(v);
    for (std::size_t i = 0; i < sizeof v; ++i) out[i] = static_cast<std::uint8_t>(u >> (8 * i));
  }
  return out + sizeof v;
}
}  // namespace detail

// Appends one record at `out` (kCollectiveRecordBytes / kPointToPointRecordBytes bytes); returns the end.
inline std::uint8_t* encode_record(const CollectiveRecord& r, std::uint8_t* out) {
  using detail::put_le;
  for (std::int64_t v : {r.start_ns, r.end_ns, r.seq, r.count, r.bytes}) out = put_le(out, v);
  out = put_le(out, r.sendbuf);
  out = put_le(out, r.recvbuf);
  out = put_le(out, r.post_end_ns);
  out = put_le(out, r.wait_ns);
  for (std::uint32_t v : {r.comm, r.datatype, r.reduce_op}) out = put_le(out, v);
  for (std::int32_t v : {r.root, r.peer, r.status}) out = put_le(out, v);
  out = put_le(out, r.wait_calls);
  *out++ = r.op;
  *out++ = r.flags;
  return put_le(out, std::uint16_t{0});
}
inline std::uint8_t* encode_record(const PointToPointRecord& r, std::uint8_t* out) {
  using detail::put_le;
  for (std::int64_t v : {r.start_ns, r.end_ns, r.seq, r.count, r.send_bytes, r.recv_bytes}) out = put_le(out, v);
  out = put_le(out, r.sendbuf);
  out = put_le(out, r.recvbuf);
  out = put_le(out, r.post_end_ns);
  out = put_le(out, r.wait_ns);
  out = put_le(out, r.comm);
  out = put_le(out, r.datatype);
  for (std::int32_t v : {r.send_peer, r.send_tag, r.recv_peer, r.recv_tag, r.status}) out = put_le(out, v);
  out = put_le(out, r.wait_calls);
  *out++ = r.op;
  *out++ = r.flags;
  out = put_le(out, std::uint16_t{0});
  return put_le(out, std::uint32_t{0});
}

// The fixed size of one record of `kind`, 0 for a kind this version does not know.
std::size_t record_bytes(BatchKind kind);
// The table whose rows a batch kind holds.
template <typename Row> inline constexpr std::int64_t kBatchKindOf = 0;
template <> inline constexpr std::int64_t kBatchKindOf<CollectiveRow> = static_cast<std::int64_t>(BatchKind::Collectives);
template <> inline constexpr std::int64_t kBatchKindOf<PointToPointRow> = static_cast<std::int64_t>(BatchKind::PointToPoint);

// What is wrong with a batch whose row says (kind, first_id, count, format_version) and whose payload has
// `payload_bytes` bytes, given that the previous batch of that kind ended at id `previous_last_id` (0: none);
// "" when it is well formed: a known kind and version, count records exactly, ids after the previous batch's.
std::string event_batch_problem(std::int64_t kind, std::int64_t first_id, std::int64_t count,
                                std::int64_t format_version, std::size_t payload_bytes,
                                std::int64_t previous_last_id);

// The row that record `record` (record_bytes() bytes at that address) of a batch stands for.
CollectiveRow decode_collective(const std::uint8_t* record, std::int64_t id, std::int64_t thread);
PointToPointRow decode_point_to_point(const std::uint8_t* record, std::int64_t id, std::int64_t thread);

}  // namespace collscope::store
