#include <collscope/store/error.hpp>
#include <collscope/store/event_batch.hpp>

#include <fmt/format.h>

namespace collscope::store {

std::size_t min_record_bytes(BatchKind kind) {
  switch (kind) {
    case BatchKind::Collectives: return kMinCollectiveRecordBytes;
    case BatchKind::PointToPoint: return kMinPointToPointRecordBytes;
  }
  return 0;
}

std::string event_batch_problem(std::int64_t kind, std::int64_t first_id, std::int64_t count,
                                std::int64_t format_version, std::size_t payload_bytes,
                                std::int64_t previous_last_id) {
  const std::size_t min = min_record_bytes(static_cast<BatchKind>(kind));
  if (min == 0) return fmt::format("kind {} is not one this collscope reads", kind);
  if (format_version != kBatchFormatVersion)
    return fmt::format("format version {} is not one this collscope reads ({})", format_version, kBatchFormatVersion);
  if (count < 0 || static_cast<std::uint64_t>(count) > payload_bytes / min)
    return fmt::format("count {} does not fit a payload of {} bytes (a truncated or corrupt batch)", count,
                       payload_bytes);
  if (first_id < 1 || first_id > std::numeric_limits<std::int64_t>::max() - count)
    return fmt::format("first_id {} is out of range (a corrupt batch)", first_id);
  if (first_id <= previous_last_id)
    return fmt::format("first_id {} overlaps the ids of an earlier batch (up to {}; a corrupt file)", first_id,
                       previous_last_id);
  return {};
}

CollectiveRecord record_of(const CollectiveFields& f) {
  CollectiveRecord r;
  r.start_ns = f[0], r.end_ns = f[1], r.seq = f[2], r.count = f[3], r.bytes = f[4];
  r.sendbuf = static_cast<std::uint64_t>(f[5]), r.recvbuf = static_cast<std::uint64_t>(f[6]);
  r.post_end_ns = f[7], r.wait_ns = f[8];
  r.comm = static_cast<std::uint32_t>(f[9]), r.datatype = static_cast<std::uint32_t>(f[10]);
  r.reduce_op = static_cast<std::uint32_t>(f[11]);
  r.root = static_cast<std::int32_t>(f[12]), r.peer = static_cast<std::int32_t>(f[13]);
  r.status = static_cast<std::int32_t>(f[14]), r.wait_calls = static_cast<std::uint32_t>(f[15]);
  r.op = static_cast<std::uint8_t>(f[16]), r.flags = static_cast<std::uint8_t>(f[17]);
  return r;
}

PointToPointRecord record_of(const PointToPointFields& f) {
  PointToPointRecord r;
  r.start_ns = f[0], r.end_ns = f[1], r.seq = f[2], r.count = f[3], r.send_bytes = f[4], r.recv_bytes = f[5];
  r.sendbuf = static_cast<std::uint64_t>(f[6]), r.recvbuf = static_cast<std::uint64_t>(f[7]);
  r.post_end_ns = f[8], r.wait_ns = f[9];
  r.comm = static_cast<std::uint32_t>(f[10]), r.datatype = static_cast<std::uint32_t>(f[11]);
  r.send_peer = static_cast<std::int32_t>(f[12]), r.send_tag = static_cast<std::int32_t>(f[13]);
  r.recv_peer = static_cast<std::int32_t>(f[14]), r.recv_tag = static_cast<std::int32_t>(f[15]);
  r.status = static_cast<std::int32_t>(f[16]), r.wait_calls = static_cast<std::uint32_t>(f[17]);
  r.op = static_cast<std::uint8_t>(f[18]), r.flags = static_cast<std::uint8_t>(f[19]);
  return r;
}

namespace {

// The columns both kinds have.
template <typename Row, typename Record>
Row common_row(const Record& r, std::int64_t id, std::int64_t thread) {
  Row row;
  row.id = id;
  row.comm = r.comm;
  row.seq = r.seq;
  row.op = r.op < kOpCount ? static_cast<Op>(r.op) : Op::Unknown;  // as the table's reader reads a code it does not know
  row.count = r.count;
  row.datatype = r.datatype;
  row.sendbuf = r.sendbuf;
  row.recvbuf = r.recvbuf;
  row.thread = thread;
  row.start_ns = r.start_ns;
  row.end_ns = r.end_ns;
  row.status = r.status;
  if (r.flags & kRecordNonBlocking) row.post_end_ns = r.post_end_ns, row.wait_ns = r.wait_ns, row.wait_calls = r.wait_calls;
  return row;
}

}  // namespace

CollectiveRow row_of(const CollectiveRecord& r, std::int64_t id, std::int64_t thread) {
  auto row = common_row<CollectiveRow>(r, id, thread);
  row.bytes = r.bytes;
  row.reduce_op = r.reduce_op;
  if (r.flags & kRecordRoot) row.root = r.root;
  if (r.flags & kRecordPeer) row.peer = r.peer;
  return row;
}

PointToPointRow row_of(const PointToPointRecord& r, std::int64_t id, std::int64_t thread) {
  auto row = common_row<PointToPointRow>(r, id, thread);
  if (r.flags & kRecordSends) row.send_peer = r.send_peer, row.send_tag = r.send_tag, row.send_bytes = r.send_bytes;
  if (r.flags & kRecordReceives) row.recv_peer = r.recv_peer, row.recv_tag = r.recv_tag, row.recv_bytes = r.recv_bytes;
  return row;
}

template <typename Row>
bool BatchDecoder<Row>::next(Row& out) {
  constexpr bool collective = std::is_same_v<Row, CollectiveRow>;
  using Fields = std::conditional_t<collective, CollectiveFields, PointToPointFields>;
  constexpr auto& table = field_table<Fields>();
  if (left_ == 0) {
    if (p_ != end_)
      throw InputError(fmt::format("{}: {} bytes after its last record (a corrupt batch)", where_, end_ - p_));
    return false;
  }
  Fields f{};
  for (std::size_t i = 0; i < table.size(); ++i) {
    std::uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      if (p_ == end_)
        throw InputError(fmt::format("{}: record {} runs past the end of the payload (a truncated or corrupt batch)",
                                     where_, index_));
      const std::uint8_t b = *p_++;
      if (shift == 63 && b > 1)
        throw InputError(fmt::format("{}: record {}: field {} is longer than 64 bits (a corrupt batch)", where_,
                                     index_, table[i].name));
      z |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    const std::uint64_t diff = (z >> 1) ^ (~(z & 1) + 1);  // zigzag back
    const std::uint64_t prediction = static_cast<std::uint64_t>(table[i].from_start ? f[0] : prev_[i]);
    f[i] = static_cast<std::int64_t>(prediction + diff);
    if (f[i] < table[i].min || f[i] > table[i].max)
      throw InputError(fmt::format("{}: record {}: {} = {} is out of range (a corrupt batch)", where_, index_,
                                   table[i].name, f[i]));
  }
  std::copy(f.begin(), f.end(), prev_.begin());
  out = row_of(record_of(f), id_++, thread_);
  --left_;
  ++index_;
  return true;
}

template class BatchDecoder<CollectiveRow>;
template class BatchDecoder<PointToPointRow>;

}  // namespace collscope::store
