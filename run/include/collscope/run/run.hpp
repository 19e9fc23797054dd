#pragma once
// A whole run in memory: every rank file of RUN_DIR read in parallel into compact rows.
// Times stay in each rank's own CLOCK_MONOTONIC (ns); ClockAligner gives the per-rank offsets
// that put them on one time line.
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::run {

// What a reduction does, from its operator's name ("MPI_SUM", "ncclAvg", "MPI_BAND"): sums and averages carry
// data (gradients, residuals); bitwise and logical reductions carry flags and bit vectors (Horovod's readiness
// negotiation), control traffic that says nothing about the job's progress.
enum class Reduction : std::uint8_t { None = 0, Sum, Product, MinMax, Bitwise, Logical, Other };
Reduction reduction_of(std::string_view op_name);
inline bool is_control_reduction(Reduction r) { return r == Reduction::Bitwise || r == Reduction::Logical; }

// The columns of `collectives` RunLoader reads: the summary columns and, for non-blocking calls, their posting and
// completion times (1.2). The analyzer's benchmark scans the same ones as the floor under a load.
inline constexpr auto kLoadedCollectiveColumns =
    store::columns<&store::CollectiveRow::id, &store::CollectiveRow::comm, &store::CollectiveRow::seq,
                   &store::CollectiveRow::op, &store::CollectiveRow::count, &store::CollectiveRow::datatype,
                   &store::CollectiveRow::bytes, &store::CollectiveRow::reduce_op, &store::CollectiveRow::root,
                   &store::CollectiveRow::peer, &store::CollectiveRow::start_ns, &store::CollectiveRow::end_ns,
                   &store::CollectiveRow::status, &store::CollectiveRow::thread, &store::CollectiveRow::sendbuf,
                   &store::CollectiveRow::recvbuf, &store::CollectiveRow::post_end_ns, &store::CollectiveRow::wait_ns,
                   &store::CollectiveRow::wait_calls>();

// Non-blocking and persistent calls (MPI_Iallreduce, MPI_Ibcast, MPI_Allreduce_init, ...): their rows run from the
// call to the request's completion, with the job's own work in between, so that span is neither transfer time nor
// time spent communicating. (Every such op's name starts with "i" or ends with "_init".)
bool is_nonblocking(store::Op op);

// One rank's call of one collective, 64 bytes (10 M of them fit in ~640 MB).
struct CollectiveCall {
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC of the rank's host, call entry
  std::int64_t end_ns = 0;    // call exit / completion
  std::int64_t bytes = 0;     // this rank's payload
  std::int64_t count = 0;     // elements
  std::int32_t seq = 0;       // index of the call on its communicator
  std::int32_t comm = 0;      // index into Run::communicators (run-wide, by key)
  std::int32_t datatype = 0;  // index into Run::strings
  std::int32_t root = -1;     // root, or peer for send/recv; -1 when none
  std::int32_t status = 0;    // 0 = success
  store::Op op = store::Op::Unknown;
  // How full the fusion buffer this call sent from was, 1..100 %; 0 when it sent from no fusion buffer (see
  // RunLoader: an address reused with different sizes, capacity the rank's HOROVOD_FUSION_THRESHOLD, from
  // run/job_settings.hpp, or its largest use).
  std::uint8_t fusion_fill_pct = 0;
  Reduction reduction = Reduction::None;
  std::uint16_t thread = 0;   // threads.id (the tracer numbers threads from 1)
  // 56 bytes held the call with its thread; the fill (the viewer's) and the reduction (step inference's) need 3
  // bytes more than the padding had: 64 bytes, one cache line.
};
static_assert(sizeof(CollectiveCall) == 64, "CollectiveCall is sized for 10 M calls in ~640 MB");

// What a non-blocking or persistent call (schema 1.2) adds to its row: when its posting call returned and how
// long the rank spent in the completion calls that covered its request. run/wait_states.hpp turns them into the
// time the rank spent inside MPI (the one definition).
struct NonblockingTimes {
  std::int64_t post_end_ns = 0;  // CLOCK_MONOTONIC of the rank's host: the posting call (MPI_I..., MPI_Start) returned
  std::int64_t wait_ns = 0;      // ns inside MPI_Wait*/MPI_Test* calls that had this request among theirs
  std::int32_t wait_calls = 0;   // how many such calls (a polling loop of MPI_Test shows as many)
};

// The non-blocking times of one CollectiveCall (RankTrace::collectives[call]); kept beside the calls, not in
// them, so that the 64-byte call stays one cache line for the blocking majority.
struct NonblockingCollective {
  std::int32_t call = 0;  // index into RankTrace::collectives
  NonblockingTimes times;
};

// One rank's MPI point-to-point call (schema 1.2), 88 bytes: its send side, its receive side (a sendrecv has
// both), and for non-blocking and persistent calls their posting and completion times. Peers are world ranks;
// store::kPeerProcNull for MPI_PROC_NULL, store::kPeerUnknown when the tracer could not tell, kNoPeer for a side
// the call does not have.
struct PointToPointCall {
  static constexpr std::int32_t kNoPeer = -3;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC of the rank's host, entry of the (posting) call
  std::int64_t end_ns = 0;    // exit of the call, or of the completion call that completed the request
  std::int64_t send_bytes = 0, recv_bytes = 0;
  NonblockingTimes nonblocking;  // all 0 for blocking calls (post_end_ns 0)
  std::int32_t comm = 0;         // index into Run::communicators
  std::int32_t seq = 0;          // posting order of the rank's point-to-point calls on the communicator
  std::int32_t send_peer = kNoPeer, send_tag = 0;
  std::int32_t recv_peer = kNoPeer, recv_tag = 0;  // the actual source and tag (from the status) of a wildcard receive
  std::int32_t status = 0;
  store::Op op = store::Op::Unknown;
  std::uint16_t thread = 0;
  bool sends() const { return send_peer != kNoPeer; }
  bool receives() const { return recv_peer != kNoPeer; }
  bool nonblocking_call() const { return nonblocking.post_end_ns != 0; }
};
static_assert(sizeof(PointToPointCall) == 88, "PointToPointCall stays 88 bytes");

// A communicator as one thing across the run (same key on every member rank).
struct Communicator {
  std::uint64_t key = 0;
  store::Backend backend = store::Backend::Mpi;
  int size = 0;
  std::vector<int> members;  // world ranks, communicator rank order
  std::string name;  // as recorded: how it was made, "dup(dup(MPI_COMM_WORLD#0)#1)" (docs/trace-format.md)
  // For people: "dup of MPI_COMM_WORLD (Horovod)", "split of MPI_COMM_WORLD, colour 1, 2 ranks"; set by RunLoader
  // from run/communicator_names.hpp. Reports, the viewer and exports show this one (shown_name()).
  std::string display_name;
  std::optional<std::uint64_t> parent;
  std::optional<std::int64_t> color;  // split colour (MPI_Comm_split_type: the split type)
  // The display name, or the recorded one in a run not built by RunLoader (tests that fill a Run by hand).
  const std::string& shown_name() const { return display_name.empty() ? name : display_name; }
};

struct NvtxRange {
  std::int32_t name = 0;  // index into Run::strings
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  // == start_ns for marks / never-ended ranges
  std::int64_t thread = 0;
  std::int32_t depth = 0;
};

struct GpuActivity {
  store::GpuActivityKind kind = store::GpuActivityKind::Kernel;
  std::int16_t device = 0;  // CUDA device (fits the padding: still 40 bytes)
  std::int32_t name = 0;  // index into Run::strings
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;
  std::uint64_t stream = 0;
};
static_assert(sizeof(GpuActivity) == 40, "GpuActivity stays 40 bytes");

// A blocking collective the rank was still inside when its file was last written (schema 1.1): where it hung,
// when the job was killed. call.end_ns is the last time the tracer saw it still in flight.
struct CallInFlight {
  CollectiveCall call;
  std::int64_t thread = 0;
};

// A collectives row left out of the figures for an impossible value (PhysicalLimits): the rank made the call, so
// it keeps its place in the communicator's sequence (the call index has −1 there), and nothing else of it is used.
struct LeftOutCall {
  std::int32_t comm = 0;  // index into Run::communicators
  std::int32_t seq = 0;
};

struct RankTrace {
  int world_rank = 0;
  std::string path;
  std::string host;
  std::string schema_version;  // "1.1"
  std::map<std::string, std::string> meta;
  // Clock anchors (ns); 0 when absent.
  std::int64_t monotonic_start_ns = 0, realtime_start_ns = 0, monotonic_end_ns = 0, realtime_end_ns = 0;
  std::int64_t events_dropped = 0;
  std::vector<CollectiveCall> collectives;  // in call order (file id order)
  std::vector<NonblockingCollective> nonblocking_collectives;  // by call index, for the non-blocking ones (1.2)
  std::vector<PointToPointCall> point_to_point;  // in file id order (completion order); none before schema 1.2
  std::vector<CallInFlight> calls_in_flight;  // at most one per thread
  std::vector<LeftOutCall> left_out_calls;    // rows of collectives out of physical range
  std::vector<NvtxRange> nvtx_ranges;
  std::vector<GpuActivity> gpu_activities;
  std::vector<store::ThreadRow> threads;
  std::vector<store::BufferRow> buffers;
  // Scheduler counters of the threads that made MPI calls or NVTX ranges, by thread then time (schema 1.4; none
  // before): what run/lateness.hpp turns into why a rank is late.
  std::vector<store::CpuSampleRow> cpu_samples;
  // Intervals in which a job thread was stopped by the tracer writing its full buffers out (schema 1.5; none
  // before): time the job would not have spent untraced, which run/lateness.hpp discounts.
  std::vector<store::TracerFlushRow> tracer_flushes;

  // The non-blocking times of collectives[call]; nullptr for blocking calls and files before schema 1.2.
  const NonblockingTimes* nonblocking_times(std::size_t call) const;

  std::optional<std::string> meta_value(const std::string& key) const;
  std::optional<std::int64_t> meta_int(const std::string& key) const;
};

struct Run {
  std::string dir;
  int world_size = 0;                 // from meta; 0 when no file says
  std::vector<RankTrace> ranks;       // readable ranks, sorted by world rank
  std::vector<Communicator> communicators;
  std::vector<std::string> strings;   // run-wide; strings[0] == ""
  std::vector<std::string> problems;  // one line each: missing/duplicate/truncated ranks, mixed versions, rows
                                      // left out for values out of physical range (run/physical_limits.hpp)

  std::size_t collective_count() const;
  std::size_t point_to_point_count() const;
  // Index into ranks of world rank r, or -1.
  int rank_index(int world_rank) const;
  // The job's knob from meta "env.NAME" (first rank that has it).
  std::optional<std::string> env(const std::string& name) const;
  std::optional<std::int64_t> env_int(const std::string& name) const;
  int string_id(const std::string& value) const;  // -1 when absent
};

struct RunShare;  // run/run_share.hpp

struct LoadOptions {
  int threads = 0;          // 0 = one per core
  bool nvtx_ranges = true;  // read the NVTX table (false: RankTrace::nvtx_ranges stays empty)
  bool gpu_activities = true;
  // Called after each rank file (done of total, its path) from the loader's threads, possibly at the same time
  // from several: for a progress bar.
  std::function<void(std::size_t done, std::size_t total, const std::string& path)> on_file_loaded = nullptr;
};

// Reads RUN_DIR/rank-*.sqlite. Throws collscope::InputError when the directory holds no readable rank file;
// otherwise problems with single files land in Run::problems and the rest is analysed.
class RunLoader {
 public:
  explicit RunLoader(LoadOptions options = {}) : options_(options) {}
  Run load(const std::string& run_dir) const;

  // load() in its two steps, for processes that load one run together (cluster/): each reads the files it was
  // given (indices into paths, which is store::rank_files(run_dir)), and one assembles the run from every share.
  // load() is assemble(run_dir, {load_share(paths, every file)}).
  RunShare load_share(const std::vector<std::string>& paths, const std::vector<std::size_t>& files) const;
  static Run assemble(const std::string& run_dir, std::vector<RunShare> shares);

 private:
  LoadOptions options_;
};

inline Run load_run(const std::string& run_dir, LoadOptions options = {}) { return RunLoader(options).load(run_dir); }

}  // namespace collscope::run
