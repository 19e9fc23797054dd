#pragma once
// What the NCCL interposer needs from the CUPTI collector (cupti_collector.cpp). All calls are cheap no-ops
// until CUPTI is active, so the interposer calls them unconditionally.
#include <cstdint>

namespace collscope::tracer::gpu {

// Opens CUPTI (dlopen) once, if this process has CUDA (cuInit or cudaGetDeviceCount resolve in it). Without a
// driver or device it records one meta line (gpu_capture) and stays inactive. Safe to call repeatedly.
void ensure_cupti();
bool cupti_active();

// Brackets an NCCL call (or the GroupEnd that launches a group) with its correlation id (collectives.correlation):
// the kernels, copies and memsets this thread launches in between are tied to its collectives rows. Not nested.
void push_correlation(std::uint64_t id);
void pop_correlation();

}  // namespace collscope::tracer::gpu
