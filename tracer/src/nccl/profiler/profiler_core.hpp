#pragma once
// The profiler plugin's version-neutral core. plugin.cpp turns each API version's descriptors into the calls
// here; the core follows NCCL's documented event lifecycle per collective:
//   API call (v5: CollApi/P2pApi, inside the user's ncclAllReduce)  ->  task (Coll/P2p, at launch)
//     -> proxy operations and their steps (network transfers, on the proxy thread)
//     -> kernel channels (one per channel the kernel ran, with GPU start and stop timestamps)
// and hands one record per finished collective, and one per proxy operation, to the recorder (the preload's
// when it is loaded, else the plugin's own copy: nccl_profile_bridge.hpp).
//
// Memory: records and proxy operations come from fixed rings per communicator, claimed in turn; a slot still
// in use when its turn comes drops the new event (counted, never blocks NCCL). Handles given to NCCL point into
// the records, tagged by what they stand for.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "gpu_clock.hpp"
#include "nccl_profile_bridge.hpp"

namespace collscope::nccl_profiler {

using tracer::nccl_profile::RecorderBridge;

// What a descriptor says, whatever its version.
struct ApiCallInfo {
  const char* func = nullptr;
  std::uint64_t count = 0;
  const char* datatype = nullptr;
  int root = -1;
  void* stream = nullptr;
};
struct TaskInfo {
  bool p2p = false;
  std::int64_t nccl_seq = -1;  // coll.seqNumber; -1 for point-to-point
  const char* func = nullptr;
  const void* sendbuf = nullptr;
  const void* recvbuf = nullptr;
  std::uint64_t count = 0;
  int root = -1;
  int peer = -1;
  const char* datatype = nullptr;
  int channels = 0;
  int warps = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
};
struct ProxyOpInfo {
  pid_t pid = 0;
  int channel = 0;
  int peer = -1;
  int steps = 0;
  int chunk_bytes = 0;
  bool is_send = false;
};
struct CommInfo {
  int api_version = 0;
  std::uint64_t comm_hash = 0;  // v4 commHash, v5 commId: the same on every rank (0: unknown, v3)
  std::string name;
  int nranks = 0;  // 0: unknown (v3)
  int rank = -1;
  bool kernel_timestamps = true;  // v4+: kernel channels carry GPU timestamps
};

struct Context;

// The recorder the plugin writes through (the preload's, its own, or none when the preload is of another build).
const RecorderBridge* recorder();
// Which recorder: "preload" or "own"; "none" when disabled.
const char* recorder_kind();

// The activation mask the plugin asks NCCL for.
int activation_mask(int api_version);

Context* context_create(const CommInfo& info);
void context_finalize(Context* ctx);

// Each returns the handle for NCCL (nullptr: the event is not followed).
void* api_start(Context* ctx, const ApiCallInfo& call, bool p2p);
void* task_start(Context* ctx, void* parent, const TaskInfo& task);
void* proxy_op_start(Context* ctx, void* parent, const ProxyOpInfo& op);
void* proxy_step_start(void* parent_op, int step);
void* kernel_channel_start(Context* ctx, void* parent, std::uint64_t gpu_start_ns);
void event_stop(void* handle);
// A state change: proxy-step bytes (transSize), or a kernel channel's GPU stop timestamp (kKernelChStop).
void event_state(void* handle, int state, std::uint64_t trans_size, std::uint64_t gpu_stop_ns);

// Counters over every context (for the benchmark and tests).
struct CoreStats {
  std::uint64_t records = 0, dropped = 0, incomplete = 0, proxy_ops = 0;
};
CoreStats core_stats();

}  // namespace collscope::nccl_profiler
