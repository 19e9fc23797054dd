#pragma once
// What every version of the NCCL tuner plugin interface shares: the result codes and the logger NCCL passes
// (NCCL's ext-tuner/example/nccl/err.h and common.h). Only layout and meaning matter: enums are passed as int.
namespace collscope::nccl_tuner {

using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;

// ncclDebugLogger_t; level 2 = WARN, 3 = INFO; flags 64 = NCCL_TUNING.
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
inline constexpr int kLogWarn = 2, kLogInfo = 3;
inline constexpr unsigned long kLogTuning = 64;

}  // namespace collscope::nccl_tuner
