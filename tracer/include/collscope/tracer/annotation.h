/* The annotation entry point of libcollscope-preload.so, for runtimes that cannot use NVTX's injection (a Python
 * job without CUDA: collscope's sitecustomize reaches it through ctypes). Ranges pushed here are recorded exactly
 * as NVTX nvtxRangePushA/nvtxRangePop ranges of the default domain: one nvtx_ranges row each.
 *
 *   const collscope_annotation_v1_t* a = collscope_annotation_v1();   // looked up with dlsym; NULL if absent
 *   a->range_push("step"); ... a->range_pop();                          // on the calling thread
 *
 * Versioned: a later, incompatible table gets a new entry point (collscope_annotation_v2); fields are only ever
 * appended to v1, and `size` says how many bytes of the table the preload filled in.
 * The first range pushed starts the recorder in a process that has no MPI (as the first NVTX call does): that
 * process's rank file is opened then, with the launcher's rank (RANK, OMPI_..., PMI_...). In a process that has
 * MPI, MPI_Init opens it, and ranges pushed before are kept.
 */
#ifndef COLLSCOPE_TRACER_ANNOTATION_H
#define COLLSCOPE_TRACER_ANNOTATION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct collscope_annotation_v1_t {
  uint32_t version; /* 1 */
  uint32_t size;    /* sizeof(collscope_annotation_v1_t) as the preload was built */
  /* Opens a range named `name` (UTF-8, copied) on the calling thread; returns its nesting level (0 = outermost). */
  int (*range_push)(const char* name);
  /* Closes the calling thread's innermost open range; returns the level left, or -1 when none was open. */
  int (*range_pop)(void);
  /* Opens this process's rank file now, as world rank `rank` of `size`, if it has no MPI and no file yet (rank < 0:
   * the launcher's environment, as range_push does). For processes whose rank no launcher variable names
   * (torch.multiprocessing.spawn workers: the rank is torch.distributed's). */
  void (*start)(int rank, int size);
  /* Records meta `key` = `value` in this process's rank file (both UTF-8, copied; a later value replaces an
   * earlier one). Not for the hot path: it takes a lock. The sitecustomize writes python.version,
   * python.torch_version and python.horovod_version (read by the analyzer for Horovod's defaults). */
  void (*set_meta)(const char* key, const char* value);
} collscope_annotation_v1_t;

/* Defined by libcollscope-preload.so (where it was built with NVTX support). */
const collscope_annotation_v1_t* collscope_annotation_v1(void);

#ifdef __cplusplus
}
#endif

#endif
