#include "nccl_profile_bridge.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "nccl_profile_sink.hpp"
#include "core/job_metadata.hpp"
#include "core/runtime.hpp"
#include "core/string_pool.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer::nccl_profile {
namespace {

struct CurrentCall {
  std::uint32_t comm_slot = 0;
  std::int64_t seq = -1;
  int depth = 0;
};
thread_local CurrentCall t_call;
thread_local std::uint64_t t_creation_token = 0;

std::atomic<std::uint64_t> g_next_token{1};
std::atomic<bool> g_interposer_active{false};
std::mutex g_tokens_mutex;
std::unordered_map<std::uint64_t, std::uint32_t>& token_slots() {
  static auto* m = new std::unordered_map<std::uint64_t, std::uint32_t>();  // never destroyed: used at exit
  return *m;
}

constexpr int kFuncs = 8;
std::atomic<std::int64_t> g_nccl_seq[kMaxCommunicators + 1][kFuncs];

// ---- the bridge functions, over this library's recorder ----

int bridge_recording() { return recording() ? 1 : 0; }

void bridge_start(int nccl_rank, int nccl_size) { start_recording("nccl-profiler", nccl_rank, nccl_size); }

std::uint64_t bridge_ticks() { return ticks(); }
std::uint32_t bridge_intern(const char* text) { return text ? pool_intern(text) : 0; }

void bridge_emit(const void* event) {
  ThreadBuffer& tb = this_thread_buffer();
  Event* e = tb.reserve();
  if (!e) return;  // no memory for trace buffers: dropped and counted, as for every event
  std::memcpy(static_cast<void*>(e), event, sizeof(Event));
  // A record's bytes are its own; only a plain Collective event carries the recording thread.
  if (e->kind == EventKind::Collective) e->thread = tb.index();
  tb.publish();
}

int bridge_current_call(std::uint32_t* comm_slot, std::int64_t* seq) {
  if (t_call.depth == 0) return 0;
  *comm_slot = t_call.comm_slot;
  *seq = t_call.seq;
  return 1;
}

std::uint64_t bridge_creation_token() { return t_creation_token; }
int bridge_interposer_active() { return g_interposer_active.load(std::memory_order_relaxed) ? 1 : 0; }

std::uint32_t bridge_register_comm(const void* handle, std::uint64_t key, int size, int rank, const char* name) {
  CommDescription d;
  d.key = key;
  d.backend = store::Backend::Nccl;
  d.size = size;
  d.rank = rank;
  if (size == 1) d.members = {std::max(0, world_rank_from_env())};
  d.name = name ? name : "nccl";
  return comm_register(handle, std::move(d));
}

void bridge_unregister_comm(const void* handle) {
  if (comm_lookup(handle)) comm_unregister(handle);
}

void bridge_set_meta(const char* key, const char* value) { runtime_set_meta(key ? key : "", value ? value : ""); }
void bridge_warn(const char* what) { warn_once(what ? what : "NCCL profiler"); }

const RecorderBridge g_bridge = {
    kBridgeAbi,           sizeof(RecorderBridge), bridge_recording,         bridge_start,
    bridge_ticks,         bridge_intern,          bridge_emit,              bridge_current_call,
    bridge_creation_token, bridge_interposer_active, bridge_register_comm, bridge_unregister_comm,
    bridge_set_meta,      bridge_warn,
};

}  // namespace

const RecorderBridge* local_bridge() { return &g_bridge; }

void start_recording(const char* started_by, int nccl_rank, int nccl_size) {
  if (g_phase.load(std::memory_order_relaxed) != kIdle) return;
  StartInfo info;
  const int r = world_rank_from_env();
  const int n = world_size_from_env();
  info.world_rank = r >= 0 ? r : std::max(0, nccl_rank);
  info.world_size = n > 0 ? n : std::max(1, nccl_size);
  info.meta.emplace_back("trace_started_by", started_by);
  runtime_start(info);
}

CallScope::CallScope(std::uint32_t comm_slot, std::int64_t seq) : outermost_(t_call.depth++ == 0) {
  if (outermost_) {
    t_call.comm_slot = comm_slot;
    t_call.seq = seq;
  }
}

CallScope::~CallScope() { --t_call.depth; }

bool inside_nccl_call() { return t_call.depth > 0; }

CreationScope::CreationScope()
    : token_(g_next_token.fetch_add(1, std::memory_order_relaxed)), previous_(t_creation_token) {
  t_creation_token = token_;
  g_interposer_active.store(true, std::memory_order_relaxed);
}

CreationScope::~CreationScope() { t_creation_token = previous_; }

void CreationScope::created(std::uint32_t comm_slot) {
  if (!comm_slot) return;
  std::lock_guard lock(g_tokens_mutex);
  token_slots()[token_] = comm_slot;
}

std::uint32_t slot_of_token(std::uint64_t token) {
  std::lock_guard lock(g_tokens_mutex);
  auto it = token_slots().find(token);
  return it == token_slots().end() ? 0 : it->second;
}

NcclFunc nccl_func(store::Op op) {
  switch (op) {
    case store::Op::Bcast: return kBroadcast;
    case store::Op::Reduce: return kReduce;
    case store::Op::Allgather: return kAllGather;
    case store::Op::ReduceScatter: return kReduceScatter;
    case store::Op::Allreduce: return kAllReduce;
    case store::Op::Send: return kSend;
    case store::Op::Recv: return kRecv;
    default: return kNoFunc;
  }
}

std::int64_t take_nccl_seq(std::uint32_t comm_slot, NcclFunc func) {
  if (func > kAllReduce || comm_slot == 0 || comm_slot > kMaxCommunicators) return -1;
  return g_nccl_seq[comm_slot][func].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace collscope::tracer::nccl_profile

#ifdef COLLSCOPE_EXPORT_RECORDER_BRIDGE
namespace {
// The preload decodes the plugin's records whenever a plugin may record through it.
const bool g_sink_installed = (collscope::tracer::nccl_profile::install_sink(), true);
}  // namespace

// Found by the profiler plugin with dlsym(RTLD_DEFAULT): only the preload exports it.
extern "C" __attribute__((visibility("default"))) const collscope::tracer::nccl_profile::RecorderBridge*
collscope_recorder_bridge_v1() {
  return collscope::tracer::nccl_profile::local_bridge();
}
#endif
