// CPU cost per collective of the NCCL profiler plugin, on the threads NCCL calls it from. Drives N collectives
// through the v5 entry points in NCCL's order (API start/stop, task start/stop, per channel a kernel channel
// start/stop-state/stop; with --network also a send and a receive proxy operation of 4 steps per channel)
// into libcollscope-nccl-profiler.so, recording alone into a scratch run directory, and the same calls into a
// plugin whose entry points do nothing (what NCCL pays for calling any plugin): both in this run, best of 5.
// Usage: nccl_profiler_bench [--collectives 20000] [--channels 8] [--network] [--dir /tmp/collscope-profiler-bench]
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../src/nccl/profiler/nccl/profiler.hpp"

using namespace collscope::nccl_profiler;

namespace {

// The baseline plugin: every entry point returns at once.
int g_dummy_handle = 0;
Result noop_init(void** ctx, std::uint64_t, int* mask, const char*, int, int, int, Logger) {
  *ctx = &g_dummy_handle;
  *mask = ~0;
  return kSuccess;
}
Result noop_start(void*, void** h, EventDescrV5*) {
  *h = &g_dummy_handle;
  return kSuccess;
}
Result noop_stop(void*) { return kSuccess; }
Result noop_state(void*, int, EventStateArgsV5*) { return kSuccess; }
Result noop_finalize(void*) { return kSuccess; }
ProfilerV5 g_noop = {"noop", noop_init, noop_start, noop_stop, noop_state, noop_finalize};

// One run of `n` collectives; seconds on this thread.
double drive(ProfilerV5* p, std::uint64_t comm_id, int n, int channels, bool network) {
  void* ctx = nullptr;
  int mask = 0;
  p->init(&ctx, comm_id, &mask, "bench", 2, 8, 0, nullptr);
  std::vector<char> buffer(1 << 16);
  std::vector<void*> kernel(channels);
  const pid_t pid = getpid();
  auto start = [&](EventDescrV5& d) {
    void* h = nullptr;
    p->startEvent(ctx, &h, &d);
    return h;
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    EventDescrV5 api{};
    api.type = kCollApi;
    api.collApi = {"AllReduce", 16384, "ncclFloat32", 0, nullptr, false};
    void* a = start(api);
    p->stopEvent(a);
    EventDescrV5 coll{};
    coll.type = kColl;
    coll.parentObj = a;
    coll.coll = {static_cast<std::uint64_t>(i), "AllReduce", buffer.data(), buffer.data(), 16384, 0, "ncclFloat32",
                 static_cast<std::uint8_t>(channels), 16, "RING", "SIMPLE", nullptr};
    void* task = start(coll);
    p->stopEvent(task);
    if (network)
      for (int c = 0; c < channels; ++c)
        for (int is_send : {1, 0}) {
          EventDescrV5 op{};
          op.type = kProxyOp;
          op.parentObj = task;
          op.proxyOp = {pid, static_cast<std::uint8_t>(c), 1, 4, 65536, is_send};
          void* o = start(op);
          for (int s = 0; s < 4; ++s) {
            EventDescrV5 step{};
            step.type = kProxyStep;
            step.parentObj = o;
            step.proxyStep.step = s;
            void* sh = start(step);
            EventStateArgsV5 args{};
            args.proxyStep.transSize = 65536;
            p->recordEventState(sh, is_send ? kProxyStepSendWait : kProxyStepRecvWait, &args);
            p->stopEvent(sh);
          }
          p->stopEvent(o);
        }
    const std::uint64_t gpu = 1'000'000'000ull * 1000 + static_cast<std::uint64_t>(i) * 100'000;
    for (int c = 0; c < channels; ++c) {
      EventDescrV5 k{};
      k.type = kKernelCh;
      k.parentObj = task;
      k.kernelCh = {static_cast<std::uint8_t>(c), gpu};
      kernel[c] = start(k);
    }
    for (int c = 0; c < channels; ++c) {
      EventStateArgsV5 args{};
      args.kernelCh.pTimer = gpu + 50'000;
      p->recordEventState(kernel[c], kKernelChStop, &args);
      p->stopEvent(kernel[c]);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p->finalize(ctx);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 20000, channels = 8;
  bool network = false;
  std::string dir = "/tmp/collscope-profiler-bench";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--collectives" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--channels" && i + 1 < argc) channels = std::atoi(argv[++i]);
    else if (a == "--network") network = true;
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: nccl_profiler_bench [--collectives N] [--channels C] [--network] [--dir DIR]\n");
      return 2;
    }
  }
  std::filesystem::remove_all(dir);
  setenv("COLLSCOPE_RUN_DIR", dir.c_str(), 1);
  void* lib = dlopen(COLLSCOPE_BENCH_PROFILER, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "nccl_profiler_bench: %s\n", dlerror());
    return 2;
  }
  auto* plugin = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  std::vector<double> base, traced;
  for (int round = 0; round < 5; ++round) {
    base.push_back(drive(&g_noop, 1, n, channels, network));
    traced.push_back(drive(plugin, 100 + round, n, channels, network));
    // Let the writer thread drain between rounds (2 cores: it competes with the driving thread otherwise).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const double b = *std::min_element(base.begin(), base.end()) / n * 1e9;
  const double t = *std::min_element(traced.begin(), traced.end()) / n * 1e9;
  const int calls = 4 + 3 * channels + (network ? channels * 2 * (2 + 4 * 3) : 0);
  std::printf("nccl_profiler_bench: %d collectives x 5 rounds, %d channels%s, %d plugin calls per collective\n", n,
              channels, network ? ", network (2 proxy ops x 4 steps per channel)" : "", calls);
  std::printf("  no-op plugin (baseline): %8.1f ns per collective\n", b);
  std::printf("  collscope profiler:      %8.1f ns per collective (+%.1f ns, %.1fx the baseline)\n", t, t - b, t / b);
  return 0;
}
