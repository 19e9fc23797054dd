/* Optional C API for jobs that pack tensors into a fusion buffer themselves (as Horovod does).
 * Without the collscope preload these calls do nothing and cost one predictable branch: the weak
 * symbol below resolves to the preload's definition only when libcollscope-preload.so is loaded.
 *
 *   collscope_fusion_pack(buffer, offset, bytes);   // after copying one tensor into buffer+offset
 *   MPI_Allreduce(MPI_IN_PLACE, buffer, ...);       // the collective that reads the buffer
 */
#ifndef COLLSCOPE_TRACER_FUSION_H
#define COLLSCOPE_TRACER_FUSION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libcollscope-preload.so. */
void collscope_fusion_pack_impl(const void* buffer, size_t offset, size_t bytes) __attribute__((weak));

static inline void collscope_fusion_pack(const void* buffer, size_t offset, size_t bytes) {
  if (collscope_fusion_pack_impl) collscope_fusion_pack_impl(buffer, offset, bytes);
}

#ifdef __cplusplus
}
#endif

#endif
