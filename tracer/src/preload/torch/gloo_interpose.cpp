// gloo interposition: the collectives torch.distributed's gloo backend makes from C++, which no wrapper of its
// Python functions sees: DDP's bucket allreduces, issued by its reducer as backward runs, and its broadcasts (the
// parameters at construction, the buffers before each forward). libtorch_cpu calls gloo through the PLT (Debian
// links it with libgloo.so.0), so gloo::allreduce, gloo::broadcast and gloo::rendezvous::Context::connectFullMesh
// resolve to the definitions here first (LD_PRELOAD); each calls the next definition. Nothing here links gloo; in a
// process without it none is ever called.
//
// Which process group a call belongs to: a ProcessGroupGloo connects its contexts in its constructor, on the thread
// that creates the group, and collscope's sitecustomize registers the group right after, on that thread
// (annotation.h, comm_register): the contexts connected since are bound to it then (bind_connected_contexts). Their
// calls are recorded on a communicator of their own beside the group's ("default group (C++ calls)"), in
// torch.distributed's non-blocking form (iallreduce, ibcast: the issuing thread goes on while gloo's worker runs
// them): started and posted when the worker starts the call, completed when it returns, numbered by gloo's tag,
// which ProcessGroupGloo takes per group in issue order, the same on every rank (communicators.seq_numbering =
// "gloo tag": not consecutive, since the group's other operations take tags too; readers number them again).
// Calls Python records itself (torch.distributed.all_reduce and broadcast, the DDP comm hook) claim their buffer
// first and are left to it.
//
// gloo's objects are read through the layout of the gloo Debian 12 ships with python3-torch 1.13 (libgloo0
// 0.0~git20220518.5b14351), measured on x86-64 with its own headers (libgloo-dev). Elsewhere (another gloo inside
// another library: PyTorch's wheels link it statically) the calls pass straight through, with one line on stderr.
#include "torch/gloo_interpose.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/recorder.hpp"
#include "core/runtime.hpp"
#include "core/symbols.hpp"

namespace collscope::tracer::gloo {
namespace {

// gloo::Context: a vtable, then `const int rank, size`.
struct ContextView {
  void* vtable;
  std::int32_t rank;
  std::int32_t size;
};

// gloo::transport::UnboundBuffer: a vtable, then `void* const ptr; const size_t size` (bytes).
struct UnboundBufferView {
  void* vtable;
  void* ptr;
  std::size_t size;
};

// gloo::AllreduceOptions: its one member, detail::AllreduceOptionsImpl.
struct AllreduceOptionsView {
  ContextView* context;  // std::shared_ptr<gloo::Context>: the object, then its control block
  void* context_control;
  std::int64_t timeout_ms;
  std::int32_t algorithm;
  UnboundBufferView** in[3];   // std::vector<std::unique_ptr<UnboundBuffer>>: begin, end, end of storage
  UnboundBufferView** out[3];
  std::size_t elements;
  std::size_t element_size;    // bytes
  unsigned char reduce[32];    // std::function<void(void*, const void*, const void*, size_t)>
  std::uint32_t tag;
  std::size_t max_segment_size;
};
static_assert(offsetof(AllreduceOptionsView, in) == 32 && offsetof(AllreduceOptionsView, out) == 56 &&
                  offsetof(AllreduceOptionsView, elements) == 80 && offsetof(AllreduceOptionsView, reduce) == 96 &&
                  offsetof(AllreduceOptionsView, tag) == 128 && sizeof(AllreduceOptionsView) == 144,
              "gloo 0.0~git20220518's AllreduceOptionsImpl, as its headers lay it out on x86-64");
static_assert(offsetof(ContextView, rank) == 8 && offsetof(UnboundBufferView, size) == 16);

// gloo::BroadcastOptions (its members are its own, protected).
struct BroadcastOptionsView {
  ContextView* context;
  void* context_control;
  UnboundBufferView* in;       // std::unique_ptr<UnboundBuffer>: the root's, where it differs from out
  UnboundBufferView* out;
  std::size_t elements;
  std::size_t element_size;    // bytes
  std::int32_t root;           // rank in the group
  std::uint32_t tag;
  std::int64_t timeout_ms;
};
static_assert(offsetof(BroadcastOptionsView, out) == 24 && offsetof(BroadcastOptionsView, root) == 48 &&
                  offsetof(BroadcastOptionsView, tag) == 52 && sizeof(BroadcastOptionsView) == 64,
              "gloo 0.0~git20220518's BroadcastOptions, as its headers lay it out on x86-64");

constexpr const char* kAllreduce = "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE";
constexpr const char* kBroadcast = "_ZN4gloo9broadcastERNS_16BroadcastOptionsE";
constexpr const char* kConnectFullMesh =
    "_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE";

using CollectiveFn = void (*)(const void* options);
using ConnectFn = void (*)(void* context, void* store, void* device);

// The next definition of `name` (libgloo.so.0 is often loaded RTLD_LOCAL, as torch's extension's dependency, where
// RTLD_NEXT cannot see), and whether it is the gloo whose layout is known here: Debian's libgloo.so.0.
struct Next {
  void* fn = nullptr;
  bool known_layout = false;
};

Next resolve(const char* name) {
  Next next;
  next.fn = next_function(name, loaded_library_defining(name));
  Dl_info info{};
  if (next.fn && dladdr(next.fn, &info) && info.dli_fname) {
    const char* base = std::strrchr(info.dli_fname, '/');
    next.known_layout = std::strncmp(base ? base + 1 : info.dli_fname, "libgloo.so.0", 12) == 0;
    if (!next.known_layout)
      warn_once(std::string("gloo is inside ") + info.dli_fname +
                ", not Debian's libgloo.so.0, whose layout the tracer reads: its calls pass through unrecorded (in a "
                "PyTorch DDP job, COLLSCOPE_DDP_HOOK=1 records the buckets through a comm hook instead)");
  }
  return next;
}

// `*Name`'s next definition, resolved once (at its first call: gloo is loaded by then).
template <const char* const* Name>
const Next& next_of() {
  static const Next next = resolve(*Name);
  return next;
}
constexpr const char* const* kAllreduceName = &kAllreduce;
constexpr const char* const* kBroadcastName = &kBroadcast;
constexpr const char* const* kConnectFullMeshName = &kConnectFullMesh;

// Contexts bound to process groups. Written under g_bind_mutex, once per group; read without a lock on every
// allreduce: `context` is published last (release) and cleared when a new context is connected at its address.
struct Binding {
  std::atomic<const void*> context{nullptr};
  std::uint32_t group_comm = 0;            // the group's own communicator (Python's records)
  CommDescription twin;                    // what the C++ calls' communicator is registered with
  std::atomic<std::uint32_t> comm{0};      // that communicator, registered at the first call
};
constexpr std::size_t kMaxBindings = 64;
Binding g_bindings[kMaxBindings];
std::mutex g_bind_mutex;

// Contexts this thread connected and no group has claimed yet (a group has one per device: usually one).
constexpr std::size_t kMaxPending = 8;
thread_local const void* t_pending[kMaxPending];
thread_local std::size_t t_pending_count = 0;

Binding* binding_of(const void* context) {
  for (auto& b : g_bindings)
    if (b.context.load(std::memory_order_acquire) == context) return &b;
  return nullptr;
}

// Buffers claimed by Python (see claim()); g_claims counts them so that the common case reads one word.
constexpr std::size_t kMaxClaims = 64;
std::atomic<std::uint64_t> g_claimed[kMaxClaims];
std::atomic<int> g_claims{0};

bool take_claim(std::uint64_t address) {
  if (g_claims.load(std::memory_order_acquire) == 0) return false;
  for (auto& c : g_claimed) {
    std::uint64_t expected = address;
    if (c.load(std::memory_order_relaxed) == address &&
        c.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
      g_claims.fetch_sub(1, std::memory_order_acq_rel);
      return true;
    }
  }
  return false;
}

std::uint32_t twin_comm(Binding& b) {
  std::uint32_t comm = b.comm.load(std::memory_order_acquire);
  if (comm != 0) return comm;
  std::lock_guard lock(g_bind_mutex);
  comm = b.comm.load(std::memory_order_relaxed);
  if (comm == 0) {
    // One communicator for all of a group's contexts: its handle is the key (odd, as register_group's are).
    comm = comm_register(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(b.twin.key | 1)), b.twin);
    b.comm.store(comm, std::memory_order_release);
  }
  return comm;
}

// What a collective carries, read from its options; false when they do not look like gloo's (another layout).
struct Payload {
  std::uint64_t buffer = 0;  // the (first) output buffer's address: what a claim names
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  std::int32_t root = -1;
  std::uint32_t tag = 0;
};

bool plausible(const UnboundBufferView* out, std::size_t elements, std::size_t element_size) {
  return out && element_size != 0 && element_size <= 16 && elements <= (std::size_t{1} << 40) &&
         out->size == elements * element_size;
}

bool read_payload(const AllreduceOptionsView& o, Payload& p) {
  const std::size_t outputs = static_cast<std::size_t>(o.out[1] - o.out[0]);
  if (!o.out[0] || o.out[1] < o.out[0] || outputs == 0 || outputs > 1024) return false;
  if (!plausible(o.out[0][0], o.elements, o.element_size)) return false;
  p.buffer = reinterpret_cast<std::uintptr_t>(o.out[0][0]->ptr);
  p.count = static_cast<std::int64_t>(o.elements);
  p.bytes = static_cast<std::int64_t>(o.elements * o.element_size);
  p.tag = o.tag;
  return true;
}

bool read_payload(const BroadcastOptionsView& o, Payload& p) {
  if (!plausible(o.out, o.elements, o.element_size) || o.root < 0 || o.root >= o.context->size) return false;
  p.buffer = reinterpret_cast<std::uintptr_t>(o.out->ptr);
  p.count = static_cast<std::int64_t>(o.elements);
  p.bytes = static_cast<std::int64_t>(o.elements * o.element_size);
  p.root = o.root;
  p.tag = o.tag;
  return true;
}

// The next definition of what was called; a gloo that lacks it cannot be the caller's, so this never happens in a job
// gloo's own calls reach, and a call to nothing would crash it: the caller gets gloo's kind of failure, an exception.
template <const char* const* Name>
void* next_or_throw() {
  const Next& next = next_of<Name>();
  if (!next.fn) {
    warn_once(std::string(*Name) + " called but no gloo library defines it");
    throw std::runtime_error(std::string("collscope: ") + *Name + " not found");
  }
  return next.fn;
}

template <const char* const* Name>
void call_next(const void* options) {
  reinterpret_cast<CollectiveFn>(next_or_throw<Name>())(options);
}

// One of a bound group's collectives made from C++, recorded as torch.distributed's non-blocking form of `op` (the
// issuing thread goes on; gloo's worker runs it): started and posted when the worker starts it, completed at its
// return. Anything not understood passes through unrecorded.
template <typename Options, void (*Call)(const void*)>
void record_collective(const void* options, store::Op op, const char* what) {
  const auto* o = static_cast<const Options*>(options);
  Binding* b = tracing_this_call() && o ? binding_of(o->context) : nullptr;
  Payload p;
  if (!b) return Call(options);
  if (!read_payload(*o, p)) {
    warn_once(std::string("a gloo ") + what + " whose options are not laid out as the tracer reads them: not recorded");
    return Call(options);
  }
  if (take_claim(p.buffer)) return Call(options);  // Python records this one
  Event e{};
  e.kind = EventKind::Collective;
  e.op = static_cast<std::uint8_t>(op);
  e.flags = kFlagNonBlocking;
  e.comm_slot = twin_comm(*b);
  e.seq = p.tag;
  e.count = p.count;
  e.bytes = p.bytes;
  e.root = p.root;
  e.peer = -1;
  if (e.comm_slot == 0) return Call(options);
  e.t0 = ticks();
  e.mpi.post_end = e.t0;
  try {
    TracedScope scope;
    Call(options);
  } catch (...) {  // gloo's IoException (a peer gone, a timeout): recorded as failed, then the caller's
    e.t1 = ticks();
    e.status = 1;
    record(e);
    throw;
  }
  e.t1 = ticks();
  record(e);
}

}  // namespace

void bind_connected_contexts(std::uint32_t group_comm, const CommDescription& group) {
  const std::size_t pending = t_pending_count;
  t_pending_count = 0;
  // COLLSCOPE_GLOO=0: gloo's calls pass straight through (DDP's buckets then come from DDP's own log, or the hook).
  static const bool off = [] {
    const char* v = std::getenv("COLLSCOPE_GLOO");
    return v && std::string_view(v) == "0";
  }();
  if (group_comm == 0 || off || !next_of<kAllreduceName>().known_layout) return;
  for (std::size_t i = 0; i < pending; ++i) {
    const auto* context = static_cast<const ContextView*>(t_pending[i]);
    if (context->rank != group.rank || context->size != group.size) continue;
    std::lock_guard lock(g_bind_mutex);
    Binding* free = nullptr;
    for (auto& b : g_bindings)
      if (!b.context.load(std::memory_order_relaxed)) {
        free = &b;
        break;
      }
    if (!free) {
      warn_once("more than 64 gloo process groups: the C++ collectives of the later ones are not recorded");
      return;
    }
    free->group_comm = group_comm;
    free->twin = group;
    free->twin.key = group.key ^ 0x9e3779b97f4a7c15ULL;  // identical on every member, as the group's key is
    free->twin.backend = store::Backend::Gloo;
    free->twin.name = (group.name.empty() ? std::string("process group") : group.name) + " (C++ calls)";
    free->twin.seq_numbering = "gloo tag";
    free->comm.store(0, std::memory_order_relaxed);
    free->context.store(context, std::memory_order_release);
  }
}

bool claim(std::uint32_t group_comm, std::uint64_t address) {
  bool bound = false;
  for (auto& b : g_bindings)
    if (b.context.load(std::memory_order_acquire) && b.group_comm == group_comm) bound = true;
  if (!bound || address == 0) return false;
  for (auto& c : g_claimed) {
    std::uint64_t expected = 0;
    if (c.compare_exchange_strong(expected, address, std::memory_order_acq_rel)) {
      g_claims.fetch_add(1, std::memory_order_acq_rel);
      return true;
    }
  }
  return false;
}

void release(std::uint64_t address) { take_claim(address); }

}  // namespace collscope::tracer::gloo

using namespace collscope::tracer;

// gloo::rendezvous::Context::connectFullMesh(Store&, std::shared_ptr<transport::Device>&): `this` first, as the
// x86-64 C++ ABI passes it. The context connected becomes this thread's pending one; an older binding of the same
// address (a destroyed group's context) is forgotten.
extern "C" __attribute__((visibility("default"))) void collscope_gloo_connect_full_mesh(void* self, void* store,
                                                                                      void* device) __asm__(
    "_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE");
extern "C" void collscope_gloo_connect_full_mesh(void* self, void* store, void* device) {
  // May throw: the caller's to handle.
  reinterpret_cast<gloo::ConnectFn>(gloo::next_or_throw<gloo::kConnectFullMeshName>())(self, store, device);
  if (!gloo::next_of<gloo::kConnectFullMeshName>().known_layout) return;
  {
    std::lock_guard lock(gloo::g_bind_mutex);
    for (auto& b : gloo::g_bindings)
      if (b.context.load(std::memory_order_relaxed) == self) b.context.store(nullptr, std::memory_order_release);
  }
  if (gloo::t_pending_count < gloo::kMaxPending) gloo::t_pending[gloo::t_pending_count++] = self;
}

// gloo::allreduce(const AllreduceOptions&): DDP's buckets.
extern "C" __attribute__((visibility("default"))) void collscope_gloo_allreduce(const void* options) __asm__(
    "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
extern "C" void collscope_gloo_allreduce(const void* options) {
  gloo::record_collective<gloo::AllreduceOptionsView, &gloo::call_next<gloo::kAllreduceName>>(
      options, collscope::store::Op::Iallreduce, "allreduce");
}

// gloo::broadcast(BroadcastOptions&): DDP's parameters at its construction and its buffers (BatchNorm's statistics)
// before each forward, from rank 0.
extern "C" __attribute__((visibility("default"))) void collscope_gloo_broadcast(const void* options) __asm__(
    "_ZN4gloo9broadcastERNS_16BroadcastOptionsE");
extern "C" void collscope_gloo_broadcast(const void* options) {
  gloo::record_collective<gloo::BroadcastOptionsView, &gloo::call_next<gloo::kBroadcastName>>(
      options, collscope::store::Op::Ibcast, "broadcast");
}
