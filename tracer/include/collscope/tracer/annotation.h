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
  /* Appended (size >= offsetof the field + its size): torch.distributed process groups whose backend neither the
   * MPI nor the NCCL interposer sees (gloo, custom backends), recorded by the sitecustomize. */
  /* The tracer's timestamp now (ticks, converted by the writer): for the two times collective() takes. */
  uint64_t (*now)(void);
  /* Registers a process group as a communicator: `key` identical on every member (the sitecustomize hashes the
   * group's ranks and its creation order), `backend` "gloo" (anything else: a custom torch backend), this
   * process's `rank` in it, its `size`, `members` the world ranks in group rank order (size entries), `name` as
   * people know it ("default group", "new_group 1"). Returns the communicator's handle (>= 1), 0 when the table
   * of communicators is full or the process records nothing. Takes a lock: once per group. */
  uint32_t (*comm_register)(uint64_t key, const char* backend, int rank, int size, const int32_t* members,
                            const char* name);
  /* Records one operation on communicator `comm`: `op` a name of the ops table ("allreduce", "bcast",
   * "allgather", "reduce_scatter", "alltoall", "barrier", "reduce", "gather", "scatter", "send", "recv", "isend",
   * "irecv", ...; the non-blocking form, "iallreduce", for async work), `count` elements and `bytes` of this rank's payload, `datatype` ("torch.float32"), `peer_or_root`
   * the root of a rooted collective or the group rank of a send/receive's peer (-1: none), `issued` when the call
   * was made and `returned` when it returned (both from now()), `completed` when its work completed (async work:
   * later; equal to `returned` for a blocking call), `status` 0 for success. Collectives are numbered per
   * communicator in call order (the same on every member, as torch.distributed requires). Call it in issue order:
   * an async operation's number is taken by collective_issue() then. */
  int64_t (*collective_issue)(uint32_t comm, const char* op);
  void (*collective)(uint32_t comm, int64_t number, const char* op, int64_t count, int64_t bytes, const char* datatype,
                     int peer_or_root, uint64_t issued, uint64_t returned, uint64_t completed, int status);
  /* Appended: gloo groups' allreduces and broadcasts made from C++ (DDP's buckets, its parameters and buffers)
   * are recorded from gloo itself, on a communicator beside the group's. One the caller records itself through
   * collective() claims its buffer (the address of its tensor's data) first, so that it is not recorded twice:
   * claim_buffer returns 1 when claimed, 0 when the group's calls are not recorded from gloo (nothing to claim).
   * The allreduce or broadcast that buffer goes into takes the claim; release_buffer drops a claim none took (the
   * call failed or went another way). */
  int (*claim_buffer)(uint32_t comm, uint64_t address);
  void (*release_buffer)(uint64_t address);
} collscope_annotation_v1_t;

/* Defined by libcollscope-preload.so (where it was built with NVTX support). */
const collscope_annotation_v1_t* collscope_annotation_v1(void);

#ifdef __cplusplus
}
#endif

#endif
