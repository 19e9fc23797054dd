// Real floating-point work standing in for a layer's forward / backward pass.
#pragma once

#include <cstddef>

namespace collscope::sample {

// out[i] is updated `passes` times from weights[i] (one multiply-add per element per pass), tile by
// tile so that a tile stays in L1: the cost is passes x n multiply-adds, proportional to the
// layer's size and, since passes = batch x compute scale, to the batch size. Returns a checksum so
// the work cannot be optimised away.
float layer_compute(float* out, const float* weights, std::size_t n, long passes);

// Multiply-adds on a small private array until `milliseconds` of steady_clock time have passed
// (the straggler's extra work: real compute, not a sleep).
void busy_compute_for(double milliseconds);

}  // namespace collscope::sample
