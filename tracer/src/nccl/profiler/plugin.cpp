// libcollscope-nccl-profiler.so: an NCCL profiler plugin (NCCL_PROFILER_PLUGIN=libcollscope-nccl-profiler.so, or
// `collscope trace --nccl-profiler`). It exports the plugin interface versions 5, 4 and 3; NCCL takes the newest
// it knows (2.28 looks up ncclProfiler_v5, then v4, v3 ...). Each version's descriptors are turned into the
// version-neutral calls of profiler_core.hpp. Like the tracer it never stops the job: every entry point returns
// success, and anything it cannot follow it leaves alone.
#include <cstdio>
#include <string>

#include "nccl/profiler.hpp"
#include "profiler_core.hpp"

namespace collscope::nccl_profiler {
namespace {

constexpr int kLogInfo = 3;
constexpr unsigned long kLogInit = 1;

void announce(Logger log, int version) {
  static bool said = false;
  if (said || !log) return;
  said = true;
  log(kLogInfo, kLogInit, __FILE__, __LINE__, "collscope profiler: API v%d, recording through %s", version,
      std::string(recorder_kind()) == "preload" ? "the collscope preload" : "its own recorder");
}

Result init_common(void** context, int* mask, const CommInfo& info, Logger log) {
  *context = nullptr;
  *mask = 0;
  try {
    Context* ctx = context_create(info);
    if (!ctx) return kSuccess;  // not recording (or a preload of another build): NCCL sends us nothing
    *context = ctx;
    *mask = activation_mask(info.api_version);
    announce(log, info.api_version);
    return kSuccess;
  } catch (...) {
    return kSuccess;
  }
}

Result finalize(void* context) {
  context_finalize(static_cast<Context*>(context));
  return kSuccess;
}

Result stop_event(void* handle) {
  event_stop(handle);
  return kSuccess;
}

// ---- v5 ----

Result init_v5(void** context, std::uint64_t comm_id, int* mask, const char* name, int, int nranks, int rank,
               Logger log) {
  return init_common(context, mask, {5, comm_id, name ? name : "", nranks, rank, true}, log);
}

// The events v5 and v4 describe alike (v4 lacks v5's API events; a v4 task's parent is the group).
template <typename Descr>
void* start_task_or_below(Context* ctx, Descr* d, void* task_parent) {
  switch (d->type) {
    case kColl:
      return task_start(ctx, task_parent,
                        {false, static_cast<std::int64_t>(d->coll.seqNumber), d->coll.func, d->coll.sendBuff,
                         d->coll.recvBuff, d->coll.count, d->coll.root, -1, d->coll.datatype, d->coll.nChannels,
                         d->coll.nWarps, d->coll.algo, d->coll.proto});
    case kP2p:
      return task_start(ctx, task_parent,
                        {true, -1, d->p2p.func, d->p2p.buff, d->p2p.buff, d->p2p.count, -1, d->p2p.peer,
                         d->p2p.datatype, d->p2p.nChannels, 0, nullptr, nullptr});
    case kProxyOp:
      return proxy_op_start(ctx, d->parentObj,
                            {d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps,
                             d->proxyOp.chunkSize, d->proxyOp.isSend != 0});
    case kProxyStep:
      return proxy_step_start(d->parentObj, d->proxyStep.step);
    case kKernelCh:
      return kernel_channel_start(ctx, d->parentObj, d->kernelCh.pTimer);
    default:  // group, group API, kernel launch, proxy control, network plugin: not followed
      return nullptr;
  }
}

Result start_v5(void* context, void** handle, EventDescrV5* d) {
  *handle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (!ctx || !d) return kSuccess;
  if (d->type == kCollApi)
    *handle = api_start(ctx, {d->collApi.func, d->collApi.count, d->collApi.datatype, d->collApi.root,
                              d->collApi.stream}, false);
  else if (d->type == kP2pApi)
    *handle = api_start(ctx, {d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype, -1, d->p2pApi.stream}, true);
  else
    *handle = start_task_or_below(ctx, d, d->parentObj);  // a v5 task's parent is its API event
  return kSuccess;
}

Result state_v5(void* handle, int state, EventStateArgsV5* args) {
  if (!args) return kSuccess;
  if (state == kKernelChStop) event_state(handle, state, 0, args->kernelCh.pTimer);
  else event_state(handle, state, args->proxyStep.transSize, 0);
  return kSuccess;
}

// ---- v4 ----

Result init_v4(void** context, int* mask, const char* name, std::uint64_t comm_hash, int, int nranks, int rank,
               Logger log) {
  return init_common(context, mask, {4, comm_hash, name ? name : "", nranks, rank, true}, log);
}

Result start_v4(void* context, void** handle, EventDescrV4* d) {
  *handle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (ctx && d) *handle = start_task_or_below(ctx, d, nullptr);  // the group parent is not followed
  return kSuccess;
}

Result state_v4(void* handle, int state, EventStateArgsV4* args) { return state_v5(handle, state, args); }

// ---- v3 ----

Result init_v3(void** context, int* mask) {
  // v3 tells nothing about the communicator; its kernel channels carry no GPU timestamps.
  return init_common(context, mask, {3, 0, "", 0, -1, false}, nullptr);
}

Result start_v3(void* context, void** handle, EventDescrV3* d) {
  *handle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (!ctx || !d) return kSuccess;
  switch (d->type) {
    case kColl:
      *handle = task_start(ctx, nullptr,
                           {false, static_cast<std::int64_t>(d->coll.seqNumber), d->coll.func, d->coll.sendBuff,
                            d->coll.recvBuff, d->coll.count, d->coll.root, -1, d->coll.datatype,
                            d->coll.nMaxChannels, d->coll.nWarps, d->coll.algo, d->coll.proto});
      break;
    case kP2p:
      // v3 does not say how many channels a point-to-point call used: it completes without kernel channels.
      *handle = task_start(ctx, nullptr,
                           {true, -1, d->p2p.func, d->p2p.buff, d->p2p.buff, d->p2p.count, -1, d->p2p.peer,
                            d->p2p.datatype, 0, 0, nullptr, nullptr});
      break;
    case kProxyOp:
      *handle = proxy_op_start(ctx, d->parentObj,
                               {d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps,
                                d->proxyOp.chunkSize, d->proxyOp.isSend != 0});
      break;
    case kProxyStep:
      *handle = proxy_step_start(d->parentObj, d->proxyStep.step);
      break;
    case kKernelCh:
      *handle = kernel_channel_start(ctx, d->parentObj, 0);
      break;
    default:
      break;
  }
  return kSuccess;
}

Result state_v3(void* handle, int state, EventStateArgsV3* args) {
  if (args) event_state(handle, state, args->proxyOp.transSize, 0);
  return kSuccess;
}

}  // namespace
}  // namespace collscope::nccl_profiler

using namespace collscope::nccl_profiler;
extern "C" {
__attribute__((visibility("default"))) ProfilerV5 ncclProfiler_v5 = {"collscope", init_v5, start_v5, stop_event,
                                                                     state_v5, finalize};
__attribute__((visibility("default"))) ProfilerV4 ncclProfiler_v4 = {"collscope", init_v4, start_v4, stop_event,
                                                                     state_v4, finalize};
__attribute__((visibility("default"))) ProfilerV3 ncclProfiler_v3 = {"collscope", init_v3, start_v3, stop_event,
                                                                     state_v3, finalize};
}
