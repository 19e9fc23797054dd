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

int range_push(const char* name) {
  // The first range of a process whose trace file is not open yet: a process without MPI has nothing else that
  // would open it. Not at collscope_annotation_v1(): a Python job gets the table when it imports torch, often
  // before it loads and initialises MPI (mpi4py, Horovod), and MPI_Init should be what starts an MPI rank's file.
  if (g_phase.load(std::memory_order_relaxed) == kIdle && !g_attached.exchange(true)) nvtx::start_runtime_if_alone();
  return nvtx::push_name(name);
}
int range_pop() { return nvtx::pop(0); }

void start(int rank, int size) {
  if (g_phase.load(std::memory_order_relaxed) == kIdle && !g_attached.exchange(true))
    nvtx::start_runtime_if_alone(rank, size);
}

constexpr collscope_annotation_v1_t kTable = {1, sizeof(collscope_annotation_v1_t), &range_push, &range_pop, &start};

}  // namespace

extern "C" __attribute__((visibility("default"))) const collscope_annotation_v1_t* collscope_annotation_v1(void) {
  return &kTable;
}
