#pragma once
// Schema 1.2: what NCCL's profiler plugin and CUPTI's correlation ids add to a collective (docs/trace-format.md).
// Rows of three tables: nccl_profile (one per collective NCCL's profiler reported), nccl_proxy_ops (the
// network transfers of a collective, where it used a network) and collective_gpu_work (the GPU activities an
// NCCL call launched, tied by CUPTI correlation id, whatever the kernel is named).
#include <cstdint>

namespace collscope::store {

// One collective (or point-to-point call) as NCCL's profiler plugin saw it.
struct NcclProfileRow {
  std::int64_t collective = 0;  // collectives.id
  std::int64_t algorithm = 0;   // strings.id: "RING", "TREE", "NVLS", ... ("" for point-to-point)
  std::int64_t protocol = 0;    // strings.id: "LL", "LL128", "SIMPLE" ("" for point-to-point)
  std::int32_t channels = 0;    // channels NCCL planned for it
  std::int32_t warps = 0;       // warps per channel (0 for point-to-point)
  std::int32_t kernel_channels = 0;  // kernel-channel events with both GPU timestamps (0: no GPU times)
  std::int64_t nccl_seq = -1;   // NCCL's own sequence number of this function on the communicator, -1 unknown
  std::int32_t proxy_ops = 0;   // network transfers (nccl_proxy_ops rows)
  std::int32_t api_version = 0; // profiler plugin API version NCCL used (3, 4, 5)
};

// One proxy operation: the transfers of one channel to or from one peer over the network.
struct NcclProxyOpRow {
  std::int64_t id = 0;
  std::int64_t collective = 0;  // collectives.id
  std::int32_t channel = 0;
  std::int32_t peer = 0;        // rank in the communicator
  bool is_send = false;
  std::int32_t steps = 0;       // steps NCCL planned
  std::int32_t steps_done = 0;  // steps that completed
  std::int64_t chunk_bytes = 0; // bytes per step
  std::int64_t bytes = 0;       // bytes transferred (largest size NCCL reported for a step of it)
  std::int64_t start_ns = 0;    // CLOCK_MONOTONIC: the proxy thread took it up
  std::int64_t end_ns = 0;      // it completed
};

// A GPU activity (kernel, copy, memset) launched inside an NCCL call, tied by CUPTI correlation id.
struct CollectiveGpuWorkRow {
  std::int64_t collective = 0;  // collectives.id
  std::int64_t activity = 0;    // gpu_activities.id
};

}  // namespace collscope::store
