#pragma once
// The NVTX recording path (nvtx_injection.cpp) for the preload's other annotation sources: ranges pushed here are
// the same events, paired by the same writer, as the job's nvtxRangePushA/nvtxRangePop on the default domain.
namespace collscope::tracer {

int nvtx_record_push(const char* name);  // returns the push level (0 = outermost)
int nvtx_record_pop();                   // returns the level left, -1 when nothing was open on this thread
// Opens this process's trace file now when nothing else will (no MPI in the job), as the first NVTX call does.
// Safe to call more than once.
void nvtx_start_runtime_if_alone();

}  // namespace collscope::tracer
