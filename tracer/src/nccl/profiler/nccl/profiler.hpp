#pragma once
// The NCCL profiler plugin interface, versions 3 (NCCL 2.26), 4 (2.27) and 5 (2.28): the event types and states
// every version shares, and each version's structures from its own header (profiler_v3.hpp ...), as in NVIDIA's
// published ext-profiler/example/nccl/ (NCCL does not install these headers). Only layout and meaning matter.
#include <cstdint>

#include "common.hpp"
#include "profiler_v3.hpp"
#include "profiler_v4.hpp"
#include "profiler_v5.hpp"

namespace collscope::nccl_profiler {

// Event types (bits of the activation mask the plugin returns from init).
enum EventType : std::uint64_t {
  kGroup = 1 << 0,
  kColl = 1 << 1,
  kP2p = 1 << 2,
  kProxyOp = 1 << 3,
  kProxyStep = 1 << 4,
  kProxyCtrl = 1 << 5,
  kKernelCh = 1 << 6,
  kNetPlugin = 1 << 7,
  kGroupApi = 1 << 8,      // v5
  kCollApi = 1 << 9,       // v5
  kP2pApi = 1 << 10,       // v5
  kKernelLaunch = 1 << 11, // v5
};

// ncclProfilerEventState_t values the plugin reads.
enum EventState : int {
  kProxyStepSendGpuWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGpuWait = 12,
  kProxyStepSendPeerWait = 20,
  kKernelChStop = 22,
};

}  // namespace collscope::nccl_profiler
