// A stand-in for an NCCL job in tuning studies (CPU only): it loads NCCL_TUNER_PLUGIN as NCCL does, asks it for
// the allreduces of an nccl-tests sweep (4 KiB .. 16 MiB) on 8 ranks, takes what NCCL would take (the cheapest
// possible entry of the cost table after the plugin, its channel count, its chunk size), and prints the bus
// bandwidth a fixed model of a machine gives those choices, as nccl-tests prints it. The model's best: TREE/LL
// below 64 KiB; RING/SIMPLE above, fastest with 16 channels and 512 KiB chunks.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../../tracer/src/nccl/tuner/nccl/tuner.hpp"

using namespace collscope::nccl_tuner;

namespace {
void quiet(int, unsigned long, const char*, int, const char*, ...) {}
}  // namespace

int main() {
  const char* path = std::getenv("NCCL_TUNER_PLUGIN");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto* v6 = lib ? static_cast<TunerV6*>(dlsym(lib, "ncclTunerPlugin_v6")) : nullptr;
  void* ctx = nullptr;
  if (v6) v6->init(&ctx, 1, 8, 1, quiet, nullptr, nullptr);
  double bytes_total = 0, seconds = 0;
  for (std::size_t bytes = 4096; bytes <= (16u << 20); bytes *= 4) {
    constexpr int kAlgos = 7, kProtos = 3;
    std::vector<float> cost(kAlgos * kProtos, kIgnore);
    for (int a : {kAlgoTree, kAlgoRing})
      for (int p = 0; p < kProtos; ++p) cost[a * kProtos + p] = 10.0f + a + p;  // NCCL's own guess: tree/LL
    int channels = 8;
    float* rows = cost.data();
    if (v6) v6->getCollInfo(ctx, AllReduce, bytes, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels);
    int algo = -1, proto = -1;
    for (int a = 0; a < kAlgos; ++a)
      for (int p = 0; p < kProtos; ++p)
        if (cost[a * kProtos + p] >= 0 && (algo < 0 || cost[a * kProtos + p] < cost[algo * kProtos + proto])) algo = a, proto = p;
    std::size_t chunk = 128 << 10;
    if (v6 && v6->getChunkSize) v6->getChunkSize(ctx, AllReduce, bytes, algo, proto, channels, &chunk);
    double us;
    if (bytes < (64u << 10)) {
      us = algo == kAlgoTree && proto == kProtoLL ? 6 : algo == kAlgoTree ? 11 : proto == kProtoLL ? 9 : 14;
    } else {
      double gbps = algo == kAlgoRing && proto == kProtoSimple ? 80 : 40;
      gbps *= channels == 16 ? 1.0 : 0.7;
      gbps *= chunk == (512u << 10) ? 1.0 : 0.8;
      us = 5 + bytes / (gbps * 1e3);
    }
    bytes_total += bytes;
    seconds += us * 1e-6;
  }
  if (v6) v6->finalize(ctx);
  std::printf("# Avg bus bandwidth    : %.3f\n", bytes_total / seconds / 1e9);
  return 0;
}
