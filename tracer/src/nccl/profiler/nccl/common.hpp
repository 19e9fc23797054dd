#pragma once
// What every version of the NCCL profiler plugin interface shares: the result codes and the logger NCCL passes
// (NCCL's ext-profiler/example/nccl/err.h and common.h). Only layout and meaning matter: enums travel as int,
// the logger as a plain function pointer.
namespace collscope::nccl_profiler {

using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

}  // namespace collscope::nccl_profiler
