#include "model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace collscope::sample {

std::vector<TensorSpec> resnet50_tensors(double scale) {
  std::vector<TensorSpec> tensors;
  auto add = [&](std::string name, std::size_t elements) {
    auto scaled = static_cast<std::size_t>(std::llround(static_cast<double>(elements) * scale));
    tensors.push_back({std::move(name), std::max<std::size_t>(1, scaled)});
  };
  auto add_conv_bn = [&](const std::string& prefix, const std::string& bn, std::size_t in,
                         std::size_t out, std::size_t kernel) {
    add(prefix + ".weight", out * in * kernel * kernel);
    add(bn + ".weight", out);
    add(bn + ".bias", out);
  };

  add_conv_bn("conv1", "bn1", 3, 64, 7);
  const std::size_t blocks_per_stage[] = {3, 4, 6, 3};
  std::size_t in_channels = 64;
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const std::size_t width = 64u << stage;
    const std::size_t out_channels = width * 4;  // bottleneck expansion
    for (std::size_t block = 0; block < blocks_per_stage[stage]; ++block) {
      const std::string prefix = fmt::format("layer{}.{}", stage + 1, block);
      add_conv_bn(prefix + ".conv1", prefix + ".bn1", in_channels, width, 1);
      add_conv_bn(prefix + ".conv2", prefix + ".bn2", width, width, 3);
      add_conv_bn(prefix + ".conv3", prefix + ".bn3", width, out_channels, 1);
      if (block == 0)
        add_conv_bn(prefix + ".downsample.0", prefix + ".downsample.1", in_channels, out_channels,
                    1);
      in_channels = out_channels;
    }
  }
  add("fc.weight", 2048 * 1000);
  add("fc.bias", 1000);
  return tensors;
}

}  // namespace collscope::sample
