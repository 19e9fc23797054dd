#include <collscope/store/event_batch.hpp>

#include <fmt/format.h>

#include <limits>

namespace collscope::store {
namespace {

// Reads the little-endian fields of a record in order.
class RecordReader {
 public:
  explicit RecordReader(const std::uint8_t* p) : p_(p) {}
  template <typename T>
  T next() {
    std::make_unsigned_t<T> u = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&u, p_, sizeof u);
    } else {
      for (std::size_t i = 0; i < sizeof u; ++i) u |= static_cast<decltype(u)>(std::uint64_t{p_[i]} << (8 * i));
    }
    p_ += sizeof u;
    return static_cast<T>(u);
  }

 private:
  const std::uint8_t* p_;
};

}  // namespace

std::size_t record_bytes(BatchKind kind) {
  switch (kind) {
    case BatchKind::Collectives: return kCollectiveRecordBytes;
    case BatchKind::PointToPoint: return kPointToPointRecordBytes;
  }
  return 0;
}

std::string event_batch_problem(std::int64_t kind, std::int64_t first_id, std::int64_t count,
                                std::int64_t format_version, std::size_t payload_bytes,
                                std::int64_t previous_last_id) {
  const std::size_t size = record_bytes(static_cast<BatchKind>(kind));
  if (size == 0) return fmt::format("kind {} is not one this collscope reads", kind);
  if (format_version != kBatchFormatVersion)
    return fmt::format("format version {} is not one this collscope reads ({})", format_version, kBatchFormatVersion);
  if (count < 0 || payload_bytes % size != 0 || payload_bytes / size != static_cast<std::uint64_t>(count))
    return fmt::format("payload of {} bytes is not {} records of {} bytes (a truncated or corrupt batch)",
                       payload_bytes, count, size);
  if (first_id < 1 || first_id > std::numeric_limits<std::int64_t>::max() - count)
    return fmt::format("first_id {} is out of range (a corrupt batch)", first_id);
  if (first_id <= previous_last_id)
    return fmt::format("first_id {} overlaps the ids of an earlier batch (up to {}; a corrupt file)", first_id,
                       previous_last_id);
  return {};
}

CollectiveRow decode_collective(const std::uint8_t* record, std::int64_t id, std::int64_t thread) {
  RecordReader in(record);
  CollectiveRow r;
  r.id = id;
  r.thread = thread;
  r.start_ns = in.next<std::int64_t>();
  r.end_ns = in.next<std::int64_t>();
  r.seq = in.next<std::int64_t>();
  r.count = in.next<std::int64_t>();
  r.bytes = in.next<std::int64_t>();
  r.sendbuf = in.next<std::uint64_t>();
  r.recvbuf = in.next<std::uint64_t>();
  const auto post_end_ns = in.next<std::int64_t>();
  const auto wait_ns = in.next<std::int64_t>();
  r.comm = in.next<std::uint32_t>();
  r.datatype = in.next<std::uint32_t>();
  r.reduce_op = in.next<std::uint32_t>();
  const auto root = in.next<std::int32_t>();
  const auto peer = in.next<std::int32_t>();
  r.status = in.next<std::int32_t>();
  const auto wait_calls = in.next<std::uint32_t>();
  const auto op = in.next<std::uint8_t>();
  const auto flags = in.next<std::uint8_t>();
  r.op = op < kOpCount ? static_cast<Op>(op) : Op::Unknown;  // as the table's reader reads a code it does not know
  if (flags & kRecordRoot) r.root = root;
  if (flags & kRecordPeer) r.peer = peer;
  if (flags & kRecordNonBlocking) {
    r.post_end_ns = post_end_ns;
    r.wait_ns = wait_ns;
    r.wait_calls = wait_calls;
  }
  return r;
}

PointToPointRow decode_point_to_point(const std::uint8_t* record, std::int64_t id, std::int64_t thread) {
  RecordReader in(record);
  PointToPointRow r;
  r.id = id;
  r.thread = thread;
  r.start_ns = in.next<std::int64_t>();
  r.end_ns = in.next<std::int64_t>();
  r.seq = in.next<std::int64_t>();
  r.count = in.next<std::int64_t>();
  const auto send_bytes = in.next<std::int64_t>();
  const auto recv_bytes = in.next<std::int64_t>();
  r.sendbuf = in.next<std::uint64_t>();
  r.recvbuf = in.next<std::uint64_t>();
  const auto post_end_ns = in.next<std::int64_t>();
  const auto wait_ns = in.next<std::int64_t>();
  r.comm = in.next<std::uint32_t>();
  r.datatype = in.next<std::uint32_t>();
  const auto send_peer = in.next<std::int32_t>();
  const auto send_tag = in.next<std::int32_t>();
  const auto recv_peer = in.next<std::int32_t>();
  const auto recv_tag = in.next<std::int32_t>();
  r.status = in.next<std::int32_t>();
  const auto wait_calls = in.next<std::uint32_t>();
  const auto op = in.next<std::uint8_t>();
  const auto flags = in.next<std::uint8_t>();
  r.op = op < kOpCount ? static_cast<Op>(op) : Op::Unknown;
  if (flags & kRecordSends) {
    r.send_peer = send_peer;
    r.send_tag = send_tag;
    r.send_bytes = send_bytes;
  }
  if (flags & kRecordReceives) {
    r.recv_peer = recv_peer;
    r.recv_tag = recv_tag;
    r.recv_bytes = recv_bytes;
  }
  if (flags & kRecordNonBlocking) {
    r.post_end_ns = post_end_ns;
    r.wait_ns = wait_ns;
    r.wait_calls = wait_calls;
  }
  return r;
}

}  // namespace collscope::store
