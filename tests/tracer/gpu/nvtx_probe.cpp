// A program with a known set of NVTX annotations, for the injection tests (runs without a GPU).
//   default domain: 3 x "step" push/pop, each containing "forward" and "backward" (nested, depth 1),
//                   "backward" containing "allreduce-wait" (depth 2) with an int64 payload and a colour
//   domain "collscope.test": 2 pushes with a registered string "registered-range", category 7 named "io",
//                   a double payload
//   start/end: "handoff" started on the main thread and ended on a worker thread; "worker-range" started and
//              ended on the worker
//   marks: "checkpoint" (default domain), "dmark" in the test domain
//   a wide-string push "wide-é" and a 60-character name (longer than the inline text area)
//   unbalanced: 2 extra pops on the main thread, 1 on the worker; one push never popped ("never-popped")
// With --mpi, calls MPI_Init/Finalize around everything (NVTX before MPI_Init is buffered).
// With --fork, a forked child outlives the parent, makes NVTX calls and exits through exit(): it must write nothing.
// With --loop N: N push/pop pairs of "tick" (for overhead measurements), nothing else.
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  bool use_mpi = false, do_fork = false;
  long loop = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mpi") == 0) use_mpi = true;
    if (std::strcmp(argv[i], "--fork") == 0) do_fork = true;
    if (std::strcmp(argv[i], "--loop") == 0 && i + 1 < argc) loop = std::atol(argv[++i]);
  }
  if (loop >= 0) {
    for (long i = 0; i < loop; ++i) {
      nvtxRangePushA("tick");
      nvtxRangePop();
    }
    std::printf("nvtx_probe: %ld pairs\n", loop);
    return 0;
  }
  nvtxMarkA("before-init");
  if (use_mpi) MPI_Init(&argc, &argv);

  nvtxDomainHandle_t domain = nvtxDomainCreateA("collscope.test");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered-range");
  nvtxDomainNameCategoryA(domain, 7, "io");

  for (int step = 0; step < 3; ++step) {
    nvtxRangePushA("step");
    nvtxRangePushA("forward");
    nvtxRangePop();
    nvtxRangePushA("backward");
    nvtxEventAttributes_t attr = {};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = 0xFF00FF00u;
    attr.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    attr.payload.llValue = 1000 + step;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "allreduce-wait";
    nvtxRangePushEx(&attr);
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
  }

  for (int i = 0; i < 2; ++i) {
    nvtxEventAttributes_t attr = {};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.category = 7;
    attr.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    attr.payload.dValue = 0.5 * (i + 1);
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = registered;
    nvtxDomainRangePushEx(domain, &attr);
    nvtxDomainRangePop(domain);
  }
  {
    nvtxEventAttributes_t attr = {};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "dmark";
    nvtxDomainMarkEx(domain, &attr);
  }

  nvtxRangeId_t handoff = nvtxRangeStartA("handoff");
  std::thread worker([handoff] {
    nvtxRangeId_t own = nvtxRangeStartA("worker-range");
    nvtxRangeEnd(own);
    nvtxRangeEnd(handoff);
    nvtxRangePop();  // unbalanced on this thread
  });
  worker.join();

  nvtxMarkA("checkpoint");
  nvtxRangePushW(L"wide-\u00e9");
  nvtxRangePop();
  const std::string long_name(60, 'L');
  nvtxRangePushA(long_name.c_str());
  nvtxRangePop();

  nvtxRangePop();  // unbalanced
  nvtxRangePop();  // unbalanced
  nvtxRangePushA("never-popped");

  if (do_fork) {
    // fork without exec on purpose (what the injection does in a forked child is the test), not the launcher.
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      // Outlives the parent, so that a file it wrote would replace the parent's (the test waits for it).
      usleep(300 * 1000);
      nvtxRangePushA("in-child");
      nvtxRangePop();
      nvtxMarkA("child-mark");
      std::exit(0);  // runs the exit handlers: the child must not open or replace any trace file
    }
  }
  if (use_mpi) MPI_Finalize();
  std::printf("nvtx_probe: done\n");
  return 0;
}
