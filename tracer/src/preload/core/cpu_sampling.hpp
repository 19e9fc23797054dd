#pragma once
// Where a rank's threads spend their time, so that the analyzer can tell why a rank is late: more work or a
// slower CPU (on a CPU), waiting for a CPU (run queue), or neither (sleeping, blocked). The thread reads its own
// scheduler counters (/proc/thread-self/schedstat, one pread on a descriptor it keeps) at the entry and exit of
// MPI calls and at NVTX pushes and pops (step and phase boundaries), at most once per COLLSCOPE_CPU_SAMPLE_US (default 1000 us) on each thread; each read is one
// CpuSample event (table cpu_samples). Calls between two reads cost one comparison of ticks.
#include <atomic>
#include <cstdint>

#include "core/clock.hpp"

namespace collscope::tracer {

// Ticks between two samples of one thread; 0: sampling off (set once by init_cpu_sampling).
// Set when the trace starts, while other threads may already record: atomic (a plain load on x86).
extern std::atomic<std::uint64_t> g_cpu_sample_gap_ticks;
extern __attribute__((tls_model("initial-exec"))) constinit thread_local std::uint64_t t_last_cpu_sample;

enum class CpuSampleSite : std::uint8_t { CallEntry = 0, CallExit = 1, RangeBoundary = 2 };  // RangeBoundary: NVTX push/pop

void take_cpu_sample(std::uint64_t now_ticks, CpuSampleSite site);

// `now_ticks` is the call's own timestamp (its t0 or t1): no clock is read here.
inline void maybe_sample_cpu(std::uint64_t now_ticks, CpuSampleSite site) {
  const std::uint64_t gap = g_cpu_sample_gap_ticks.load(std::memory_order_relaxed);
  if (gap == 0 || now_ticks - t_last_cpu_sample < gap) return;
  take_cpu_sample(now_ticks, site);
}

// Reads COLLSCOPE_CPU_SAMPLE_US (0: off), measures the tick rate, registers the writer's handler and says in meta
// `cpu_sampling` what is sampled. Called once when the trace starts.
void init_cpu_sampling();

}  // namespace collscope::tracer
