#include "profiler_core.hpp"

#include <collscope/store/schema.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "nccl_profile_sink.hpp"
#include "nccl/profiler.hpp"

namespace collscope::nccl_profiler {
namespace np = tracer::nccl_profile;
using store::Op;

namespace {

constexpr std::size_t kRecords = 2048;   // collectives in flight per communicator
constexpr std::size_t kProxyOps = 2048;  // proxy operations in flight per communicator
constexpr int kStepSlots = 16;           // NCCL keeps NCCL_STEPS (8) steps of an operation in flight
constexpr std::int64_t kStaleNs = 5'000'000'000;  // a record unfinished this long after its task is written as is

enum class Tag : std::uint8_t { Api = 1, Task, Kernel, ProxyOp, ProxyStep };
enum SlotState : int { kFree = 0, kInUse = 1 };

// Every handle NCCL gets points at one of these, inside the object it stands for.
struct Handle {
  Tag tag;
  void* owner;
};

// ---- names NCCL passes as static strings, parsed once per pointer ----

struct NameInfo {
  std::uint32_t pool_id = 0;
  std::uint8_t func = np::kNoFunc;
  Op op = Op::Unknown;
  std::uint8_t datatype_bytes = 0;
};

NameInfo parse_name(const char* s, const RecorderBridge* r) {
  struct Func {
    const char* name;
    np::NcclFunc func;
    Op op;
  };
  static constexpr Func kFuncs[] = {
      {"AllReduce", np::kAllReduce, Op::Allreduce},         {"AllGather", np::kAllGather, Op::Allgather},
      {"Broadcast", np::kBroadcast, Op::Bcast},             {"Reduce", np::kReduce, Op::Reduce},
      {"ReduceScatter", np::kReduceScatter, Op::ReduceScatter}, {"Send", np::kSend, Op::Send},
      {"Recv", np::kRecv, Op::Recv},                        {"SendRecv", np::kSendRecv, Op::Unknown},
      {"AlltoAll", np::kNoFunc, Op::Alltoall},              {"Gather", np::kNoFunc, Op::Gather},
      {"Scatter", np::kNoFunc, Op::Scatter}};
  struct Type {
    const char* name;
    std::uint8_t bytes;
  };
  static constexpr Type kTypes[] = {{"ncclInt8", 1},     {"ncclUint8", 1},      {"ncclFloat8e4m3", 1},
                                    {"ncclFloat8e5m2", 1}, {"ncclFloat16", 2},  {"ncclBfloat16", 2},
                                    {"ncclInt32", 4},    {"ncclUint32", 4},     {"ncclFloat32", 4},
                                    {"ncclInt64", 8},    {"ncclUint64", 8},     {"ncclFloat64", 8}};
  NameInfo n;
  n.pool_id = r->intern(s);
  for (const auto& f : kFuncs)
    if (std::strcmp(s, f.name) == 0) n.func = f.func, n.op = f.op;
  for (const auto& t : kTypes)
    if (std::strcmp(s, t.name) == 0) n.datatype_bytes = t.bytes;
  return n;
}

// Lock-free after the first sight of a pointer; a full cache falls back to parsing.
class NameCache {
 public:
  NameInfo get(const char* s, const RecorderBridge* r) {
    if (!s) return {};
    for (auto& e : entries_) {
      const char* key = e.key.load(std::memory_order_acquire);
      if (key == s) return e.info;
      if (key == nullptr) {
        bool expected = false;
        if (!e.claimed.compare_exchange_strong(expected, true)) continue;  // another thread fills it
        e.info = parse_name(s, r);
        e.key.store(s, std::memory_order_release);
        return e.info;
      }
    }
    return parse_name(s, r);
  }

 private:
  struct Entry {
    std::atomic<const char*> key{nullptr};
    std::atomic<bool> claimed{false};
    NameInfo info;
  };
  std::array<Entry, 64> entries_;
};

NameCache& names() {
  static auto* c = new NameCache();
  return *c;
}

std::atomic<std::uint64_t> g_next_record{1};

// For staleness only (seconds matter): the coarse clock costs a fraction of a precise read.
std::int64_t coarse_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
std::atomic<std::uint64_t> g_records{0}, g_dropped{0}, g_incomplete{0}, g_proxy_ops{0};

}  // namespace

// ---- per communicator ----

struct CallRecord {
  Handle api_handle{Tag::Api, this}, task_handle{Tag::Task, this}, kernel_handle{Tag::Kernel, this};
  std::atomic<int> state{kFree};
  Context* ctx = nullptr;
  std::uint64_t record_id = 0;
  np::Identity identity = np::Identity::Unknown;
  std::uint32_t comm_slot = 0;
  std::int64_t call_seq = -1;
  bool own_row = false;  // the plugin writes this call's collectives row (no interposer saw it)
  bool has_api = false, has_task = false;
  std::uint64_t api_t0 = 0, api_t1 = 0, task_t0 = 0, task_t1 = 0;  // recorder ticks
  ApiCallInfo api;
  TaskInfo task;
  std::atomic<std::uint64_t> gpu_first{UINT64_MAX}, gpu_last{0};
  std::atomic<int> kernels_started{0}, kernels_stopped{0}, kernels_timed{0};
  std::atomic<std::uint32_t> proxy_ops{0};
  std::atomic<bool> task_stopped{false}, emitted{false};
  std::atomic<std::int64_t> last_ns{0};  // CLOCK_MONOTONIC_COARSE of its last event (staleness)

  void reset(Context* c) {
    // Relaxed: the record reaches other threads only through NCCL, after the handle was returned.
    constexpr auto r = std::memory_order_relaxed;
    ctx = c;
    record_id = g_next_record.fetch_add(1, r);
    identity = np::Identity::Unknown;
    comm_slot = 0;
    call_seq = -1;
    own_row = has_api = has_task = false;
    api_t0 = api_t1 = task_t0 = task_t1 = 0;
    api = {};
    task = {};
    gpu_first.store(UINT64_MAX, r);
    gpu_last.store(0, r);
    kernels_started.store(0, r);
    kernels_stopped.store(0, r);
    kernels_timed.store(0, r);
    proxy_ops.store(0, r);
    task_stopped.store(false, r);
    emitted.store(false, r);
    last_ns.store(coarse_ns(), r);
  }
};

struct ProxyOpObject {
  struct Step {
    Handle handle;
    std::uint64_t max_trans = 0;  // bytes NCCL reported for the step in flight in this slot
  };
  Handle handle{Tag::ProxyOp, this};
  std::array<Step, kStepSlots> steps;
  std::atomic<int> state{kFree};
  std::uint64_t record_id = 0;
  ProxyOpInfo info;
  std::uint64_t start_ticks = 0;
  int steps_done = 0;
  std::int64_t bytes = 0;
  ProxyOpObject() {
    for (auto& s : steps) s.handle = {Tag::ProxyStep, this};
  }
};

enum class Mode : int { Undecided = 0, Interposed = 1, Own = 2 };

struct Context {
  CommInfo info;
  const RecorderBridge* r = nullptr;
  std::uint64_t creation_token = 0;
  std::atomic<Mode> mode{Mode::Undecided};
  std::once_flag own_registration;
  std::uint32_t own_slot = 0;
  std::atomic<std::int64_t> next_seq{0};  // own rows: the call's index on the communicator
  std::unique_ptr<CallRecord[]> records{new CallRecord[kRecords]};
  std::atomic<std::uint64_t> next_record{0};
  std::unique_ptr<ProxyOpObject[]> ops{new ProxyOpObject[kProxyOps]};
  std::atomic<std::uint64_t> next_op{0};
  GpuClockMapper clock;
};

namespace {

const RecorderBridge* find_recorder() {
  using Accessor = const RecorderBridge* (*)();
  if (auto fn = reinterpret_cast<Accessor>(dlsym(RTLD_DEFAULT, "collscope_recorder_bridge_v1"))) {
    const RecorderBridge* b = fn();
    if (b && b->abi == np::kBridgeAbi && b->size == sizeof(RecorderBridge)) return b;
    return nullptr;  // a preload of another build: writing beside it would clobber its file
  }
  np::install_sink();  // alone: the plugin's own recorder decodes its records
  return np::local_bridge();
}

std::once_flag g_recorder_once;
const RecorderBridge* g_recorder = nullptr;

void emit_record(CallRecord& rec, bool complete) {
  Context& ctx = *rec.ctx;
  const RecorderBridge* r = ctx.r;
  np::CollectiveRecord out;
  out.identity = rec.identity;
  const NameInfo func = names().get(rec.task.func, r);
  out.func = func.func;
  out.channels = static_cast<std::uint8_t>(rec.task.channels);
  out.warps = static_cast<std::uint8_t>(rec.task.warps);
  out.api_version = static_cast<std::uint8_t>(ctx.info.api_version);
  out.algorithm = names().get(rec.task.algo, r).pool_id;
  out.protocol = names().get(rec.task.proto, r).pool_id;
  out.record_id = rec.record_id;
  out.comm_slot = rec.comm_slot;
  out.peer = rec.task.p2p ? rec.task.peer : -1;
  out.comm_token = ctx.creation_token;
  out.call_seq = rec.call_seq;
  out.nccl_seq = rec.task.nccl_seq;
  const int timed = rec.kernels_timed.load();
  // GPU times only when every kernel channel reported both timestamps: a partial span would be wrong.
  if (complete && timed > 0 && timed == rec.kernels_stopped.load() && ctx.clock.calibrated()) {
    out.kernel_channels = static_cast<std::uint8_t>(std::min(timed, 255));
    out.gpu_start_ns = ctx.clock.to_host_ns(rec.gpu_first.load());
    out.gpu_end_ns = ctx.clock.to_host_ns(rec.gpu_last.load());
  }
  out.count = rec.task.count;
  out.datatype_bytes = names().get(rec.task.datatype, r).datatype_bytes;
  out.proxy_ops = rec.proxy_ops.load();
  out.sendbuf = reinterpret_cast<std::uint64_t>(rec.task.sendbuf);
  out.recvbuf = reinterpret_cast<std::uint64_t>(rec.task.recvbuf);
  r->emit(&out);
  g_records.fetch_add(1, std::memory_order_relaxed);
  if (!complete) g_incomplete.fetch_add(1, std::memory_order_relaxed);
}

// The collectives row of a call no interposer saw, as the interposer would have written it.
void emit_own_row(CallRecord& rec) {
  Context& ctx = *rec.ctx;
  const RecorderBridge* r = ctx.r;
  const char* func_name = rec.has_api ? rec.api.func : rec.task.func;
  const NameInfo func = names().get(func_name, r);
  const NameInfo type = names().get(rec.has_api ? rec.api.datatype : rec.task.datatype, r);
  const std::uint64_t count = rec.has_api ? rec.api.count : rec.task.count;
  // bytes as the interposer counts them: allgather the gathered buffer, reduce-scatter the send buffer.
  const bool whole = func.op == Op::Allgather || func.op == Op::ReduceScatter;
  const std::uint64_t ranks = whole && ctx.info.nranks > 0 ? static_cast<std::uint64_t>(ctx.info.nranks) : 1;
  tracer::Event e{};
  e.kind = tracer::EventKind::Collective;
  e.op = static_cast<std::uint8_t>(func.op);
  e.t0 = rec.has_api ? rec.api_t0 : rec.task_t0;
  e.t1 = rec.has_api ? rec.api_t1 : rec.task_t1;
  e.comm_slot = rec.comm_slot;
  e.root = func.op == Op::Bcast || func.op == Op::Reduce ? rec.task.root : -1;  // NCCL passes 0 for the others
  e.peer = rec.task.p2p ? rec.task.peer : -1;
  e.seq = rec.call_seq;
  e.count = static_cast<std::int64_t>(count);
  e.bytes = static_cast<std::int64_t>(count * type.datatype_bytes * ranks);
  e.datatype = type.pool_id;
  // A point-to-point task names one buffer: the interposer's rows have it as sendbuf (send) or recvbuf (recv).
  e.sendbuf = func.op == Op::Recv ? 0 : reinterpret_cast<std::uint64_t>(rec.task.sendbuf);
  e.recvbuf = func.op == Op::Send ? 0 : reinterpret_cast<std::uint64_t>(rec.task.recvbuf);
  // An NCCL row like the interposer's: the payload is `nccl` (its stream), which the writer reads only with kFlagNccl.
  e.flags = tracer::kFlagNccl | (!rec.task.p2p && e.sendbuf == e.recvbuf ? tracer::kFlagInPlace : 0);
  e.nccl.stream = reinterpret_cast<std::uint64_t>(rec.api.stream);
  r->emit(&e);
}

void release(CallRecord& rec) { rec.state.store(kFree, std::memory_order_release); }

// Writes the record once its task stopped and every kernel channel it ran reported back.
void maybe_emit(CallRecord& rec) {
  if (!rec.task_stopped.load()) return;
  const int stopped = rec.kernels_stopped.load();
  if (stopped < rec.task.channels || rec.kernels_started.load() != stopped) return;
  if (rec.emitted.exchange(true)) return;
  emit_record(rec, true);
  release(rec);
}

CallRecord* claim_record(Context& ctx) {
  const std::uint64_t i = ctx.next_record.fetch_add(1, std::memory_order_relaxed);
  CallRecord& rec = ctx.records[i % kRecords];
  int expected = kFree;
  if (!rec.state.compare_exchange_strong(expected, kInUse)) {
    // Still in use a whole ring later: finished long ago but never completed (a kernel channel that never
    // reported) is written without GPU times and reused; anything else drops the new event.
    if (coarse_ns() - rec.last_ns.load() < kStaleNs || rec.emitted.exchange(true)) {
      g_dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    if (rec.has_task) emit_record(rec, false);
  }
  rec.reset(&ctx);
  return &rec;
}

void register_own(Context& ctx) {
  std::call_once(ctx.own_registration, [&] {
    std::uint64_t key = ctx.info.comm_hash;
    if (key == 0) {  // v3 says nothing about the communicator: this process's k-th context
      static std::atomic<std::uint64_t> contexts{0};
      const std::uint64_t k = contexts.fetch_add(1);
      key = tracer::hash_bytes(&k, sizeof k, tracer::hash_bytes("nccl-profiler-v3", 16));
    }
    const std::string name = ctx.info.name.empty() ? "nccl (profiler)" : "nccl (profiler: " + ctx.info.name + ")";
    ctx.own_slot = ctx.r->register_comm(&ctx, key, ctx.info.nranks, std::max(0, ctx.info.rank), name.c_str());
  });
}

// Names the call a record stands for, for a communicator whose calls the interposer does not see (own rows),
// or from NCCL's sequence number when the API event that would say it is missing.
void identify_without_api(Context& ctx, CallRecord& rec) {
  Mode mode = ctx.mode.load();
  if (mode == Mode::Undecided) {
    mode = ctx.creation_token || ctx.r->interposer_active() ? Mode::Interposed : Mode::Own;
    Mode expected = Mode::Undecided;
    if (!ctx.mode.compare_exchange_strong(expected, mode)) mode = expected;
  }
  if (mode == Mode::Own) {
    register_own(ctx);
    rec.identity = np::Identity::Call;
    rec.comm_slot = ctx.own_slot;
    rec.call_seq = ctx.next_seq.fetch_add(1, std::memory_order_relaxed);
    rec.own_row = true;
  } else if (ctx.creation_token && !rec.task.p2p) {
    rec.identity = np::Identity::NcclSeq;
  }
}

}  // namespace

const RecorderBridge* recorder() {
  std::call_once(g_recorder_once, [] { g_recorder = find_recorder(); });
  return g_recorder;
}

const char* recorder_kind() {
  const RecorderBridge* r = recorder();
  if (!r) return "none";
  return r == np::local_bridge() ? "own" : "preload";
}

int activation_mask(int api_version) {
  int mask = kColl | kP2p | kProxyOp | kProxyStep | kKernelCh;
  if (api_version >= 5) mask |= kCollApi | kP2pApi;
  return mask;
}

Context* context_create(const CommInfo& info) {
  const RecorderBridge* r = recorder();
  if (!r) return nullptr;
  r->start(std::max(0, info.rank), std::max(1, info.nranks));
  if (!r->recording()) return nullptr;
  auto* ctx = new Context();
  ctx->info = info;
  ctx->r = r;
  ctx->creation_token = r->creation_token();  // ncclCommInitRank/Split under the interposer, on this thread
  return ctx;
}

void context_finalize(Context* ctx) {
  if (!ctx) return;
  // Whatever is still open is written as it is (NCCL is done with the communicator).
  for (std::size_t i = 0; i < kRecords; ++i) {
    CallRecord& rec = ctx->records[i];
    if (rec.state.load() == kInUse && rec.has_task && !rec.emitted.exchange(true)) emit_record(rec, false);
  }
  if (ctx->own_slot) ctx->r->unregister_comm(ctx);
  ctx->r->set_meta("nccl_profiler.dropped", std::to_string(g_dropped.load()).c_str());
  ctx->r->set_meta("nccl_profiler.incomplete", std::to_string(g_incomplete.load()).c_str());
  delete ctx;
}

void* api_start(Context* ctx, const ApiCallInfo& call, bool p2p) {
  if (!ctx || !ctx->r->recording()) return nullptr;
  CallRecord* rec = claim_record(*ctx);
  if (!rec) return nullptr;
  rec->has_api = true;
  rec->api = call;
  rec->task.p2p = p2p;
  rec->api_t0 = ctx->r->ticks();
  std::uint32_t slot = 0;
  std::int64_t seq = -1;
  if (ctx->r->current_call(&slot, &seq) && slot) {
    // Inside the interposer's wrapper of this very call: its row is (slot, seq).
    Mode expected = Mode::Undecided;
    ctx->mode.compare_exchange_strong(expected, Mode::Interposed);
    rec->identity = np::Identity::Call;
    rec->comm_slot = slot;
    rec->call_seq = seq;
  } else {
    // No wrapper around the call: nobody else writes its row. A communicator the interposer does see but whose
    // call it did not wrap (an NCCL function it does not know) stays unnamed rather than get a second row.
    Mode expected = Mode::Undecided;
    ctx->mode.compare_exchange_strong(expected, Mode::Own);
    if (ctx->mode.load() == Mode::Own) identify_without_api(*ctx, *rec);
  }
  return &rec->api_handle;
}

void* task_start(Context* ctx, void* parent, const TaskInfo& task) {
  if (!ctx || !ctx->r->recording()) return nullptr;
  auto* h = static_cast<Handle*>(parent);
  CallRecord* rec = h && h->tag == Tag::Api ? static_cast<CallRecord*>(h->owner) : nullptr;
  if (rec && (rec->ctx != ctx || rec->has_task)) rec = nullptr;  // not ours, or reused
  const bool from_api = rec != nullptr;
  if (!rec && !(rec = claim_record(*ctx))) return nullptr;
  rec->has_task = true;
  rec->task = task;
  rec->task_t0 = ctx->r->ticks();
  if (!from_api) identify_without_api(*ctx, *rec);
  return &rec->task_handle;
}

void* kernel_channel_start(Context* ctx, void* parent, std::uint64_t gpu_start_ns) {
  auto* h = static_cast<Handle*>(parent);
  if (!ctx || !h || h->tag != Tag::Task) return nullptr;
  auto* rec = static_cast<CallRecord*>(h->owner);
  if (rec->emitted.load()) return nullptr;
  const int started_before = rec->kernels_started.fetch_add(1);
  if (gpu_start_ns) {
    // One clock sample per record and end (a host clock read is most of a channel event's cost): the first
    // channel's start here, the last channel's stop in event_state.
    if (started_before == 0) ctx->clock.sample(gpu_start_ns, tracer::monotonic_ns());
    std::uint64_t seen = rec->gpu_first.load(std::memory_order_relaxed);
    while (gpu_start_ns < seen && !rec->gpu_first.compare_exchange_weak(seen, gpu_start_ns)) {
    }
  }
  return &rec->kernel_handle;
}

void* proxy_op_start(Context* ctx, void* parent, const ProxyOpInfo& op) {
  if (!ctx || !ctx->r->recording()) return nullptr;
  static const pid_t self = ::getpid();
  if (op.pid != self) return nullptr;  // PXN: another process's operation, proxied here
  auto* h = static_cast<Handle*>(parent);
  CallRecord* rec = h && h->tag == Tag::Task ? static_cast<CallRecord*>(h->owner) : nullptr;
  ProxyOpObject& o = ctx->ops[ctx->next_op.fetch_add(1, std::memory_order_relaxed) % kProxyOps];
  int expected = kFree;
  if (!o.state.compare_exchange_strong(expected, kInUse)) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  o.record_id = rec ? rec->record_id : 0;
  o.info = op;
  o.start_ticks = ctx->r->ticks();
  o.steps_done = 0;
  o.bytes = 0;
  if (rec) rec->proxy_ops.fetch_add(1);
  return &o.handle;
}

void* proxy_step_start(void* parent_op, int step) {
  auto* h = static_cast<Handle*>(parent_op);
  if (!h || h->tag != Tag::ProxyOp) return nullptr;
  auto* o = static_cast<ProxyOpObject*>(h->owner);
  auto& slot = o->steps[static_cast<unsigned>(step) % kStepSlots];
  slot.max_trans = 0;
  return &slot.handle;
}

void event_state(void* handle, int state, std::uint64_t trans_size, std::uint64_t gpu_stop_ns) {
  auto* h = static_cast<Handle*>(handle);
  if (!h) return;
  if (h->tag == Tag::Kernel && state == kKernelChStop && gpu_stop_ns) {
    auto* rec = static_cast<CallRecord*>(h->owner);
    if (rec->kernels_timed.fetch_add(1) + 1 == rec->task.channels)
      rec->ctx->clock.sample(gpu_stop_ns, tracer::monotonic_ns());
    std::uint64_t seen = rec->gpu_last.load(std::memory_order_relaxed);
    while (gpu_stop_ns > seen && !rec->gpu_last.compare_exchange_weak(seen, gpu_stop_ns)) {
    }
  } else if (h->tag == Tag::ProxyStep) {
    auto* step = reinterpret_cast<ProxyOpObject::Step*>(h);  // the handle is the Step's first member
    step->max_trans = std::max<std::uint64_t>(step->max_trans, trans_size);
  }
}

void event_stop(void* handle) {
  auto* h = static_cast<Handle*>(handle);
  if (!h) return;
  switch (h->tag) {
    case Tag::Api: {
      auto* rec = static_cast<CallRecord*>(h->owner);
      rec->api_t1 = rec->ctx->r->ticks();
      break;
    }
    case Tag::Task: {
      auto* rec = static_cast<CallRecord*>(h->owner);
      rec->task_t1 = rec->ctx->r->ticks();
      rec->last_ns.store(coarse_ns(), std::memory_order_relaxed);
      if (rec->own_row) emit_own_row(*rec);
      rec->task_stopped.store(true);
      maybe_emit(*rec);
      break;
    }
    case Tag::Kernel: {
      auto* rec = static_cast<CallRecord*>(h->owner);
      rec->kernels_stopped.fetch_add(1);
      maybe_emit(*rec);
      break;
    }
    case Tag::ProxyStep: {
      auto* step = reinterpret_cast<ProxyOpObject::Step*>(h);
      auto* o = static_cast<ProxyOpObject*>(h->owner);
      ++o->steps_done;
      o->bytes += static_cast<std::int64_t>(step->max_trans);
      step->max_trans = 0;
      break;
    }
    case Tag::ProxyOp: {
      auto* o = static_cast<ProxyOpObject*>(h->owner);
      const RecorderBridge* r = recorder();
      np::ProxyOpRecord out;
      out.is_send = o->info.is_send ? 1 : 0;
      out.channel = static_cast<std::uint8_t>(o->info.channel);
      out.peer = o->info.peer;
      out.record_id = o->record_id;
      out.steps = o->info.steps;
      out.steps_done = o->steps_done;
      out.chunk_bytes = o->info.chunk_bytes;
      out.bytes = o->bytes;
      out.start_ticks = o->start_ticks;
      out.end_ticks = r->ticks();
      if (o->record_id) {
        r->emit(&out);
        g_proxy_ops.fetch_add(1, std::memory_order_relaxed);
      }
      o->state.store(kFree, std::memory_order_release);
      break;
    }
  }
}

CoreStats core_stats() {
  return {g_records.load(), g_dropped.load(), g_incomplete.load(), g_proxy_ops.load()};
}

}  // namespace collscope::nccl_profiler
