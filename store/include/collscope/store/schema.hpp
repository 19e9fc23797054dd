#pragma once
// The data contract: one SQLite file per rank, schema v1 (docs/trace-format.md documents every column).
// Everything downstream (analyzer, autotuner, gui, plugins) sees a run only through these rows.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::store {

inline constexpr int kSchemaMajor = 1;
inline constexpr int kSchemaMinor = 2;  // 1.1: calls_in_flight; 1.2: nccl_profile, nccl_proxy_ops, collective_gpu_work

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
  Send = 16,  // NCCL point-to-point
  Recv = 17,
};
inline constexpr int kOpCount = 18;

std::string_view op_name(Op op);                    // "allreduce", "iallreduce", ...
std::optional<Op> op_from_name(std::string_view name);

// The nccl-tests bus-bandwidth factor for `op` on `ranks` ranks: busbw = algbw * factor.
double bus_bandwidth_factor(Op op, int ranks);

// Blocking collectives whose end is nearly simultaneous on all ranks (used for clock alignment).
bool is_synchronising(Op op);

enum class Backend : std::uint8_t { Mpi = 0, Nccl = 1 };
std::string_view backend_name(Backend b);

// How a collective call ended. 0 = success; otherwise the backend's error code (MPI or ncclResult_t).
using Status = std::int32_t;

struct ThreadRow {
  std::int64_t id = 0;   // small index, referenced by other tables
  std::int64_t tid = 0;  // kernel thread id
  std::string name;
};

struct CommunicatorRow {
  std::int64_t id = 0;           // file-local id, referenced by collectives.comm
  std::uint64_t key = 0;         // identical on every member rank: same communicator across the run
  Backend backend = Backend::Mpi;
  std::int32_t size = 0;
  std::int32_t rank = 0;         // this process's rank in the communicator
  std::optional<std::uint64_t> parent;  // key of the parent communicator (split/dup/create)
  std::optional<std::int64_t> color;    // split colour
  std::vector<std::int32_t> members;    // world ranks, in communicator rank order
  std::int64_t created_ns = 0;          // CLOCK_MONOTONIC
  std::optional<std::int64_t> destroyed_ns;
  std::string name;                     // "MPI_COMM_WORLD", "split(world,color=1)", ...
};

struct CollectiveRow {
  std::int64_t id = 0;
  std::int64_t comm = 0;      // communicators.id
  std::int64_t seq = 0;       // index of the call on its communicator, from 0
  Op op = Op::Unknown;
  std::int64_t count = 0;     // elements (send count where it differs per rank: this rank's)
  std::int64_t datatype = 0;  // strings.id of the datatype name ("MPI_FLOAT", "ncclFloat32")
  std::int64_t bytes = 0;     // payload of this rank: count * size of datatype (sum over v-counts)
  std::int64_t reduce_op = 0; // strings.id ("MPI_SUM"), 0 when not a reduction
  std::optional<std::int32_t> root;
  std::optional<std::int32_t> peer;  // point-to-point peer
  std::uint64_t sendbuf = 0;
  std::uint64_t recvbuf = 0;
  std::optional<std::uint64_t> stream;  // CUDA stream (NCCL)
  std::int64_t thread = 0;              // threads.id
  std::int64_t start_ns = 0;            // CLOCK_MONOTONIC, call entry
  std::int64_t end_ns = 0;              // call exit (or completion of a non-blocking request)
  std::optional<std::int64_t> gpu_start_ns;
  std::optional<std::int64_t> gpu_end_ns;
  std::optional<std::uint64_t> correlation;  // CUPTI correlation id
  std::optional<std::int64_t> group;         // NCCL group id (calls between GroupStart/End)
  Status status = 0;
};
// A blocking collective a thread has been inside for longer than the tracer's hang threshold
// (COLLSCOPE_HANG_MS): one row per thread at most, removed when the call returns. What is left in a file
// after the job was killed is where each thread hung.
struct CallInFlightRow {
  std::int64_t thread = 0;    // threads.id
  std::int64_t comm = 0;      // communicators.id
  std::int64_t seq = 0;       // the index this call has on its communicator
  Op op = Op::Unknown;
  std::int64_t count = 0;
  std::int64_t datatype = 0;  // strings.id
  std::int64_t bytes = 0;
  std::int64_t reduce_op = 0; // strings.id, 0 when not a reduction
  std::optional<std::int32_t> root;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC, call entry
  std::int64_t seen_ns = 0;   // last time the tracer saw the thread still inside it
};

struct BufferRow {
  std::uint64_t address = 0;
  std::int64_t bytes_max = 0;
  std::int64_t bytes_min = 0;
  std::int64_t bytes_total = 0;
  std::int64_t uses = 0;
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
  std::int64_t tensors_packed = 0;  // via collscope_fusion_pack / GPU copies (0 when unknown)
  std::int64_t bytes_packed = 0;
};

enum class NvtxKind : std::uint8_t { PushPop = 0, StartEnd = 1, Mark = 2 };

struct NvtxRangeRow {
  std::int64_t id = 0;
  std::int64_t domain = 0;   // strings.id ("" = default domain)
  std::int64_t name = 0;     // strings.id
  NvtxKind kind = NvtxKind::PushPop;
  std::int64_t category = 0;
  std::int64_t start_ns = 0;
  std::optional<std::int64_t> end_ns;  // NULL: never ended (or a mark)
  std::int64_t thread = 0;
  std::optional<std::int64_t> end_thread;  // start/end ranges may end on another thread
  std::int32_t depth = 0;                  // push/pop nesting depth, 0 = outermost
  std::optional<std::int64_t> payload_int;
  std::optional<double> payload_double;
  std::optional<std::uint32_t> color;
};

enum class GpuActivityKind : std::uint8_t { Kernel = 0, Memcpy = 1, Memset = 2, Sync = 3 };
std::string_view gpu_activity_kind_name(GpuActivityKind k);

struct GpuActivityRow {
  std::int64_t id = 0;
  GpuActivityKind kind = GpuActivityKind::Kernel;
  std::int64_t name = 0;  // strings.id (kernel name, "HtoD", ...)
  std::int32_t device = 0;
  std::uint64_t stream = 0;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC (CUPTI timestamps converted)
  std::int64_t end_ns = 0;
  std::uint64_t correlation = 0;
  std::int64_t bytes = 0;
  std::optional<std::int32_t> copy_kind;  // CUpti_ActivityMemcpyKind
};

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
inline constexpr std::string_view kEnvPrefix = "env.";  // env.HOROVOD_FUSION_THRESHOLD = "67108864"
}  // namespace meta_key

}  // namespace collscope::store
