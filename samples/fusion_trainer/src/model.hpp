// The model: a ResNet-50-like list of gradient tensors, in forward order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collscope::sample {

struct TensorSpec {
  std::string name;     // e.g. "layer3.2.conv2.weight"
  std::size_t elements;  // fp32 elements
};

// ResNet-50 (torchvision layout: conv + batch-norm weight/bias, bottlenecks [3, 4, 6, 3],
// fc 2048x1000): 161 tensors, 25 557 032 parameters at scale 1. Every tensor's element count is
// multiplied by `scale` (at least 1 element), so small scales keep the same count and mix of sizes.
std::vector<TensorSpec> resnet50_tensors(double scale);

}  // namespace collscope::sample
