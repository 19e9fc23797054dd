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
  std::array<std::int64_t, table.size()> f{};
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
  out = Row{};
  out.id = id_++;
  out.thread = thread_;
  out.start_ns = f[0];
  out.end_ns = f[1];
  out.seq = f[2];
  out.count = f[3];
  const auto flags = static_cast<std::uint8_t>(f[table.size() - 1]);
  const auto op = static_cast<std::uint8_t>(f[table.size() - 2]);
  out.op = op < kOpCount ? static_cast<Op>(op) : Op::Unknown;  // as the table's reader reads a code it does not know
  if constexpr (collective) {
    out.bytes = f[4];
    out.sendbuf = static_cast<std::uint64_t>(f[5]);
    out.recvbuf = static_cast<std::uint64_t>(f[6]);
    if (flags & kRecordNonBlocking) out.post_end_ns = f[7], out.wait_ns = f[8], out.wait_calls = f[15];
    out.comm = f[9];
    out.datatype = f[10];
    out.reduce_op = f[11];
    if (flags & kRecordRoot) out.root = static_cast<std::int32_t>(f[12]);
    if (flags & kRecordPeer) out.peer = static_cast<std::int32_t>(f[13]);
    out.status = static_cast<std::int32_t>(f[14]);
  } else {
    if (flags & kRecordSends) {
      out.send_bytes = f[4];
      out.send_peer = static_cast<std::int32_t>(f[12]);
      out.send_tag = static_cast<std::int32_t>(f[13]);
    }
    if (flags & kRecordReceives) {
      out.recv_bytes = f[5];
      out.recv_peer = static_cast<std::int32_t>(f[14]);
      out.recv_tag = static_cast<std::int32_t>(f[15]);
    }
    out.sendbuf = static_cast<std::uint64_t>(f[6]);
    out.recvbuf = static_cast<std::uint64_t>(f[7]);
    if (flags & kRecordNonBlocking) out.post_end_ns = f[8], out.wait_ns = f[9], out.wait_calls = f[17];
    out.comm = f[10];
    out.datatype = f[11];
    out.status = static_cast<std::int32_t>(f[16]);
  }
  --left_;
  ++index_;
  return true;
}

template class BatchDecoder<CollectiveRow>;
template class BatchDecoder<PointToPointRow>;

}  // namespace collscope::store
