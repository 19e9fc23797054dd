// NCCL interposition: the job's ncclX resolves to the wrapper here (LD_PRELOAD), which calls the next ncclX
// found with dlsym(RTLD_NEXT). Nothing here links libnccl; in a process without NCCL no wrapper is ever called.
//
// Communicators: key = FNV-1a of the ncclUniqueId (identical on all members); a split child's key hashes the
// parent key, the k-th split of the parent and the colour. NCCL calls return on enqueue, so each collective is
// bracketed with a CUPTI external correlation id (collectives.correlation) by which the CUPTI collector finds
// its kernel and fills gpu_start_ns/gpu_end_ns. Inside ncclGroupStart/End the calls carry the group id and share
// the group's correlation id: NCCL launches the whole group at the outermost ncclGroupEnd.
//
// Results are passed through unchanged; a failed call is recorded with its ncclResult_t (collectives.status,
// or meta nccl.error.<call> for communicator creation).
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <collscope/store/schema.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstring>

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "cuda/gpu_capture.hpp"
#include "cuda/gpu_fusion.hpp"
#include "nccl_profile_bridge.hpp"
#include "core/recorder.hpp"
#include "core/job_metadata.hpp"
#include "core/runtime.hpp"
#include "core/string_pool.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer {
namespace {

using store::Op;

// The next definition of `name`: after us in the global scope (a job linked with libnccl, or a test double), else
// in an already loaded libnccl.so.2 that was dlopen'ed RTLD_LOCAL (Python extensions), where RTLD_NEXT cannot see.
template <typename F>
F next_symbol(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return reinterpret_cast<F>(p);
  if (void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)) {
    void* p = dlsym(lib, name);
    dlclose(lib);  // drops only the reference RTLD_NOLOAD took
    return reinterpret_cast<F>(p);
  }
  return nullptr;
}

// The real `fn`, resolved on first use; a failed look-up is retried on the next call (NCCL may load later).
#define NEXT(fn)                                                                                       \
  ([]() {                                                                                              \
    static std::atomic<decltype(&fn)> real{nullptr};                                                   \
    auto f = real.load(std::memory_order_acquire);                                                     \
    if (!f) {                                                                                          \
      f = next_symbol<decltype(&fn)>(#fn);                                                             \
      if (f) real.store(f, std::memory_order_release);                                                 \
      else warn_once("NCCL entry point " #fn " not found: the call fails with ncclInvalidUsage");      \
    }                                                                                                  \
    return f;                                                                                          \
  }())

#define CALL_NEXT(fn, ...) (NEXT(fn) ? NEXT(fn)(__VA_ARGS__) : ncclInvalidUsage)

std::atomic<std::uint64_t> g_next_correlation{1};
std::atomic<std::uint64_t> g_next_group{1};
thread_local int t_group_depth = 0;
thread_local std::uint64_t t_group_id = 0;
thread_local std::uint64_t t_group_correlation = 0;

const char* error_string(ncclResult_t rc) {
  auto fn = next_symbol<decltype(&ncclGetErrorString)>("ncclGetErrorString");
  const char* s = fn ? fn(rc) : nullptr;
  return s ? s : "unknown NCCL error";
}

std::uint32_t datatype_name(ncclDataType_t t) {
  static const char* names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",  "ncclInt64",
                                "ncclUint64",  "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16",
                                "ncclFloat8e4m3", "ncclFloat8e5m2"};
  static std::atomic<std::uint32_t> ids[16] = {};
  const int i = static_cast<int>(t);
  if (i < 0 || i >= int(sizeof names / sizeof *names)) return pool_intern("ncclUnknownType");
  std::uint32_t id = ids[i].load(std::memory_order_relaxed);
  if (!id) ids[i].store(id = pool_intern(names[i]), std::memory_order_relaxed);
  return id;
}

int datatype_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

std::uint32_t reduce_name(ncclRedOp_t op) {
  static const char* names[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};
  static std::atomic<std::uint32_t> ids[5] = {};
  const int i = static_cast<int>(op);
  if (i < 0 || i >= 5) {
    static const std::uint32_t user = pool_intern("ncclPreMulSum/user");
    return user;
  }
  std::uint32_t id = ids[i].load(std::memory_order_relaxed);
  if (!id) ids[i].store(id = pool_intern(names[i]), std::memory_order_relaxed);
  return id;
}

// ---- start-up and communicators ---------------------------------------------------------------------------

void record_versions() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  int version = 0;
  if (auto fn = next_symbol<decltype(&ncclGetVersion)>("ncclGetVersion"); fn && fn(&version) == ncclSuccess)
    runtime_set_meta(std::string(store::meta_key::kNcclVersion),
                     fmt::format("{}.{}.{} ({})", version / 10000, version / 100 % 100, version % 100, version));
}

// NCCL-only jobs (torchrun) never call MPI_Init: the first communicator creation opens the trace file.
void start_runtime(int nccl_rank, int nccl_size) {
  nccl_profile::start_recording("nccl", nccl_rank, nccl_size);
  record_versions();
  gpu::ensure_cupti();
}

void record_failure(const char* call, ncclResult_t rc) {
  runtime_set_meta(fmt::format("nccl.error.{}", call), fmt::format("{} ({})", error_string(rc), int(rc)));
}

std::vector<std::int32_t> members_if_known(int nranks) {
  // One process holding every rank (the one-rank communicator, ncclCommInitAll) is the only case this process
  // knows the world ranks of; otherwise members stay empty (the analyzer joins ranks by key).
  if (nranks == 1) return {std::max(0, world_rank_from_env())};
  return {};
}

std::uint32_t register_nccl_comm(ncclComm_t comm, std::uint64_t key, int nranks, int rank,
                                 std::optional<std::uint64_t> parent, std::optional<std::int64_t> color,
                                 std::string name) {
  CommDescription d;
  d.key = key;
  d.backend = store::Backend::Nccl;
  d.size = nranks;
  d.rank = rank;
  d.parent = parent;
  d.color = color;
  d.members = members_if_known(nranks);
  d.name = std::move(name);
  return comm_register(comm, std::move(d));
}

std::uint64_t unique_id_key(const ncclUniqueId& id) { return hash_bytes(id.internal, sizeof id.internal); }

// ---- collectives ------------------------------------------------------------------------------------------

struct NcclCall {
  Op op;
  ncclComm_t comm;
  const void* sendbuf;
  const void* recvbuf;
  std::size_t count;     // elements as passed
  std::size_t elements;  // elements that make up `bytes`
  ncclDataType_t type;
  int reduce;  // ncclRedOp_t, -1 = none
  int root;
  int peer;
  cudaStream_t stream;
};

// Resolve, then record (recorder.hpp): the call's number on its communicator is taken before the call, so the
// NCCL profiler plugin's events inside it can name the call (nccl_profile_bridge.hpp), and before the ring is
// asked for room, so a dropped event never shifts the numbers of later calls.
template <typename Call>
ncclResult_t traced(const NcclCall& c, Call&& call) {
  if (!recording()) return call();
  const std::uint32_t slot = comm_lookup(c.comm);
  const bool grouped = t_group_depth > 0;
  Event e{};
  e.kind = EventKind::Collective;
  e.op = static_cast<std::uint8_t>(c.op);
  e.flags = kFlagNccl | (c.sendbuf == c.recvbuf ? kFlagInPlace : 0);
  e.comm_slot = slot;
  e.seq = slot ? take_seq(slot, SeqSpace::Collective) : 0;
  e.root = c.root;
  e.peer = c.peer;
  e.count = static_cast<std::int64_t>(c.count);
  e.bytes = static_cast<std::int64_t>(c.elements) * datatype_size(c.type);
  e.datatype = datatype_name(c.type);
  e.reduce_op = c.reduce >= 0 ? reduce_name(static_cast<ncclRedOp_t>(c.reduce)) : 0;
  e.sendbuf = reinterpret_cast<std::uint64_t>(c.sendbuf);
  e.recvbuf = reinterpret_cast<std::uint64_t>(c.recvbuf);
  e.nccl.stream = reinterpret_cast<std::uint64_t>(c.stream);
  e.nccl.correlation = grouped ? t_group_correlation : g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  e.nccl.group = grouped ? t_group_id : 0;
  e.nccl.count_bytes = static_cast<std::uint64_t>(c.count) * static_cast<std::uint64_t>(datatype_size(c.type));
  // Copies into the buffer this call reads since the last collective on it: the tensors packed into it.
  gpu::note_buffer_read(c.sendbuf && c.sendbuf != c.recvbuf ? c.sendbuf : c.recvbuf, e.bytes);
  e.t0 = ticks();
  if (!grouped) gpu::push_correlation(e.nccl.correlation);
  ncclResult_t rc;
  {
    nccl_profile::CallScope in_call(slot, e.seq);
    rc = call();
  }
  if (!grouped) gpu::pop_correlation();
  e.t1 = ticks();
  e.status = rc;
  // NCCL numbers the collectives it gives a task (2+ ranks, count > 0) per function: the profiler's events of
  // NCCL < 2.28 carry only that number.
  const std::int64_t nccl_seq = (rc == ncclSuccess || rc == ncclInProgress) && slot && c.count > 0 &&
                                        comm_slot(slot).size > 1
                                    ? nccl_profile::take_nccl_seq(slot, nccl_profile::nccl_func(c.op))
                                    : -1;
  e.nccl.nccl_seq_plus1 = static_cast<std::uint64_t>(nccl_seq + 1);
  record(e);
  return rc;
}

int comm_count(ncclComm_t comm) {
  int n = 1;
  if (auto fn = next_symbol<decltype(&ncclCommCount)>("ncclCommCount")) fn(comm, &n);
  return n;
}

}  // namespace
}  // namespace collscope::tracer

using namespace collscope::tracer;
using collscope::store::Op;

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))

NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
  const ncclResult_t rc = CALL_NEXT(ncclGetVersion, version);
  if (rc == ncclSuccess && version && recording())
    runtime_set_meta(std::string(collscope::store::meta_key::kNcclVersion),
                     fmt::format("{}.{}.{} ({})", *version / 10000, *version / 100 % 100, *version % 100, *version));
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (recording()) start_runtime(rank, nranks);
  nccl_profile::CreationScope creation;  // the profiler plugin's init runs inside the call, on this thread
  const ncclResult_t rc = CALL_NEXT(ncclCommInitRank, comm, nranks, id, rank);
  if (!recording()) return rc;
  if (rc == ncclSuccess)
    creation.created(register_nccl_comm(*comm, unique_id_key(id), nranks, rank, std::nullopt, std::nullopt, "nccl"));
  else record_failure("ncclCommInitRank", rc);
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                ncclConfig_t* config) {
  if (recording()) start_runtime(rank, nranks);
  nccl_profile::CreationScope creation;
  const ncclResult_t rc = CALL_NEXT(ncclCommInitRankConfig, comm, nranks, id, rank, config);
  if (!recording()) return rc;
  // Non-blocking configs return ncclInProgress with a usable handle: it is registered as created.
  if (rc == ncclSuccess || rc == ncclInProgress)
    creation.created(
        register_nccl_comm(*comm, unique_id_key(id), nranks, rank, std::nullopt, std::nullopt, "nccl(config)"));
  else record_failure("ncclCommInitRankConfig", rc);
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (recording()) start_runtime(0, ndev);
  const ncclResult_t rc = CALL_NEXT(ncclCommInitAll, comms, ndev, devlist);
  if (!recording()) return rc;
  if (rc != ncclSuccess) {
    record_failure("ncclCommInitAll", rc);
    return rc;
  }
  // No unique id: one communicator of `ndev` ranks, all in this process; the key is this process's.
  const std::int64_t pid = ::getpid();
  const std::uint64_t key = hash_bytes(&pid, sizeof pid, hash_bytes("initAll", 7));
  for (int i = 0; i < ndev; ++i)
    register_nccl_comm(comms[i], key, ndev, i, std::nullopt, std::nullopt, fmt::format("nccl(all,dev={})", i));
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  nccl_profile::CreationScope creation;
  const ncclResult_t rc = CALL_NEXT(ncclCommSplit, comm, color, key, newcomm, config);
  if (!recording()) return rc;
  const std::uint32_t parent_slot = comm_lookup(comm);
  // The k-th split of a parent is collective over the parent, so k is the same on all its ranks.
  std::uint32_t k = 0;
  std::uint64_t parent_key = 0;
  std::string parent_name = "nccl";
  if (parent_slot) {
    CommSlot& parent = comm_slot(parent_slot);
    k = parent.children.fetch_add(1);
    parent_key = parent.key;
    parent_name = parent.name;
  }
  if (rc != ncclSuccess && rc != ncclInProgress) {
    record_failure("ncclCommSplit", rc);
    return rc;
  }
  if (!newcomm || *newcomm == nullptr) return rc;  // NCCL_SPLIT_NOCOLOR: this rank is in no child
  std::uint64_t child = hash_bytes(&parent_key, sizeof parent_key, hash_bytes("ncclsplit", 9));
  child = hash_bytes(&k, sizeof k, child);
  child = hash_bytes(&color, sizeof color, child);
  int rank = 0;
  if (auto fn = next_symbol<decltype(&ncclCommUserRank)>("ncclCommUserRank")) fn(*newcomm, &rank);
  creation.created(register_nccl_comm(*newcomm, child, comm_count(*newcomm), rank,
                                      parent_slot ? std::optional<std::uint64_t>(parent_key) : std::nullopt, color,
                                      fmt::format("split({}#{},color={})", parent_name, k, color)));
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const ncclResult_t rc = CALL_NEXT(ncclCommDestroy, comm);
  if (recording() && comm_lookup(comm)) comm_unregister(comm);
  return rc;
}

NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  const ncclResult_t rc = CALL_NEXT(ncclCommAbort, comm);
  if (recording() && comm_lookup(comm)) comm_unregister(comm);
  return rc;
}

NCCL_EXPORT ncclResult_t ncclGroupStart() {
  if (t_group_depth++ == 0) {
    t_group_id = g_next_group.fetch_add(1, std::memory_order_relaxed);
    t_group_correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  }
  return CALL_NEXT(ncclGroupStart);
}

NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  const bool outermost = t_group_depth == 1;
  if (t_group_depth > 0) --t_group_depth;
  if (!outermost) return CALL_NEXT(ncclGroupEnd);
  gpu::push_correlation(t_group_correlation);  // the group's kernels are launched here
  const ncclResult_t rc = CALL_NEXT(ncclGroupEnd);
  gpu::pop_correlation();
  return rc;
}

NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return traced({Op::Allreduce, comm, sendbuff, recvbuff, count, count, datatype, op, -1, -1, stream},
                [&] { return CALL_NEXT(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  return traced({Op::Bcast, comm, sendbuff, recvbuff, count, count, datatype, -1, root, -1, stream},
                [&] { return CALL_NEXT(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  return traced({Op::Bcast, comm, buff, buff, count, count, datatype, -1, root, -1, stream},
                [&] { return CALL_NEXT(ncclBcast, buff, count, datatype, root, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return traced({Op::Reduce, comm, sendbuff, recvbuff, count, count, datatype, op, root, -1, stream},
                [&] { return CALL_NEXT(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  // bytes: the whole gathered buffer, as nccl-tests sizes allgather (and as the MPI wrapper does).
  const std::size_t n = static_cast<std::size_t>(comm_count(comm));
  return traced({Op::Allgather, comm, sendbuff, recvbuff, sendcount, sendcount * n, datatype, -1, -1, -1, stream},
                [&] { return CALL_NEXT(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(comm_count(comm));
  return traced(
      {Op::ReduceScatter, comm, sendbuff, recvbuff, recvcount, recvcount * n, datatype, op, -1, -1, stream},
      [&] { return CALL_NEXT(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
  return traced({Op::Send, comm, sendbuff, nullptr, count, count, datatype, -1, -1, peer, stream},
                [&] { return CALL_NEXT(ncclSend, sendbuff, count, datatype, peer, comm, stream); });
}

NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
  return traced({Op::Recv, comm, nullptr, recvbuff, count, count, datatype, -1, -1, peer, stream},
                [&] { return CALL_NEXT(ncclRecv, recvbuff, count, datatype, peer, comm, stream); });
}
