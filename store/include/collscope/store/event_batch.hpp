#pragma once
// The binary layout of event_batches.payload (schema 1.3, every record kind since 1.6): while the job runs, the
// tracer's writer saves its records (collectives of MPI and NCCL, point_to_point, nvtx_ranges, gpu_activities, the
// buffers' running totals, and the GPU times of collectives found later) as one blob per drain and kind instead of
// one SQLite row each (SQLite needs ~6 000 instructions per 21-column row). Each record is the row itself, already
// resolved (times in ns of CLOCK_MONOTONIC, strings.id, communicators.id and threads.id of the file), so a reader
// needs nothing but the file. A record is its fields in a fixed order (the kind's field table below), each written
// as the difference from a prediction (the same field of the previous record of the batch, 0 for the first; the
// record's own field 0 for fields marked from_start, e.g. end_ns from start_ns), zigzag-mapped and in LEB128
// (7 bits a byte, low first): consecutive records differ little, so a record is ~10-25 bytes instead of ~100 fixed
// ones, and the writer's cost is the bytes it writes (docs/performance.md). docs/trace-format.md describes every
// kind field by field.
//
// Adding a kind: its Record struct, field table, fields_of, record_of and row_of here, one BatchRecordTraits line,
// and its section in docs/trace-format.md. Adding a field to a kind: at the end of its table with `since` the next
// kBatchFormatVersion (batches of older versions decode it as 0).
#include <collscope/store/schema.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace collscope::store {

enum class BatchKind : std::int64_t {
  Collectives = 1,         // rows of collectives (MPI; NCCL too since 1.6)
  PointToPoint = 2,        // rows of point_to_point
  NvtxRanges = 3,          // rows of nvtx_ranges (1.6)
  GpuActivities = 4,       // rows of gpu_activities (1.6)
  Buffers = 5,             // a buffers row's totals so far; a later record of the address replaces it (1.6)
  CollectiveGpuTimes = 6,  // GPU times of a collectives row, found after the row was saved (1.6)
};
// 1: kinds 1 and 2 as schema 1.3-1.5 wrote them; 2 (schema 1.6): kinds 3-6, kind 1's NCCL fields, and a record's
// flags first so that fields its flags say are absent take no bytes.
inline constexpr std::int64_t kBatchFormatVersion = 2;
inline constexpr std::int64_t kFlagsFirstSince = 2;

// A collectives row, its fields in payload order. NCCL's GPU times are not in it: they come later, as
// CollectiveGpuTimesRecord (docs/design.md, "Event batches").
struct CollectiveRecord {
  std::int64_t start_ns = 0, end_ns = 0, seq = 0, count = 0, bytes = 0;
  std::uint64_t sendbuf = 0, recvbuf = 0;
  std::int64_t post_end_ns = 0, wait_ns = 0;  // when flags has kRecordNonBlocking
  std::uint32_t comm = 0, datatype = 0, reduce_op = 0;
  std::int32_t root = 0, peer = 0;  // when flags has kRecordRoot / kRecordPeer
  std::int32_t status = 0;
  std::uint32_t wait_calls = 0;  // when flags has kRecordNonBlocking
  std::uint8_t op = 0, flags = 0;
  // NCCL (format 2), when flags has kRecordNccl: cudaStream_t, CUPTI external correlation id, group id; 0 = NULL.
  std::uint64_t stream = 0, correlation = 0;
  std::int64_t group = 0;
};
inline constexpr std::uint8_t kRecordRoot = 1, kRecordPeer = 2;
inline constexpr std::uint8_t kRecordNccl = 8;  // stream, correlation, grp

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

// An nvtx_ranges row (format 2). Unlike kinds 1 and 2 it carries its thread: a start/end range may end on another
// thread, and a batch holds every range a drain closed.
struct NvtxRangeRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;      // when flags has kRecordEnded (ns, CLOCK_MONOTONIC)
  std::int64_t thread = 0;      // threads.id that started it
  std::int64_t end_thread = 0;  // when flags has kRecordEndThread
  std::int64_t domain = 0, name = 0;  // strings.id
  std::int64_t category = 0;
  std::int32_t depth = 0;
  std::int64_t payload = 0;  // payload_int, or payload_double's IEEE-754 bits, as flags say
  std::uint32_t color = 0;   // ARGB, when flags has kRecordColor
  std::uint8_t kind = 0;     // NvtxKind
  std::uint8_t flags = 0;
};
inline constexpr std::uint8_t kRecordEnded = 1, kRecordEndThread = 2, kRecordPayloadInt = 4,
                              kRecordPayloadDouble = 8, kRecordColor = 16;

// A gpu_activities row (format 2).
struct GpuActivityRecord {
  std::int64_t start_ns = 0, end_ns = 0;  // ns, CLOCK_MONOTONIC
  std::uint64_t correlation = 0, stream = 0;
  std::int64_t name = 0;  // strings.id
  std::int64_t bytes = 0;
  std::int32_t device = 0;
  std::int32_t copy_kind = 0;  // when flags has kRecordCopyKind
  std::uint8_t kind = 0;       // GpuActivityKind
  std::uint8_t flags = 0;
};
inline constexpr std::uint8_t kRecordCopyKind = 1;

// A buffers row as it stands after a drain (format 2): the totals so far of one address. The writer saves the
// buffers a drain touched; the last record of an address is its row.
struct BufferRecord {
  std::uint64_t address = 0;
  std::int64_t bytes_max = 0, bytes_min = 0, bytes_total = 0, uses = 0;
  std::int64_t first_ns = 0, last_ns = 0;  // ns, CLOCK_MONOTONIC
  std::int64_t tensors_packed = 0, bytes_packed = 0;
};

// The GPU span of a collectives row found after the row was saved (NCCL: CUPTI's kernels, NCCL's profiler's kernel
// channels), format 2. Readers set the row's gpu_start_ns and gpu_end_ns from the last record naming it.
struct CollectiveGpuTimesRecord {
  std::int64_t gpu_start_ns = 0, gpu_end_ns = 0;  // ns, CLOCK_MONOTONIC
  std::int64_t collective = 0;                    // collectives.id
};

// One field of a record: its name (the column it fills), the values it may take, whether it is predicted from
// the record's field 0 rather than from the previous record, the format version that added it (a batch of an
// older version has no bytes for it: it decodes as 0), and the flag bits that say it holds a value (0: always).
// From format 2 on, a record's `flags` field is written first, and a field none of whose bits are set takes no
// bytes (it decodes as 0, and the next record's prediction is the last value written).
struct BatchField {
  const char* name;
  std::int64_t min, max;
  bool from_start;
  std::int64_t since = 1;
  std::uint8_t if_flag = 0;
};
namespace detail {
inline constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
inline constexpr BatchField any(const char* name, std::uint8_t if_flag = 0, bool from_start = false,
                                std::int64_t since = 1) {
  return {name, kI64Min, kI64Max, from_start, since, if_flag};
}
inline constexpr BatchField id(const char* name, std::uint8_t if_flag = 0) { return {name, 0, kI64Max, false, 1, if_flag}; }
inline constexpr BatchField u32(const char* name, std::uint8_t if_flag = 0) { return {name, 0, kU32Max, false, 1, if_flag}; }
inline constexpr BatchField i32(const char* name, std::uint8_t if_flag = 0) {
  return {name, kI32Min, kI32Max, false, 1, if_flag};
}
inline constexpr BatchField byte(const char* name) { return {name, 0, 255, false}; }
inline constexpr std::uint8_t kAlways = 0;
}  // namespace detail
inline constexpr std::array<BatchField, 21> kCollectiveFields = {{
    detail::any("start_ns"), detail::any("end_ns", detail::kAlways, true), detail::any("seq"), detail::any("count"),
    detail::any("bytes"), detail::any("sendbuf"), detail::any("recvbuf"),
    detail::any("post_end_ns", kRecordNonBlocking, true), detail::any("wait_ns", kRecordNonBlocking),
    detail::u32("comm"), detail::u32("datatype"), detail::u32("reduce_op"), detail::i32("root", kRecordRoot),
    detail::i32("peer", kRecordPeer), detail::i32("status"), detail::u32("wait_calls", kRecordNonBlocking),
    detail::byte("op"), detail::byte("flags"), detail::any("stream", kRecordNccl, false, 2),
    detail::any("correlation", kRecordNccl, false, 2), detail::any("grp", kRecordNccl, false, 2),
}};
inline constexpr std::array<BatchField, 20> kPointToPointFields = {{
    detail::any("start_ns"), detail::any("end_ns", detail::kAlways, true), detail::any("seq"), detail::any("count"),
    detail::any("send_bytes", kRecordSends), detail::any("recv_bytes", kRecordReceives), detail::any("sendbuf"),
    detail::any("recvbuf"), detail::any("post_end_ns", kRecordNonBlocking, true),
    detail::any("wait_ns", kRecordNonBlocking), detail::u32("comm"), detail::u32("datatype"),
    detail::i32("send_peer", kRecordSends), detail::i32("send_tag", kRecordSends),
    detail::i32("recv_peer", kRecordReceives), detail::i32("recv_tag", kRecordReceives), detail::i32("status"),
    detail::u32("wait_calls", kRecordNonBlocking), detail::byte("op"), detail::byte("flags"),
}};
inline constexpr std::array<BatchField, 12> kNvtxRangeFields = {{
    detail::any("start_ns"), detail::any("end_ns", kRecordEnded, true), detail::id("thread"),
    detail::id("end_thread", kRecordEndThread), detail::id("domain"), detail::id("name"), detail::any("category"),
    detail::i32("depth"), detail::any("payload", kRecordPayloadInt | kRecordPayloadDouble),
    detail::u32("color", kRecordColor), detail::byte("kind"), detail::byte("flags"),
}};
inline constexpr std::array<BatchField, 10> kGpuActivityFields = {{
    detail::any("start_ns"), detail::any("end_ns", detail::kAlways, true), detail::any("correlation"),
    detail::any("stream"), detail::id("name"), detail::any("bytes"), detail::i32("device"),
    detail::i32("copy_kind", kRecordCopyKind), detail::byte("kind"), detail::byte("flags"),
}};
inline constexpr std::array<BatchField, 9> kBufferFields = {{
    detail::any("first_ns"), detail::any("last_ns", detail::kAlways, true), detail::any("address"),
    detail::any("bytes_max"), detail::any("bytes_min"), detail::any("bytes_total"), detail::any("uses"),
    detail::any("tensors_packed"), detail::any("bytes_packed"),
}};
inline constexpr std::array<BatchField, 3> kCollectiveGpuTimesFields = {{
    detail::any("gpu_start_ns"), detail::any("gpu_end_ns", detail::kAlways, true), detail::id("collective"),
}};
// The most fields a kind has, and the most bytes a record takes (ten per field).
inline constexpr std::size_t kMaxRecordFields = kCollectiveFields.size();
inline constexpr std::size_t kMaxRecordBytes = 10 * kMaxRecordFields;

// A record's fields as integers, in payload order (the 64 bits of unsigned and double fields as they are).
inline std::array<std::int64_t, 21> fields_of(const CollectiveRecord& r) {
  // A blocking call's post_end_ns is written as its start_ns: a difference of 0, one byte.
  const std::int64_t post_end_ns = r.flags & kRecordNonBlocking ? r.post_end_ns : r.start_ns;
  return {r.start_ns, r.end_ns, r.seq, r.count, r.bytes, static_cast<std::int64_t>(r.sendbuf),
          static_cast<std::int64_t>(r.recvbuf), post_end_ns, r.wait_ns, r.comm, r.datatype, r.reduce_op, r.root,
          r.peer, r.status, r.wait_calls, r.op, r.flags, static_cast<std::int64_t>(r.stream),
          static_cast<std::int64_t>(r.correlation), r.group};
}
inline std::array<std::int64_t, 20> fields_of(const PointToPointRecord& r) {
  const std::int64_t post_end_ns = r.flags & kRecordNonBlocking ? r.post_end_ns : r.start_ns;
  return {r.start_ns, r.end_ns, r.seq, r.count, r.send_bytes, r.recv_bytes, static_cast<std::int64_t>(r.sendbuf),
          static_cast<std::int64_t>(r.recvbuf), post_end_ns, r.wait_ns, r.comm, r.datatype, r.send_peer,
          r.send_tag, r.recv_peer, r.recv_tag, r.status, r.wait_calls, r.op, r.flags};
}
inline std::array<std::int64_t, 12> fields_of(const NvtxRangeRecord& r) {
  // A range never ended is written with end_ns = start_ns, end_thread = thread: differences of 0.
  const std::int64_t end_ns = r.flags & kRecordEnded ? r.end_ns : r.start_ns;
  const std::int64_t end_thread = r.flags & kRecordEndThread ? r.end_thread : r.thread;
  return {r.start_ns, end_ns, r.thread, end_thread, r.domain, r.name, r.category, r.depth, r.payload, r.color,
          r.kind, r.flags};
}
inline std::array<std::int64_t, 10> fields_of(const GpuActivityRecord& r) {
  return {r.start_ns, r.end_ns, static_cast<std::int64_t>(r.correlation), static_cast<std::int64_t>(r.stream),
          r.name, r.bytes, r.device, r.copy_kind, r.kind, r.flags};
}
inline std::array<std::int64_t, 9> fields_of(const BufferRecord& r) {
  return {r.first_ns, r.last_ns, static_cast<std::int64_t>(r.address), r.bytes_max, r.bytes_min, r.bytes_total,
          r.uses, r.tensors_packed, r.bytes_packed};
}
inline std::array<std::int64_t, 3> fields_of(const CollectiveGpuTimesRecord& r) {
  return {r.gpu_start_ns, r.gpu_end_ns, r.collective};
}

// The inverse of fields_of (fields taken as they are: a decoder checks their ranges first).
CollectiveRecord record_of(const std::array<std::int64_t, 21>& f, CollectiveRecord);
PointToPointRecord record_of(const std::array<std::int64_t, 20>& f, PointToPointRecord);
NvtxRangeRecord record_of(const std::array<std::int64_t, 12>& f, NvtxRangeRecord);
GpuActivityRecord record_of(const std::array<std::int64_t, 10>& f, GpuActivityRecord);
BufferRecord record_of(const std::array<std::int64_t, 9>& f, BufferRecord);
CollectiveGpuTimesRecord record_of(const std::array<std::int64_t, 3>& f, CollectiveGpuTimesRecord);

// The row a record stands for: the one meaning of a record's fields and flags, for the decoder and for the
// tracer's row path alike. `id` is the row's id, `thread` the batch's (kinds 1 and 2, whose records have none).
CollectiveRow row_of(const CollectiveRecord& r, std::int64_t id, std::int64_t thread);
PointToPointRow row_of(const PointToPointRecord& r, std::int64_t id, std::int64_t thread);
NvtxRangeRow row_of(const NvtxRangeRecord& r, std::int64_t id, std::int64_t thread);
GpuActivityRow row_of(const GpuActivityRecord& r, std::int64_t id, std::int64_t thread);
BufferRow row_of(const BufferRecord& r, std::int64_t id, std::int64_t thread);
inline CollectiveGpuTimesRecord row_of(const CollectiveGpuTimesRecord& r, std::int64_t, std::int64_t) { return r; }

// Each kind in one place: its record, what a decoded record becomes (a table's row; kind 6: the record itself), and
// its field table.
template <typename Record> struct BatchRecordTraits;
template <BatchKind K, typename Rec, typename RowT, const auto& Fields>
struct BatchKindTraits {
  static constexpr BatchKind kind = K;
  using Record = Rec;
  using Row = RowT;
  static constexpr const auto& fields = Fields;
  using FieldValues = std::array<std::int64_t, Fields.size()>;
  // The index of the `flags` field, Fields.size() for a kind without one (no field of it is conditional).
  static constexpr std::size_t flags_index = [] {
    for (std::size_t i = 0; i < Fields.size(); ++i)
      if (std::string_view(Fields[i].name) == "flags") return i;
    return Fields.size();
  }();
};

// Whether field `f` has bytes in a record of format `version` whose flags are `flags`. (It takes the field, not a
// table and an index: as a template over the tables, GCC 12 folded the instantiations into one and warned that the
// largest table's index ran past the smaller ones, -Warray-bounds.)
constexpr bool field_written(const BatchField& f, std::int64_t version, std::int64_t flags) {
  return f.since <= version && (version < kFlagsFirstSince || f.if_flag == 0 || (flags & f.if_flag) != 0);
}
template <> struct BatchRecordTraits<CollectiveRecord>
    : BatchKindTraits<BatchKind::Collectives, CollectiveRecord, CollectiveRow, kCollectiveFields> {};
template <> struct BatchRecordTraits<PointToPointRecord>
    : BatchKindTraits<BatchKind::PointToPoint, PointToPointRecord, PointToPointRow, kPointToPointFields> {};
template <> struct BatchRecordTraits<NvtxRangeRecord>
    : BatchKindTraits<BatchKind::NvtxRanges, NvtxRangeRecord, NvtxRangeRow, kNvtxRangeFields> {};
template <> struct BatchRecordTraits<GpuActivityRecord>
    : BatchKindTraits<BatchKind::GpuActivities, GpuActivityRecord, GpuActivityRow, kGpuActivityFields> {};
template <> struct BatchRecordTraits<BufferRecord>
    : BatchKindTraits<BatchKind::Buffers, BufferRecord, BufferRow, kBufferFields> {};
template <> struct BatchRecordTraits<CollectiveGpuTimesRecord>
    : BatchKindTraits<BatchKind::CollectiveGpuTimes, CollectiveGpuTimesRecord, CollectiveGpuTimesRecord,
                      kCollectiveGpuTimesFields> {};

// The record kind whose rows are `Row` (void: none), and its BatchKind as the kind column's integer (0: none).
template <typename Row> struct BatchRecordOf { using type = void; };
template <> struct BatchRecordOf<CollectiveRow> { using type = CollectiveRecord; };
template <> struct BatchRecordOf<PointToPointRow> { using type = PointToPointRecord; };
template <> struct BatchRecordOf<NvtxRangeRow> { using type = NvtxRangeRecord; };
template <> struct BatchRecordOf<GpuActivityRow> { using type = GpuActivityRecord; };
template <> struct BatchRecordOf<BufferRow> { using type = BufferRecord; };
template <> struct BatchRecordOf<CollectiveGpuTimesRecord> { using type = CollectiveGpuTimesRecord; };
template <typename Row> inline constexpr std::int64_t kBatchKindOf = [] {
  using Record = typename BatchRecordOf<Row>::type;
  if constexpr (std::is_void_v<Record>) return std::int64_t{0};
  else return static_cast<std::int64_t>(BatchRecordTraits<Record>::kind);
}();

// Encodes the records of one batch, in order (reset() between batches). At most kMaxRecordBytes per record; always
// the current format version: the flags field first, then the others in table order, those the flags say are
// absent left out.
template <typename Record>
class BatchEncoder {
 public:
  std::uint8_t* encode(const Record& r, std::uint8_t* out) {
    using Traits = BatchRecordTraits<Record>;
    constexpr auto& table = Traits::fields;
    const auto f = fields_of(r);
    const std::int64_t flags = Traits::flags_index < f.size() ? f[Traits::flags_index] : 0;
    auto put = [&](std::size_t i) {
      const std::uint64_t diff =
          static_cast<std::uint64_t>(f[i]) - static_cast<std::uint64_t>(table[i].from_start ? f[0] : prev_[i]);
      std::uint64_t z = (diff << 1) ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(diff) >> 63);  // zigzag
      while (z >= 0x80) *out++ = static_cast<std::uint8_t>(z | 0x80), z >>= 7;
      *out++ = static_cast<std::uint8_t>(z);
      prev_[i] = f[i];
    };
    if constexpr (Traits::flags_index < table.size()) put(Traits::flags_index);
    for (std::size_t i = 0; i < f.size(); ++i)
      if (i != Traits::flags_index && field_written(table[i], kBatchFormatVersion, flags)) put(i);
    return out;
  }
  void reset() { prev_ = {}; }

 private:
  typename BatchRecordTraits<Record>::FieldValues prev_{};
};

// The fewest bytes a record of `kind` takes in a batch of `format_version` (one per field it has); 0 for a kind or
// version this collscope does not know.
std::size_t min_record_bytes(BatchKind kind, std::int64_t format_version);
// The fewest over every version: bounds the records any payload of the kind can hold.
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
               std::int64_t thread, std::string where, std::int64_t format_version = kBatchFormatVersion)
      : p_(payload), end_(payload + bytes), id_(first_id), left_(count), thread_(thread),
        version_(format_version), where_(std::move(where)) {}
  bool next(Row& out);

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  std::int64_t id_, left_, thread_, version_, index_ = 0;
  std::string where_;
  std::array<std::int64_t, kMaxRecordFields> prev_{};
};
extern template class BatchDecoder<CollectiveRow>;
extern template class BatchDecoder<PointToPointRow>;
extern template class BatchDecoder<NvtxRangeRow>;
extern template class BatchDecoder<GpuActivityRow>;
extern template class BatchDecoder<BufferRow>;
extern template class BatchDecoder<CollectiveGpuTimesRecord>;

}  // namespace collscope::store
