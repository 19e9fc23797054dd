#include "compute.hpp"

#include <algorithm>
#include <array>
#include <chrono>

namespace collscope::sample {

float layer_compute(float* out, const float* weights, std::size_t n, long passes) {
  constexpr std::size_t kTileElements = 2048;  // 8 KiB of out + 8 KiB of weights: stays in L1
  for (std::size_t base = 0; base < n; base += kTileElements) {
    const std::size_t length = std::min(kTileElements, n - base);
    float* tile_out = out + base;
    const float* tile_weights = weights + base;
    for (long pass = 0; pass < passes; ++pass) {
      const float decay = 0.5f + 1.0f / static_cast<float>(pass + 4);
      for (std::size_t i = 0; i < length; ++i) tile_out[i] = tile_out[i] * decay + tile_weights[i];
    }
  }
  return n ? out[n / 2] : 0.0f;
}

void busy_compute_for(double milliseconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(milliseconds));
  std::array<float, 1024> work{};
  std::array<float, 1024> weights{};
  weights.fill(1e-3f);
  volatile float sink = 0.0f;
  while (Clock::now() < deadline) sink = sink + layer_compute(work.data(), weights.data(), 1024, 16);
}

}  // namespace collscope::sample
