// collscope_annotation_v1() (collscope/tracer/annotation.h): the annotation table for jobs that cannot reach the
// preload through NVTX injection, such as a CPU-only Python job annotated by collscope's sitecustomize. The
// table's push and pop are the NVTX recording path itself (nvtx_recording.hpp, default domain): one TSC read and
// one ring record each, no system call, no allocation for names up to the inline text size (51 bytes).
#include <collscope/tracer/annotation.h>

#include <atomic>

#include "nvtx_recording.hpp"
#include "runtime.hpp"

using namespace collscope::tracer;

namespace {

std::atomic<bool> g_attached{false};

// Opens the file of a process that has no MPI and no file yet (rank < 0: the launcher's environment's).
void start(int rank, int size) {
  if (g_phase.load(std::memory_order_relaxed) == kIdle && !g_attached.exchange(true))
    nvtx::start_runtime_if_alone(rank, size);
}

int range_push(const char* name) {
  // The first range opens the file, if start() has not: not collscope_annotation_v1(), which a Python job calls when
  // it imports torch, often before it loads and initialises MPI (mpi4py, Horovod): MPI_Init should open an MPI
  // rank's file.
  start(-1, -1);
  return nvtx::push_name(name);
}
int range_pop() { return nvtx::pop(0); }

void set_meta(const char* key, const char* value) {
  if (key && *key && value) runtime_set_meta(key, value);
}

constexpr collscope_annotation_v1_t kTable = {1, sizeof(collscope_annotation_v1_t), &range_push, &range_pop, &start,
                                              &set_meta};

}  // namespace

extern "C" __attribute__((visibility("default"))) const collscope_annotation_v1_t* collscope_annotation_v1(void) {
  return &kTable;
}
