#include <collscope/store/error.hpp>
#include <collscope/store/event_batch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace collscope::store {

namespace {

// Calls fn(traits) with the BatchRecordTraits of `kind`; false for a kind this version does not know.
template <typename Fn>
bool with_kind(BatchKind kind, Fn&& fn) {
  switch (kind) {
    case BatchKind::Collectives: fn(BatchRecordTraits<CollectiveRecord>{}); return true;
    case BatchKind::PointToPoint: fn(BatchRecordTraits<PointToPointRecord>{}); return true;
    case BatchKind::NvtxRanges: fn(BatchRecordTraits<NvtxRangeRecord>{}); return true;
    case BatchKind::GpuActivities: fn(BatchRecordTraits<GpuActivityRecord>{}); return true;
    case BatchKind::Buffers: fn(BatchRecordTraits<BufferRecord>{}); return true;
    case BatchKind::CollectiveGpuTimes: fn(BatchRecordTraits<CollectiveGpuTimesRecord>{}); return true;
  }
  return false;
}

}  // namespace

std::size_t min_record_bytes(BatchKind kind, std::int64_t format_version) {
  if (format_version < 1 || format_version > kBatchFormatVersion) return 0;
  std::size_t fields = 0;  // those written whatever the flags
  with_kind(kind, [&](auto traits) {
    constexpr auto& table = decltype(traits)::fields;
    for (std::size_t i = 0; i < table.size(); ++i) fields += field_written(table[i], format_version, 0);
  });
  return fields;
}

std::size_t min_record_bytes(BatchKind kind) {
  std::size_t fewest = 0;
  for (std::int64_t v = kBatchFormatVersion; v >= 1; --v)
    if (const std::size_t n = min_record_bytes(kind, v)) fewest = fewest ? std::min(fewest, n) : n;
  return fewest;
}

std::string event_batch_problem(std::int64_t kind, std::int64_t first_id, std::int64_t count,
                                std::int64_t format_version, std::size_t payload_bytes,
                                std::int64_t previous_last_id) {
  if (min_record_bytes(static_cast<BatchKind>(kind)) == 0) return fmt::format("kind {} is not one this collscope reads", kind);
  const std::size_t min = min_record_bytes(static_cast<BatchKind>(kind), format_version);
  // Kinds 3-6 came with version 2: a version-1 batch of them is no writer's.
  if (min == 0 || (kind > static_cast<std::int64_t>(BatchKind::PointToPoint) && format_version < 2))
    return fmt::format("format version {} is not one this collscope reads for kind {} (1 to {})", format_version,
                       kind, kBatchFormatVersion);
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

CollectiveRecord record_of(const std::array<std::int64_t, 21>& f, CollectiveRecord) {
  CollectiveRecord r;
  r.start_ns = f[0], r.end_ns = f[1], r.seq = f[2], r.count = f[3], r.bytes = f[4];
  r.sendbuf = static_cast<std::uint64_t>(f[5]), r.recvbuf = static_cast<std::uint64_t>(f[6]);
  r.post_end_ns = f[7], r.wait_ns = f[8];
  r.comm = static_cast<std::uint32_t>(f[9]), r.datatype = static_cast<std::uint32_t>(f[10]);
  r.reduce_op = static_cast<std::uint32_t>(f[11]);
  r.root = static_cast<std::int32_t>(f[12]), r.peer = static_cast<std::int32_t>(f[13]);
  r.status = static_cast<std::int32_t>(f[14]), r.wait_calls = static_cast<std::uint32_t>(f[15]);
  r.op = static_cast<std::uint8_t>(f[16]), r.flags = static_cast<std::uint8_t>(f[17]);
  r.stream = static_cast<std::uint64_t>(f[18]), r.correlation = static_cast<std::uint64_t>(f[19]), r.group = f[20];
  return r;
}

PointToPointRecord record_of(const std::array<std::int64_t, 20>& f, PointToPointRecord) {
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

NvtxRangeRecord record_of(const std::array<std::int64_t, 12>& f, NvtxRangeRecord) {
  NvtxRangeRecord r;
  r.start_ns = f[0], r.end_ns = f[1], r.thread = f[2], r.end_thread = f[3], r.domain = f[4], r.name = f[5];
  r.category = f[6], r.depth = static_cast<std::int32_t>(f[7]), r.payload = f[8];
  r.color = static_cast<std::uint32_t>(f[9]), r.kind = static_cast<std::uint8_t>(f[10]);
  r.flags = static_cast<std::uint8_t>(f[11]);
  return r;
}

GpuActivityRecord record_of(const std::array<std::int64_t, 10>& f, GpuActivityRecord) {
  GpuActivityRecord r;
  r.start_ns = f[0], r.end_ns = f[1];
  r.correlation = static_cast<std::uint64_t>(f[2]), r.stream = static_cast<std::uint64_t>(f[3]);
  r.name = f[4], r.bytes = f[5], r.device = static_cast<std::int32_t>(f[6]);
  r.copy_kind = static_cast<std::int32_t>(f[7]), r.kind = static_cast<std::uint8_t>(f[8]);
  r.flags = static_cast<std::uint8_t>(f[9]);
  return r;
}

BufferRecord record_of(const std::array<std::int64_t, 9>& f, BufferRecord) {
  BufferRecord r;
  r.first_ns = f[0], r.last_ns = f[1], r.address = static_cast<std::uint64_t>(f[2]), r.bytes_max = f[3];
  r.bytes_min = f[4], r.bytes_total = f[5], r.uses = f[6], r.tensors_packed = f[7], r.bytes_packed = f[8];
  return r;
}

CollectiveGpuTimesRecord record_of(const std::array<std::int64_t, 3>& f, CollectiveGpuTimesRecord) {
  return {.gpu_start_ns = f[0], .gpu_end_ns = f[1], .collective = f[2]};
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
  if (r.flags & kRecordNccl) {  // 0 is NULL, as the interposer records no stream, correlation or group
    if (r.stream) row.stream = r.stream;
    if (r.correlation) row.correlation = r.correlation;
    if (r.group) row.group = r.group;
  }
  return row;
}

PointToPointRow row_of(const PointToPointRecord& r, std::int64_t id, std::int64_t thread) {
  auto row = common_row<PointToPointRow>(r, id, thread);
  if (r.flags & kRecordSends) row.send_peer = r.send_peer, row.send_tag = r.send_tag, row.send_bytes = r.send_bytes;
  if (r.flags & kRecordReceives) row.recv_peer = r.recv_peer, row.recv_tag = r.recv_tag, row.recv_bytes = r.recv_bytes;
  return row;
}

NvtxRangeRow row_of(const NvtxRangeRecord& r, std::int64_t id, std::int64_t) {
  NvtxRangeRow row;
  row.id = id;
  row.domain = r.domain;
  row.name = r.name;
  row.kind = static_cast<NvtxKind>(r.kind);
  row.category = r.category;
  row.start_ns = r.start_ns;
  if (r.flags & kRecordEnded) row.end_ns = r.end_ns;
  row.thread = r.thread;
  if (r.flags & kRecordEndThread) row.end_thread = r.end_thread;
  row.depth = r.depth;
  if (r.flags & kRecordPayloadInt) row.payload_int = r.payload;
  else if (r.flags & kRecordPayloadDouble) row.payload_double = std::bit_cast<double>(r.payload);
  if (r.flags & kRecordColor) row.color = r.color;
  return row;
}

GpuActivityRow row_of(const GpuActivityRecord& r, std::int64_t id, std::int64_t) {
  GpuActivityRow row;
  row.id = id;
  row.kind = static_cast<GpuActivityKind>(r.kind);
  row.name = r.name;
  row.device = r.device;
  row.stream = r.stream;
  row.start_ns = r.start_ns;
  row.end_ns = r.end_ns;
  row.correlation = r.correlation;
  row.bytes = r.bytes;
  if (r.flags & kRecordCopyKind) row.copy_kind = r.copy_kind;
  return row;
}

BufferRow row_of(const BufferRecord& r, std::int64_t, std::int64_t) {
  return {r.address, r.bytes_max, r.bytes_min, r.bytes_total, r.uses, r.first_ns, r.last_ns, r.tensors_packed,
          r.bytes_packed};
}

template <typename Row>
bool BatchDecoder<Row>::next(Row& out) {
  using Record = typename BatchRecordOf<Row>::type;
  using Traits = BatchRecordTraits<Record>;
  constexpr auto& table = Traits::fields;
  if (left_ == 0) {
    if (p_ != end_)
      throw InputError(fmt::format("{}: {} bytes after its last record (a corrupt batch)", where_, end_ - p_));
    return false;
  }
  typename Traits::FieldValues f{};
  std::int64_t flags = 0;
  auto take = [&](std::size_t i) {
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
    prev_[i] = f[i];
  };
  // From format 2 the flags come first; fields they say are absent, or that the batch's format predates, are 0.
  const bool flags_first = Traits::flags_index < table.size() && version_ >= kFlagsFirstSince;
  if (flags_first) take(Traits::flags_index), flags = f[Traits::flags_index];
  for (std::size_t i = 0; i < table.size(); ++i)
    if (!(flags_first && i == Traits::flags_index) && field_written(table[i], version_, flags)) take(i);
  out = row_of(record_of(f, Record{}), id_++, thread_);
  --left_;
  ++index_;
  return true;
}

template class BatchDecoder<CollectiveRow>;
template class BatchDecoder<PointToPointRow>;
template class BatchDecoder<NvtxRangeRow>;
template class BatchDecoder<GpuActivityRow>;
template class BatchDecoder<BufferRow>;
template class BatchDecoder<CollectiveGpuTimesRecord>;

}  // namespace collscope::store
