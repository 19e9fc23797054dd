// MPI interposition through the PMPI names (mpiP / Score-P style): the job's MPI_X resolves to the wrapper here,
// which calls PMPI_X found at run time with dlsym. Nothing here links libmpi, and no MPI global is referenced
// at load time (OpenMPI's MPI_COMM_WORLD etc. are addresses of libmpi symbols, looked up with dlsym), so the
// library loads into processes without MPI (the launcher) and stays idle there.
//
// Every collective wrapper follows one pattern: describe the call (CallShape), time the real call, record.
#include <dlfcn.h>
#include <mpi.h>

#include <collscope/store/schema.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "clock.hpp"
#include "comm_registry.hpp"
#include "runtime.hpp"
#include "string_pool.hpp"
#include "thread_buffer.hpp"

namespace collscope::tracer {
namespace {

using store::Op;

template <typename F>
F resolve_next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// The real PMPI entry point of `fn`, resolved on first use (libmpi may be dlopen'ed after us, as by mpi4py).
#define REAL(fn)                                                                                 \
  ([]() {                                                                                        \
    static auto real = resolve_next<decltype(&P##fn)>("P" #fn);                                  \
    return real;                                                                                 \
  }())

template <typename T>
T mpi_global(const char* symbol) {
  return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, symbol));
}

MPI_Comm comm_world() {
  static MPI_Comm c = mpi_global<MPI_Comm>("ompi_mpi_comm_world");
  return c;
}
MPI_Comm comm_self() {
  static MPI_Comm c = mpi_global<MPI_Comm>("ompi_mpi_comm_self");
  return c;
}
MPI_Comm comm_null() {
  static MPI_Comm c = mpi_global<MPI_Comm>("ompi_mpi_comm_null");
  return c;
}
MPI_Request request_null() {
  static MPI_Request r = mpi_global<MPI_Request>("ompi_request_null");
  return r;
}

int g_world_rank = 0;
int g_world_size = 1;

// ---- datatypes and reduction ops: names and sizes cached once per handle ---------------------------------

struct TypeInfo {
  std::atomic<MPI_Datatype> handle{nullptr};
  int size = 0;
  std::uint32_t name = 0;
};
constexpr int kTypeCache = 64;
TypeInfo g_types[kTypeCache];
std::atomic<int> g_type_count{0};
std::mutex g_type_mutex;

// Size in bytes and pooled name of a datatype. Predefined types are cached (lookup: a few loads); derived ones
// are asked each time since their handles may be freed and reused.
std::pair<int, std::uint32_t> type_info(MPI_Datatype t) {
  const int n = g_type_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_types[i].handle.load(std::memory_order_relaxed) == t) return {g_types[i].size, g_types[i].name};
  int size = 0;
  if (REAL(MPI_Type_size)(t, &size) != MPI_SUCCESS) return {0, 0};
  int num_int = 0, num_addr = 0, num_types = 0, combiner = 0;
  REAL(MPI_Type_get_envelope)(t, &num_int, &num_addr, &num_types, &combiner);
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  REAL(MPI_Type_get_name)(t, name, &len);
  const std::uint32_t id = pool_intern(len > 0 ? std::string_view(name, len) : std::string_view("derived"));
  if (combiner == MPI_COMBINER_NAMED) {
    std::lock_guard lock(g_type_mutex);
    const int i = g_type_count.load(std::memory_order_relaxed);
    if (i < kTypeCache) {
      g_types[i].size = size;
      g_types[i].name = id;
      g_types[i].handle.store(t, std::memory_order_relaxed);
      g_type_count.store(i + 1, std::memory_order_release);
    }
  }
  return {size, id};
}

std::uint32_t reduce_op_name(MPI_Op op) {
  struct Known {
    MPI_Op handle;
    std::uint32_t name;
  };
  static const std::vector<Known> known = [] {
    std::vector<Known> k;
    for (const char* n : {"sum", "max", "min", "prod", "land", "band", "lor", "bor", "lxor", "bxor", "maxloc", "minloc",
                          "replace", "no_op"}) {
      auto h = mpi_global<MPI_Op>(fmt::format("ompi_mpi_op_{}", n).c_str());
      if (!h) continue;
      std::string upper = fmt::format("MPI_{}", n);
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      k.push_back({h, pool_intern(upper)});
    }
    return k;
  }();
  for (const auto& k : known)
    if (k.handle == op) return k.name;
  static const std::uint32_t user = pool_intern("user_op");
  return user;
}

// ---- communicators ----------------------------------------------------------------------------------------

std::vector<std::int32_t> world_members(MPI_Comm comm, int size) {
  std::vector<std::int32_t> members(size);
  MPI_Group group, world_group;
  if (REAL(MPI_Comm_group)(comm, &group) != MPI_SUCCESS) return {};
  REAL(MPI_Comm_group)(comm_world(), &world_group);
  std::vector<int> ranks(size);
  for (int i = 0; i < size; ++i) ranks[i] = i;
  REAL(MPI_Group_translate_ranks)(group, size, ranks.data(), world_group, members.data());
  REAL(MPI_Group_free)(&group);
  REAL(MPI_Group_free)(&world_group);
  return members;
}

std::uint32_t register_comm(MPI_Comm comm, const char* how, std::optional<std::uint32_t> parent_slot,
                            std::optional<std::int64_t> color, std::uint64_t extra_key = 0) {
  if (comm == comm_null() || comm == nullptr) return 0;
  CommDescription d;
  REAL(MPI_Comm_size)(comm, &d.size);
  REAL(MPI_Comm_rank)(comm, &d.rank);
  d.members = world_members(comm, d.size);
  d.color = color;
  std::uint64_t key = hash_bytes(how, std::strlen(how));
  if (parent_slot && *parent_slot) {
    CommSlot& parent = comm_slot(*parent_slot);
    d.parent = parent.key;
    // The k-th creation call on a parent is collective over the parent, so k is the same on all its ranks.
    const std::uint32_t k = parent.children.fetch_add(1);
    key = hash_bytes(&parent.key, sizeof parent.key, key);
    key = hash_bytes(&k, sizeof k, key);
    d.name = fmt::format("{}({}#{}{})", how, parent.name, k, color ? fmt::format(",color={}", *color) : "");
  } else {
    d.name = how;
  }
  key = hash_bytes(&extra_key, sizeof extra_key, key);
  key = hash_bytes(d.members.data(), d.members.size() * sizeof(std::int32_t), key);
  d.key = key;
  return comm_register(comm, std::move(d));
}

// Communicators made by calls not interposed here (Cart_create, Intercomm_merge, ...): registered on first use.
std::uint32_t slot_of(MPI_Comm comm) {
  if (std::uint32_t s = comm_lookup(comm)) return s;
  static std::mutex m;
  static std::unordered_map<std::uint64_t, std::uint32_t> seen;  // member-set hash -> count, for distinct keys
  int size = 0;
  REAL(MPI_Comm_size)(comm, &size);
  auto members = world_members(comm, size);
  std::uint64_t h = hash_bytes(members.data(), members.size() * sizeof(std::int32_t));
  std::uint32_t n;
  {
    std::lock_guard lock(m);
    n = seen[h]++;
  }
  return register_comm(comm, "comm", std::nullopt, std::nullopt, (std::uint64_t(n) << 32) ^ 0x9e3779b9U);
}

// ---- recording --------------------------------------------------------------------------------------------

struct CallShape {
  Op op = Op::Unknown;
  MPI_Comm comm = nullptr;
  const void* sendbuf = nullptr;
  const void* recvbuf = nullptr;
  std::int64_t count = 0;     // as passed (first count argument)
  std::int64_t elements = 0;  // elements that make up `bytes`
  MPI_Datatype type = nullptr;
  MPI_Op reduce = nullptr;
  int root = -1;
};

// What a call is, in the tracer's ids: resolved once per call (and before it, for ThreadBuffer::enter_call).
struct CallIds {
  std::uint32_t comm_slot;
  std::int64_t seq;
  std::int64_t bytes;
  std::uint32_t datatype;
  std::uint32_t reduce_op;
};

CallIds resolve(const CallShape& c) {
  const std::uint32_t slot = slot_of(c.comm);
  auto [size, name] = c.type ? type_info(c.type) : std::pair<int, std::uint32_t>{0, 0};
  return {slot, comm_slot(slot).next_seq.fetch_add(1, std::memory_order_relaxed), c.elements * size, name,
          c.reduce ? reduce_op_name(c.reduce) : 0};
}

void fill_event(Event& e, const CallShape& c, const CallIds& ids, std::uint64_t t0, std::uint64_t t1, int rc) {
  e.kind = EventKind::Collective;
  e.op = static_cast<std::uint8_t>(c.op);
  e.flags = c.sendbuf == MPI_IN_PLACE ? kFlagInPlace : 0;
  e.status = rc;
  e.t0 = t0;
  e.t1 = t1;
  e.comm_slot = ids.comm_slot;
  e.seq = ids.seq;
  e.root = c.root;
  e.peer = -1;
  e.count = c.count;
  e.bytes = ids.bytes;
  e.datatype = ids.datatype;
  e.reduce_op = ids.reduce_op;
  e.sendbuf = c.sendbuf == MPI_IN_PLACE ? 0 : reinterpret_cast<std::uint64_t>(c.sendbuf);
  e.recvbuf = reinterpret_cast<std::uint64_t>(c.recvbuf);
  for (auto& x : e.a) x = 0;
}

// A blocking collective: described before the call (so that a call that never returns is still known to the
// writer, see ThreadBuffer::enter_call), timed around it, emitted after it.
template <typename Call>
int traced(const CallShape& shape, Call&& call) {
  if (!recording() || shape.comm == nullptr) return call();
  ThreadBuffer& tb = this_thread_buffer();
  const CallIds ids = resolve(shape);
  const std::uint64_t t0 = ticks();
  tb.enter_call(t0, ids.comm_slot, static_cast<std::uint8_t>(shape.op), shape.root, ids.seq, shape.count, ids.bytes,
                ids.datatype, ids.reduce_op);
  const int rc = call();
  const std::uint64_t t1 = ticks();
  tb.leave_call();
  emit([&](Event& e) { fill_event(e, shape, ids, t0, t1, rc); });
  return rc;
}

int comm_size(MPI_Comm comm) {
  int n = 1;
  REAL(MPI_Comm_size)(comm, &n);
  return n;
}

std::int64_t sum_counts(const int* counts, int n) {
  std::int64_t s = 0;
  if (counts)
    for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

// ---- non-blocking collectives: the event is completed by the Wait/Test that finishes its request ----------

// A slot: claimed by CAS of `request` (null -> ~0 while the event is copied in), published by storing the
// handle, freed by storing null. `version` changes on every publish and free, so the writer thread's scan (a
// seqlock read: version, request, copy, version, request) never takes a torn copy, even when MPI reuses the
// handle value for the next request in the same slot.
struct PendingRequest {
  std::atomic<MPI_Request> request{nullptr};
  std::atomic<std::uint32_t> version{0};
  Event event;
};
constexpr std::size_t kPendingSize = 4096;
constexpr std::size_t kPendingProbe = 64;
PendingRequest g_pending[kPendingSize];
std::atomic<int> g_pending_count{0};

std::size_t pending_bucket(MPI_Request r) {
  auto v = reinterpret_cast<std::uintptr_t>(r);
  return (v >> 4 ^ v >> 13) & (kPendingSize - 1);
}

void pending_add(MPI_Request r, const Event& e) {
  for (std::size_t i = pending_bucket(r), n = 0; n < kPendingProbe; i = (i + 1) & (kPendingSize - 1), ++n) {
    MPI_Request expected = nullptr;
    if (g_pending[i].request.load(std::memory_order_relaxed) == nullptr &&
        g_pending[i].request.compare_exchange_strong(expected, reinterpret_cast<MPI_Request>(~std::uintptr_t{0}))) {
      g_pending[i].event = e;
      g_pending[i].event.thread = this_thread_buffer().index();
      g_pending[i].request.store(r, std::memory_order_release);
      g_pending[i].version.fetch_add(1, std::memory_order_release);
      g_pending_count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  warn_once("too many outstanding non-blocking collectives: some are not traced");
}

// Completes the pending collective of request `r` (the handle value before MPI reset it), if any.
void pending_complete(MPI_Request r, std::uint64_t t1, int rc) {
  if (r == nullptr || r == request_null()) return;
  for (std::size_t i = pending_bucket(r), n = 0; n < kPendingProbe; i = (i + 1) & (kPendingSize - 1), ++n) {
    if (g_pending[i].request.load(std::memory_order_acquire) != r) continue;
    Event e = g_pending[i].event;
    g_pending[i].version.fetch_add(1, std::memory_order_acq_rel);
    g_pending[i].request.store(nullptr, std::memory_order_release);
    g_pending_count.fetch_sub(1, std::memory_order_relaxed);
    e.t1 = t1;
    if (e.status == MPI_SUCCESS) e.status = rc;
    if (recording()) emit([&](Event& out) { out = e; });
    return;
  }
}

bool any_pending() { return g_pending_count.load(std::memory_order_relaxed) > 0; }

// Writer thread: every published pending collective (see PendingRequest for why the copy is consistent).
void scan_pending(const std::function<void(const Event&)>& fn) {
  if (!any_pending()) return;
  const MPI_Request claimed = reinterpret_cast<MPI_Request>(~std::uintptr_t{0});
  for (auto& slot : g_pending) {
    const std::uint32_t v1 = slot.version.load(std::memory_order_acquire);
    const MPI_Request r1 = slot.request.load(std::memory_order_acquire);
    if (r1 == nullptr || r1 == claimed) continue;
    Event copy;
    std::memcpy(static_cast<void*>(&copy), static_cast<const void*>(&slot.event), sizeof copy);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.version.load(std::memory_order_relaxed) != v1 || slot.request.load(std::memory_order_relaxed) != r1) continue;
    fn(copy);
  }
}

// The pending collective of request `r` (still pending: only the thread that waits on it completes it), or null.
const Event* pending_find(MPI_Request r) {
  if (r == nullptr || r == request_null()) return nullptr;
  for (std::size_t i = pending_bucket(r), n = 0; n < kPendingProbe; i = (i + 1) & (kPendingSize - 1), ++n)
    if (g_pending[i].request.load(std::memory_order_acquire) == r) return &g_pending[i].event;
  return nullptr;
}

// While a thread waits for a non-blocking collective, that collective is its call in flight (a hang shows in the
// wait; the row's start is when the waiting began).
class WaitingFor {
 public:
  WaitingFor(const MPI_Request* requests, int n) {
    for (int i = 0; i < n && !tb_; ++i)
      if (const Event* e = pending_find(requests[i])) {
        tb_ = &this_thread_buffer();
        tb_->enter_call(ticks(), e->comm_slot, e->op, e->root, e->seq, e->count, e->bytes, e->datatype, e->reduce_op);
      }
  }
  ~WaitingFor() {
    if (tb_) tb_->leave_call();
  }
  WaitingFor(const WaitingFor&) = delete;
  WaitingFor& operator=(const WaitingFor&) = delete;

 private:
  ThreadBuffer* tb_ = nullptr;
};

// Copies of request handles taken before a Wait/Test (MPI overwrites completed ones with MPI_REQUEST_NULL).
class RequestSnapshot {
 public:
  RequestSnapshot(int n, const MPI_Request* reqs) : n_(n) {
    if (n <= 0 || !reqs) {
      n_ = 0;
      return;
    }
    if (n > kInline) {
      thread_local std::vector<MPI_Request> heap;  // grows once to the largest count seen
      if (heap.size() < std::size_t(n)) heap.resize(n);
      data_ = heap.data();
    }
    std::copy(reqs, reqs + n, data_);
  }
  MPI_Request operator[](int i) const { return data_[i]; }
  int size() const { return n_; }

 private:
  static constexpr int kInline = 64;
  MPI_Request inline_[kInline];
  MPI_Request* data_ = inline_;
  int n_;
};

// ---- start-up ---------------------------------------------------------------------------------------------

void after_init() {
  REAL(MPI_Comm_rank)(comm_world(), &g_world_rank);
  REAL(MPI_Comm_size)(comm_world(), &g_world_size);
  StartInfo info;
  info.world_rank = g_world_rank;
  info.world_size = g_world_size;
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (REAL(MPI_Get_library_version)(version, &len) == MPI_SUCCESS) {
    std::string v(version, len);
    while (!v.empty() && (v.back() == '\n' || v.back() == '\0')) v.pop_back();
    info.meta.emplace_back(store::meta_key::kMpiVersion, v);
  }
  // Registered before the writer starts, so they are the first rows of `communicators`.
  register_comm(comm_world(), "MPI_COMM_WORLD", std::nullopt, std::nullopt);
  register_comm(comm_self(), "MPI_COMM_SELF", std::nullopt, std::nullopt, static_cast<std::uint64_t>(g_world_rank));
  set_pending_scan(scan_pending);
  runtime_start(info);
  // One-off costs (the thread's ring, the reduction-op table) are paid here, not inside the job's first collective.
  this_thread_buffer();
  reduce_op_name(nullptr);
}

}  // namespace
}  // namespace collscope::tracer

using namespace collscope::tracer;
using collscope::store::Op;

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = REAL(MPI_Init)(argc, argv);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = REAL(MPI_Init_thread)(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int MPI_Finalize(void) {
  const int rc = REAL(MPI_Finalize)();
  runtime_stop();
  return rc;
}

// ---- communicator creation and destruction ----

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  const int rc = REAL(MPI_Comm_split)(comm, color, key, newcomm);
  if (rc == MPI_SUCCESS && recording()) {
    const std::uint32_t parent = slot_of(comm);
    if (*newcomm != comm_null()) register_comm(*newcomm, "split", parent, color);
    else comm_slot(parent).children.fetch_add(1);  // MPI_UNDEFINED colour: the creation index still advances
  }
  return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = REAL(MPI_Comm_split_type)(comm, split_type, key, info, newcomm);
  if (rc == MPI_SUCCESS && recording()) {
    const std::uint32_t parent = slot_of(comm);
    if (*newcomm != comm_null()) register_comm(*newcomm, "split_type", parent, split_type);
    else comm_slot(parent).children.fetch_add(1);
  }
  return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  const int rc = REAL(MPI_Comm_dup)(comm, newcomm);
  if (rc == MPI_SUCCESS && recording()) register_comm(*newcomm, "dup", slot_of(comm), std::nullopt);
  return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const int rc = REAL(MPI_Comm_create)(comm, group, newcomm);
  if (rc == MPI_SUCCESS && recording()) {
    const std::uint32_t parent = slot_of(comm);
    if (*newcomm != comm_null()) register_comm(*newcomm, "create", parent, std::nullopt);
    else comm_slot(parent).children.fetch_add(1);
  }
  return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  const int rc = REAL(MPI_Comm_create_group)(comm, group, tag, newcomm);
  // Collective over `group` only, so the parent's creation index would differ between ranks: key by tag instead.
  if (rc == MPI_SUCCESS && recording() && *newcomm != comm_null())
    register_comm(*newcomm, "create_group", std::nullopt, std::nullopt, static_cast<std::uint64_t>(tag) + 1);
  return rc;
}

int MPI_Comm_free(MPI_Comm* comm) {
  const MPI_Comm old = comm ? *comm : nullptr;
  const int rc = REAL(MPI_Comm_free)(comm);
  if (rc == MPI_SUCCESS && old && recording()) comm_unregister(old);
  return rc;
}

// ---- blocking collectives ----

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return traced({Op::Allreduce, comm, sendbuf, recvbuf, count, count, datatype, op, -1},
                [&] { return REAL(MPI_Allreduce)(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return traced({Op::Bcast, comm, buffer, buffer, count, count, datatype, nullptr, root},
                [&] { return REAL(MPI_Bcast)(buffer, count, datatype, root, comm); });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  return traced({Op::Reduce, comm, sendbuf, recvbuf, count, count, datatype, op, root},
                [&] { return REAL(MPI_Reduce)(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  // bytes: the whole gathered buffer, as nccl-tests sizes allgather.
  return traced({Op::Allgather, comm, sendbuf, recvbuf, recvcount, std::int64_t(recvcount) * comm_size(comm), recvtype,
                 nullptr, -1},
                [&] { return REAL(MPI_Allgather)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return traced({Op::Allgatherv, comm, sendbuf, recvbuf, sendcount, sum_counts(recvcounts, comm_size(comm)), recvtype,
                 nullptr, -1},
                [&] {
                  return REAL(MPI_Allgatherv)(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                              comm);
                });
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return traced({Op::Gather, comm, sendbuf, recvbuf, sendcount, std::int64_t(sendcount) * comm_size(comm), sendtype,
                 nullptr, root},
                [&] { return REAL(MPI_Gather)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); });
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  // Only the root knows the v-counts: bytes is this rank's contribution.
  return traced({Op::Gatherv, comm, sendbuf, recvbuf, sendcount, sendcount, sendtype, nullptr, root}, [&] {
    return REAL(MPI_Gatherv)(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  });
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return traced({Op::Scatter, comm, sendbuf, recvbuf, recvcount, std::int64_t(recvcount) * comm_size(comm), recvtype,
                 nullptr, root},
                [&] {
                  return REAL(MPI_Scatter)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
                });
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return traced({Op::Scatterv, comm, sendbuf, recvbuf, recvcount, recvcount, recvtype, nullptr, root}, [&] {
    return REAL(MPI_Scatterv)(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  const int n = comm_size(comm);
  return traced({Op::ReduceScatter, comm, sendbuf, recvbuf, sum_counts(recvcounts, n), sum_counts(recvcounts, n),
                 datatype, op, -1},
                [&] { return REAL(MPI_Reduce_scatter)(sendbuf, recvbuf, recvcounts, datatype, op, comm); });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  return traced({Op::ReduceScatterBlock, comm, sendbuf, recvbuf, recvcount, std::int64_t(recvcount) * comm_size(comm),
                 datatype, op, -1},
                [&] { return REAL(MPI_Reduce_scatter_block)(sendbuf, recvbuf, recvcount, datatype, op, comm); });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return traced({Op::Alltoall, comm, sendbuf, recvbuf, sendcount, std::int64_t(sendcount) * comm_size(comm), sendtype,
                 nullptr, -1},
                [&] { return REAL(MPI_Alltoall)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const std::int64_t sent = sum_counts(sendcounts, comm_size(comm));
  return traced({Op::Alltoallv, comm, sendbuf, recvbuf, sent, sent, sendtype, nullptr, -1}, [&] {
    return REAL(MPI_Alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  });
}

int MPI_Barrier(MPI_Comm comm) {
  return traced({Op::Barrier, comm, nullptr, nullptr, 0, 0, nullptr, nullptr, -1},
                [&] { return REAL(MPI_Barrier)(comm); });
}

// ---- non-blocking allreduce and its completion ----

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  if (!recording()) return REAL(MPI_Iallreduce)(sendbuf, recvbuf, count, datatype, op, comm, request);
  const std::uint64_t t0 = ticks();
  const int rc = REAL(MPI_Iallreduce)(sendbuf, recvbuf, count, datatype, op, comm, request);
  Event e{};
  const CallShape shape{Op::Iallreduce, comm, sendbuf, recvbuf, count, count, datatype, op, -1};
  fill_event(e, shape, resolve(shape), t0, t0, rc);
  if (rc != MPI_SUCCESS) {
    e.t1 = ticks();
    emit([&](Event& out) { out = e; });
  } else {
    pending_add(*request, e);
  }
  return rc;
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!any_pending()) return REAL(MPI_Wait)(request, status);
  const MPI_Request r = *request;
  int rc;
  {
    WaitingFor waiting(&r, 1);
    rc = REAL(MPI_Wait)(request, status);
  }
  pending_complete(r, ticks(), rc);
  return rc;
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!any_pending()) return REAL(MPI_Test)(request, flag, status);
  const MPI_Request r = *request;
  const int rc = REAL(MPI_Test)(request, flag, status);
  if (*flag) pending_complete(r, ticks(), rc);
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!any_pending()) return REAL(MPI_Waitall)(count, requests, statuses);
  RequestSnapshot before(count, requests);
  int rc;
  {
    WaitingFor waiting(requests, count);
    rc = REAL(MPI_Waitall)(count, requests, statuses);
  }
  const std::uint64_t t1 = ticks();
  for (int i = 0; i < before.size(); ++i) pending_complete(before[i], t1, rc);
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!any_pending()) return REAL(MPI_Testall)(count, requests, flag, statuses);
  RequestSnapshot before(count, requests);
  const int rc = REAL(MPI_Testall)(count, requests, flag, statuses);
  if (*flag) {
    const std::uint64_t t1 = ticks();
    for (int i = 0; i < before.size(); ++i) pending_complete(before[i], t1, rc);
  }
  return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!any_pending()) return REAL(MPI_Waitany)(count, requests, index, status);
  RequestSnapshot before(count, requests);
  const int rc = REAL(MPI_Waitany)(count, requests, index, status);
  if (*index >= 0 && *index < before.size()) pending_complete(before[*index], ticks(), rc);
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!any_pending()) return REAL(MPI_Testany)(count, requests, index, flag, status);
  RequestSnapshot before(count, requests);
  const int rc = REAL(MPI_Testany)(count, requests, index, flag, status);
  if (*flag && *index >= 0 && *index < before.size()) pending_complete(before[*index], ticks(), rc);
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_pending()) return REAL(MPI_Waitsome)(incount, requests, outcount, indices, statuses);
  RequestSnapshot before(incount, requests);
  const int rc = REAL(MPI_Waitsome)(incount, requests, outcount, indices, statuses);
  const std::uint64_t t1 = ticks();
  for (int i = 0; i < *outcount && *outcount != MPI_UNDEFINED; ++i)
    if (indices[i] >= 0 && indices[i] < before.size()) pending_complete(before[indices[i]], t1, rc);
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_pending()) return REAL(MPI_Testsome)(incount, requests, outcount, indices, statuses);
  RequestSnapshot before(incount, requests);
  const int rc = REAL(MPI_Testsome)(incount, requests, outcount, indices, statuses);
  const std::uint64_t t1 = ticks();
  for (int i = 0; i < *outcount && *outcount != MPI_UNDEFINED; ++i)
    if (indices[i] >= 0 && indices[i] < before.size()) pending_complete(before[indices[i]], t1, rc);
  return rc;
}

// ---- the optional fusion C API (collscope/tracer/fusion.h) ----

__attribute__((visibility("default"))) void collscope_fusion_pack_impl(const void* buffer, size_t offset,
                                                                       size_t bytes) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e = Event{};
    e.kind = EventKind::FusionPack;
    e.t0 = e.t1 = t;
    e.root = e.peer = -1;
    e.sendbuf = reinterpret_cast<std::uint64_t>(buffer);
    e.count = static_cast<std::int64_t>(offset);
    e.bytes = static_cast<std::int64_t>(bytes);
  });
}

}  // extern "C"
