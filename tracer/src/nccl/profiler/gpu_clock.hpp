#pragma once
// NCCL's kernel-channel timestamps are the GPU's globaltimer (ns, its own origin). The proxy thread reports each
// one after it saw it (it polls the kernel's counters), so host time at the report minus the GPU timestamp is an
// upper bound of the offset between the clocks; the smallest such difference seen is the best estimate, off by
// the shortest polling delay (microseconds). Durations on the GPU clock are exact whatever the offset.
#include <atomic>
#include <cstdint>
#include <limits>

namespace collscope::nccl_profiler {

class GpuClockMapper {
 public:
  // A GPU timestamp (ns) reported at host time `host_ns` (CLOCK_MONOTONIC). Thread-safe.
  void sample(std::uint64_t gpu_ns, std::int64_t host_ns) {
    if (gpu_ns == 0) return;
    const std::int64_t offset = host_ns - static_cast<std::int64_t>(gpu_ns);
    std::int64_t seen = offset_.load(std::memory_order_relaxed);
    while (offset < seen && !offset_.compare_exchange_weak(seen, offset, std::memory_order_relaxed)) {
    }
  }
  bool calibrated() const { return offset_.load(std::memory_order_relaxed) != kNone; }
  // CLOCK_MONOTONIC ns of a GPU timestamp; 0 before the first sample.
  std::int64_t to_host_ns(std::uint64_t gpu_ns) const {
    const std::int64_t offset = offset_.load(std::memory_order_relaxed);
    return offset == kNone || gpu_ns == 0 ? 0 : static_cast<std::int64_t>(gpu_ns) + offset;
  }

 private:
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  std::atomic<std::int64_t> offset_{kNone};
};

}  // namespace collscope::nccl_profiler
