#include "fusion_engine.hpp"

#include "compute.hpp"

#include <collscope/tracer/fusion.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace collscope::sample {
namespace {

constexpr std::size_t kBitsPerWord = 64;

}  // namespace

FusionEngine::FusionEngine(std::vector<std::span<float>> gradients, FusionConfig config,
                           MPI_Comm horovod_comm, CollectiveCaller& caller)
    : gradients_(std::move(gradients)),
      config_(config),
      comm_(horovod_comm),
      caller_(caller),
      fusion_buffer_(new float[(config.threshold_bytes + sizeof(float) - 1) / sizeof(float)]),
      ready_(gradients_.size(), false),
      reduced_(gradients_.size(), false) {
  int world_size = 1;
  MPI_Comm_size(comm_, &world_size);
  world_size_inverse_ = 1.0f / static_cast<float>(world_size);
  thread_ = std::thread([this] { run(); });
}

FusionEngine::~FusionEngine() {
  if (thread_.joinable()) stop();
}

void FusionEngine::begin_step() {
  std::lock_guard lock(mutex_);
  ready_.assign(ready_.size(), false);
  reduced_.assign(reduced_.size(), false);
  reduced_count_ = 0;
}

void FusionEngine::mark_ready(std::size_t index) {
  std::lock_guard lock(mutex_);
  ready_[index] = true;
}

void FusionEngine::wait_all_reduced() {
  std::unique_lock lock(mutex_);
  reduced_changed_.wait(lock, [this] { return reduced_count_ == gradients_.size(); });
}

void FusionEngine::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  thread_.join();
}

FusionCounters FusionEngine::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void FusionEngine::run() {
  using Clock = std::chrono::steady_clock;
  const auto cycle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(config_.cycle_time_ms));
  const std::size_t mask_words = (gradients_.size() + kBitsPerWord - 1) / kBitsPerWord;
  // Last word: all ones when this rank wants to stop; MPI_BAND makes it "all ranks want to stop".
  std::vector<std::uint64_t> local(mask_words + 1), agreed(mask_words + 1);
  std::vector<std::size_t> agreed_tensors;
  // Cycles start at whole multiples of the cycle time of steady_clock (CLOCK_MONOTONIC, shared by
  // all ranks of one host), so the ranks' threads wake together and the negotiation does not spin
  // for a partner that is still asleep. After an overrun the next boundary is taken, no burst.
  const auto next_boundary = [cycle] {
    const auto now = Clock::now().time_since_epoch();
    return Clock::time_point((now / cycle + 1) * cycle);
  };

  for (;;) {
    std::this_thread::sleep_until(next_boundary());

    busy_compute_for(config_.cycle_overhead_us / 1000.0);
    std::fill(local.begin(), local.end(), 0);
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < gradients_.size(); ++i)
        if (ready_[i] && !reduced_[i]) local[i / kBitsPerWord] |= std::uint64_t{1} << (i % kBitsPerWord);
      if (stop_requested_) local[mask_words] = ~std::uint64_t{0};
      ++counters_.cycles;
    }
    // Negotiation: a tensor is reduced only once it is ready on every rank, so all ranks issue
    // the same allreduces in the same order.
    caller_.allreduce(local.data(), agreed.data(), static_cast<int>(agreed.size()),
                      MPI_UINT64_T, MPI_BAND, comm_, CommunicatorRole::horovod);
    if (agreed[mask_words] == ~std::uint64_t{0}) return;

    // Backward order (last layer first), as the gradients became ready: deterministic on all ranks.
    agreed_tensors.clear();
    for (std::size_t i = gradients_.size(); i-- > 0;)
      if (agreed[i / kBitsPerWord] >> (i % kBitsPerWord) & 1) agreed_tensors.push_back(i);
    if (!agreed_tensors.empty()) reduce_agreed(agreed_tensors);
  }
}

void FusionEngine::reduce_agreed(const std::vector<std::size_t>& agreed) {
  std::vector<std::size_t> packed;
  std::size_t fill_bytes = 0;
  for (std::size_t index : agreed) {
    std::span<float> gradient = gradients_[index];
    const std::size_t bytes = gradient.size_bytes();
    if (bytes > config_.threshold_bytes) {
      // Too large to fuse: reduced alone, in place in its own buffer.
      busy_compute_for(config_.op_overhead_us / 1000.0);
      caller_.allreduce(MPI_IN_PLACE, gradient.data(), static_cast<int>(gradient.size()),
                        MPI_FLOAT, MPI_SUM, comm_, CommunicatorRole::horovod);
      for (float& value : gradient) value *= world_size_inverse_;
      std::lock_guard lock(mutex_);
      ++counters_.unfused_allreduces;
      counters_.gradient_bytes += bytes;
      reduced_[index] = true;
      ++reduced_count_;
      reduced_changed_.notify_all();
      continue;
    }
    if (fill_bytes + bytes > config_.threshold_bytes) {
      flush_fusion_buffer(packed, fill_bytes);
      fill_bytes = 0;
    }
    auto* destination = reinterpret_cast<unsigned char*>(fusion_buffer_.get()) + fill_bytes;
    std::memcpy(destination, gradient.data(), bytes);
    collscope_fusion_pack(fusion_buffer_.get(), fill_bytes, bytes);
    fill_bytes += bytes;
    packed.push_back(index);
  }
  if (!packed.empty()) flush_fusion_buffer(packed, fill_bytes);
}

void FusionEngine::flush_fusion_buffer(std::vector<std::size_t>& packed, std::size_t fill_bytes) {
  busy_compute_for(config_.op_overhead_us / 1000.0);
  caller_.allreduce(MPI_IN_PLACE, fusion_buffer_.get(),
                    static_cast<int>(fill_bytes / sizeof(float)), MPI_FLOAT, MPI_SUM, comm_,
                    CommunicatorRole::horovod);
  // Unpack, averaging over ranks.
  const float* source = fusion_buffer_.get();
  for (std::size_t index : packed) {
    std::span<float> gradient = gradients_[index];
    for (std::size_t i = 0; i < gradient.size(); ++i) gradient[i] = source[i] * world_size_inverse_;
    source += gradient.size();
  }
  std::lock_guard lock(mutex_);
  ++counters_.fused_allreduces;
  counters_.gradient_bytes += fill_bytes;
  counters_.max_fusion_fill_bytes = std::max<std::uint64_t>(counters_.max_fusion_fill_bytes, fill_bytes);
  for (std::size_t index : packed) reduced_[index] = true;
  reduced_count_ += packed.size();
  reduced_changed_.notify_all();
  packed.clear();
}

}  // namespace collscope::sample
