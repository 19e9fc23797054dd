#pragma once
// The data contract: one SQLite file per rank, schema v1 (docs/trace-format.md documents every column).
// Everything downstream (analyzer, autotuner, gui, formats) sees a run only through these rows. The tables are
// declared once, in tables.def; this header turns that list into the row structs and their column tables.
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace collscope::store {

inline constexpr int kSchemaMajor = 1;
inline constexpr int kSchemaMinor = 8;  // 1.1: calls_in_flight; 1.2: point_to_point,
                                        // non-blocking times, op codes 18-91, nccl_profile, nccl_proxy_ops,
                                        // collective_gpu_work; 1.3: event_batches; 1.4: cpu_samples;
                                        // 1.5: tracer_flushes, batches left unexpanded at exit; 1.6: batch kinds
                                        // 3-6 (NVTX, GPU activities, buffers, GPU times), NCCL calls in batches;
                                        // 1.7: communicators.seq_numbering; 1.8: cpu_samples.instructions

// The largest world a reader accepts (meta.world_size): 8 Mi ranks, beyond any machine's process count, so that a
// corrupt value is refused instead of sizing per-rank arrays.
inline constexpr int kMaxWorldSize = 1 << 23;

// Collective and point-to-point operations. The numeric codes are part of the file format.
enum class Op : std::uint8_t {
  Unknown = 0,
  Allreduce = 1,
  Iallreduce = 2,
  Bcast = 3,
  Reduce = 4,
  Allgather = 5,
  Allgatherv = 6,
  Gather = 7,
  Gatherv = 8,
  Scatter = 9,
  Scatterv = 10,
  ReduceScatter = 11,
  ReduceScatterBlock = 12,
  Alltoall = 13,
  Alltoallv = 14,
  Barrier = 15,
  Send = 16,  // point-to-point (NCCL in `collectives`, MPI in `point_to_point`)
  Recv = 17,
  // 1.2: every MPI communication call (non-blocking, persistent, neighbourhood, point-to-point)
  Ibarrier = 18,
  BarrierInit = 19,
  Ibcast = 20,
  BcastInit = 21,
  Ireduce = 22,
  ReduceInit = 23,
  AllreduceInit = 24,
  Igather = 25,
  GatherInit = 26,
  Igatherv = 27,
  GathervInit = 28,
  Iscatter = 29,
  ScatterInit = 30,
  Iscatterv = 31,
  ScattervInit = 32,
  Iallgather = 33,
  AllgatherInit = 34,
  Iallgatherv = 35,
  AllgathervInit = 36,
  Ialltoall = 37,
  AlltoallInit = 38,
  Ialltoallv = 39,
  AlltoallvInit = 40,
  Alltoallw = 41,
  Ialltoallw = 42,
  AlltoallwInit = 43,
  IreduceScatter = 44,
  ReduceScatterInit = 45,
  IreduceScatterBlock = 46,
  ReduceScatterBlockInit = 47,
  Scan = 48,
  Iscan = 49,
  ScanInit = 50,
  Exscan = 51,
  Iexscan = 52,
  ExscanInit = 53,
  NeighborAllgather = 54,
  IneighborAllgather = 55,
  NeighborAllgatherInit = 56,
  NeighborAllgatherv = 57,
  IneighborAllgatherv = 58,
  NeighborAllgathervInit = 59,
  NeighborAlltoall = 60,
  IneighborAlltoall = 61,
  NeighborAlltoallInit = 62,
  NeighborAlltoallv = 63,
  IneighborAlltoallv = 64,
  NeighborAlltoallvInit = 65,
  NeighborAlltoallw = 66,
  IneighborAlltoallw = 67,
  NeighborAlltoallwInit = 68,
  Isend = 69,
  SendInit = 70,
  Bsend = 71,
  Ibsend = 72,
  BsendInit = 73,
  Ssend = 74,
  Issend = 75,
  SsendInit = 76,
  Rsend = 77,
  Irsend = 78,
  RsendInit = 79,
  Irecv = 80,
  RecvInit = 81,
  Sendrecv = 82,
  Isendrecv = 83,
  SendrecvReplace = 84,
  IsendrecvReplace = 85,
  Probe = 86,
  Iprobe = 87,
  Mprobe = 88,
  Improbe = 89,
  Mrecv = 90,
  Imrecv = 91,
};
inline constexpr int kOpCount = 92;

std::string_view op_name(Op op);                    // "allreduce", "iallreduce", ...
std::optional<Op> op_from_name(std::string_view name);

// The blocking call a non-blocking or persistent form is of (iallreduce, allreduce_init -> allreduce; isend ->
// send); other ops are their own.
Op blocking_form(Op op);

// The nccl-tests bus-bandwidth factor for `op` (any form of it) on `ranks` ranks: busbw = algbw * factor.
double bus_bandwidth_factor(Op op, int ranks);

// Blocking collectives whose end is nearly simultaneous on all ranks (used for clock alignment).
bool is_synchronising(Op op);

// Who carried a communicator's calls: MPI or NCCL (the interposers), or a torch.distributed process group whose
// backend neither interposer sees (gloo; any other custom backend is Torch), recorded by the Python annotation.
enum class Backend : std::uint8_t { Mpi = 0, Nccl = 1, Gloo = 2, Torch = 3 };
std::string_view backend_name(Backend b);
std::optional<Backend> backend_from_name(std::string_view name);  // nullopt for a name no version wrote

// How a collective call ended. 0 = success; otherwise the backend's error code (MPI or ncclResult_t), or
// kStatusFreed: a non-blocking MPI call whose request was freed (MPI_Request_free) before its completion was seen.
using Status = std::int32_t;
inline constexpr Status kStatusFreed = -1;

// Peers of point_to_point rows that are no process.
inline constexpr std::int32_t kPeerProcNull = -1;  // MPI_PROC_NULL: nothing moved
inline constexpr std::int32_t kPeerUnknown = -2;   // a wildcard receive whose source the tracer could not read

enum class NvtxKind : std::uint8_t { PushPop = 0, StartEnd = 1, Mark = 2 };

enum class GpuActivityKind : std::uint8_t { Kernel = 0, Memcpy = 1, Memset = 2, Sync = 3 };
std::string_view gpu_activity_kind_name(GpuActivityKind k);

// ---- Tables ----------------------------------------------------------------------------------------------
// Column flags of tables.def. A flag set combines with `|`: `kPlain | since(2)`.
struct ColumnFlags {
  unsigned bits = 0;
  const char* sql_name = nullptr;  // when the SQL name is not the member's
  int since_minor = 0;             // schema minor version that added the column
  std::int64_t initial = 0;        // an integer member's value in a default-constructed row
};
constexpr ColumnFlags operator|(ColumnFlags a, ColumnFlags b) {
  return {a.bits | b.bits, b.sql_name ? b.sql_name : a.sql_name,
          a.since_minor > b.since_minor ? a.since_minor : b.since_minor, b.initial ? b.initial : a.initial};
}
namespace column_bit {
inline constexpr unsigned kKey = 1, kAuto = 2, kNullable = 4, kDefaultZero = 8;
}
inline constexpr ColumnFlags kPlain{};
inline constexpr ColumnFlags kKey{column_bit::kKey};                         // PRIMARY KEY
inline constexpr ColumnFlags kAutoKey{column_bit::kKey | column_bit::kAuto};  // PRIMARY KEY; 0 in a new row: next id
inline constexpr ColumnFlags kNullable{column_bit::kNullable};               // TEXT that may be NULL (read as "")
inline constexpr ColumnFlags kDefaultZero{column_bit::kDefaultZero};         // NOT NULL DEFAULT 0
constexpr ColumnFlags named(const char* sql_name) { return {0, sql_name, 0}; }
constexpr ColumnFlags since(int minor) { return {0, nullptr, minor}; }
constexpr ColumnFlags initial(std::int64_t value) { return {0, nullptr, 0, value}; }

enum class SqlType : std::uint8_t { Integer, Real, Text, Blob };

// One column of a table, as tables.def declares it.
struct ColumnInfo {
  std::string_view name;  // SQL name
  SqlType type;
  bool nullable;          // std::optional member (or kNullable text)
  ColumnFlags flags;
};

namespace detail {
template <typename T> struct SqlTypeOf { static constexpr SqlType value = SqlType::Integer; };  // integers, enums
template <> struct SqlTypeOf<double> { static constexpr SqlType value = SqlType::Real; };
template <> struct SqlTypeOf<std::string> { static constexpr SqlType value = SqlType::Text; };
template <> struct SqlTypeOf<Backend> { static constexpr SqlType value = SqlType::Text; };
template <> struct SqlTypeOf<std::vector<std::int32_t>> { static constexpr SqlType value = SqlType::Text; };
template <> struct SqlTypeOf<std::vector<std::uint8_t>> { static constexpr SqlType value = SqlType::Blob; };
template <typename T> struct SqlTypeOf<std::optional<T>> : SqlTypeOf<T> {};
template <typename T> inline constexpr bool kIsOptional = false;
template <typename T> inline constexpr bool kIsOptional<std::optional<T>> = true;

template <typename T>
constexpr ColumnInfo column_info(std::string_view member, ColumnFlags flags) {
  return {flags.sql_name ? std::string_view(flags.sql_name) : member, SqlTypeOf<T>::value,
          kIsOptional<T> || (flags.bits & column_bit::kNullable) != 0, flags};
}
template <typename A, typename B>
constexpr bool same_member(A a, B b) {
  if constexpr (std::is_same_v<A, B>) return a == b;
  else return false;
}
template <typename T>
constexpr T initial_value(ColumnFlags flags) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<T>(flags.initial);
  else return T{};
}
template <typename M> struct MemberOf;
template <typename C, typename T> struct MemberOf<T C::*> { using Class = C; };
}  // namespace detail

// The row structs, one per table (MetaRow, StringRow, OpRow, ThreadRow, CommunicatorRow, CollectiveRow,
// BufferRow, NvtxRangeRow, CallInFlightRow, GpuActivityRow): members, types and units are in tables.def.
#define COLLSCOPE_TABLE(sql, Row, since_minor, order_by) struct Row {
#define COLLSCOPE_COLUMN(type, member, flags) type member = detail::initial_value<type>(flags);
#define COLLSCOPE_TABLE_END(sql) };
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

// Table<Row>: the table's SQL name, the schema minor version that added it, the readers' order, its columns
// (in declaration order) and index_of(&Row::member).
template <typename Row> struct Table;
#define COLLSCOPE_TABLE(sql, RowT, since_, order)                      \
  template <> struct Table<RowT> {                                      \
    using Row = RowT;                                                   \
    static constexpr std::string_view name = #sql;                      \
    static constexpr int since_minor = since_;                          \
    static constexpr std::string_view order_by = order;                 \
    template <typename M> static constexpr int index_of(M member);      \
    static constexpr ColumnInfo columns[] = {
#define COLLSCOPE_COLUMN(type, member, flags) detail::column_info<type>(#member, flags),
#define COLLSCOPE_TABLE_END(sql) }; };
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

#define COLLSCOPE_TABLE(sql, RowT, since_, order) \
  template <typename M> constexpr int Table<RowT>::index_of(M m) { using Row = RowT; int i = 0;
#define COLLSCOPE_COLUMN(type, member, flags) if (detail::same_member(m, &Row::member)) return i; ++i;
#define COLLSCOPE_TABLE_END(sql) return -1; }
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

// Every table's row type, in declaration order: for_each_table([](auto table) { ... decltype(table)::Row ... }).
template <typename... Rows> struct RowList {};
namespace detail {
struct EndOfTables {};
template <typename List, typename... Done> struct DropEnd;
template <typename... Done> struct DropEnd<RowList<EndOfTables>, Done...> { using type = RowList<Done...>; };
template <typename First, typename... Rest, typename... Done>
struct DropEnd<RowList<First, Rest...>, Done...> : DropEnd<RowList<Rest...>, Done..., First> {};
}  // namespace detail
#define COLLSCOPE_TABLE(sql, Row, since_minor, order_by) Row,
#define COLLSCOPE_COLUMN(type, member, flags)
#define COLLSCOPE_TABLE_END(sql)
using AllRows = typename detail::DropEnd<RowList<
#include <collscope/store/tables.def>
    detail::EndOfTables>>::type;
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

namespace detail {
template <typename Fn, typename... Rows>
constexpr void for_each_table_in(Fn& fn, RowList<Rows...>) {
  (fn(Table<Rows>{}), ...);
}
}  // namespace detail
template <typename Fn>
constexpr void for_each_table(Fn&& fn) {
  detail::for_each_table_in(fn, AllRows{});
}

// A choice of columns of one table, for reading only those (TraceReader::for_each). Bit i = column i.
template <typename Row>
struct ColumnSet {
  static_assert(std::size(Table<Row>::columns) <= 64, "a ColumnSet holds at most 64 columns");
  std::uint64_t mask = 0;
  static constexpr ColumnSet all() {
    constexpr auto n = std::size(Table<Row>::columns);
    return {n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1};
  }
};

// columns<&CollectiveRow::comm, &CollectiveRow::seq>(): those columns of their table.
template <auto First, auto... Rest>
constexpr auto columns() {
  using Row = typename detail::MemberOf<decltype(First)>::Class;
  static_assert(Table<Row>::index_of(First) >= 0 && ((Table<Row>::index_of(Rest) >= 0) && ...),
                "every member must be a column of the same table");
  ColumnSet<Row> set;
  set.mask = (std::uint64_t{1} << Table<Row>::index_of(First)) | ((std::uint64_t{1} << Table<Row>::index_of(Rest)) | ... | 0);
  return set;
}

// Well-known keys of the meta table.
namespace meta_key {
inline constexpr std::string_view kSchemaVersion = "schema_version";  // "1.1"
inline constexpr std::string_view kToolVersion = "tool_version";
inline constexpr std::string_view kHost = "host";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kWorldRank = "world_rank";
inline constexpr std::string_view kWorldSize = "world_size";
inline constexpr std::string_view kLocalRank = "local_rank";
inline constexpr std::string_view kLauncher = "launcher";
inline constexpr std::string_view kCommandLine = "command_line";
inline constexpr std::string_view kMpiVersion = "mpi_library_version";
inline constexpr std::string_view kNcclVersion = "nccl_version";
inline constexpr std::string_view kCudaDriver = "cuda_driver";
inline constexpr std::string_view kMonotonicStart = "clock_monotonic_start_ns";
inline constexpr std::string_view kRealtimeStart = "clock_realtime_start_ns";
inline constexpr std::string_view kMonotonicEnd = "clock_monotonic_end_ns";
inline constexpr std::string_view kRealtimeEnd = "clock_realtime_end_ns";
inline constexpr std::string_view kEventsDropped = "events_dropped";
// Bytes of trace buffers the process had allocated by its exit (chunks are recycled, never returned): how far the
// buffers grew because the writer fell behind; written at exit.
inline constexpr std::string_view kTraceBufferBytes = "trace_buffer_bytes";
// Written by importers whose source cannot tell when each rank arrived (a Horovod Timeline recorded with the
// response cache on): one line why; readers then report lateness as not measurable.
inline constexpr std::string_view kImportFormat = "import_format";  // "horovod-timeline": written by collscope import
inline constexpr std::string_view kImportedFrom = "imported_from";
inline constexpr std::string_view kArrivalsUnknown = "arrivals_unknown";
inline constexpr std::string_view kEnvPrefix = "env.";  // env.HOROVOD_FUSION_THRESHOLD = "67108864"
}  // namespace meta_key

}  // namespace collscope::store
