/* NVTX ranges for a Python job through ctypes, as a job that marks its own steps does (train_loop.py with
 * COLLSCOPE_TEST_NVTX_SHIM set; python_annotation_test). The NVTX 3 headers of the CUDA toolkit: under collscope
 * the calls reach the preload's NVTX injection. */
#include <nvtx3/nvToolsExt.h>

int shim_push(const char* name) { return nvtxRangePushA(name); }
int shim_pop(void) { return nvtxRangePop(); }
