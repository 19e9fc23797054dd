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
                           MPI_Comm horovod_comm, CollectiveCaller& caller, TimelineConfig timeline)
    : gradients_(std::move(gradients)),
      config_(config),
      comm_(horovod_comm),
      caller_(caller),
      timeline_(std::move(timeline)),
      fusion_buffer_(new float[(config.threshold_bytes + sizeof(float) - 1) / sizeof(float)]),
      ready_(gradients_.size(), false),
      reduced_(gradients_.size(), false) {
  MPI_Comm_size(comm_, &world_size_);
  world_size_inverse_ = 1.0f / static_cast<float>(world_size_);
  if (timeline_.writer) {
    ticked_.assign(gradients_.size(), std::vector<bool>(static_cast<std::size_t>(world_size_), false));
    negotiating_.assign(gradients_.size(), false);
  }
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
  const std::size_t words = mask_words + 1;
  std::vector<std::uint64_t> local(words), agreed(words), all;
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
    if (timeline_.gather_readiness) {
      if (timeline_.writer) timeline_.writer->cycle_start();
      all.resize(words * static_cast<std::size_t>(world_size_));
      caller_.allgather(local.data(), static_cast<int>(words), MPI_UINT64_T, all.data(), comm_,
                        CommunicatorRole::horovod);
      std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(words), agreed.begin());
      for (int r = 1; r < world_size_; ++r)
        for (std::size_t w = 0; w < words; ++w) agreed[w] &= all[static_cast<std::size_t>(r) * words + w];
      if (timeline_.writer) record_negotiation(all, agreed, words);
    } else {
      caller_.allreduce(local.data(), agreed.data(), static_cast<int>(agreed.size()),
                        MPI_UINT64_T, MPI_BAND, comm_, CommunicatorRole::horovod);
    }
    if (agreed[mask_words] == ~std::uint64_t{0}) return;

    // Backward order (last layer first), as the gradients became ready: deterministic on all ranks.
    agreed_tensors.clear();
    for (std::size_t i = gradients_.size(); i-- > 0;)
      if (agreed[i / kBitsPerWord] >> (i % kBitsPerWord) & 1) agreed_tensors.push_back(i);
    if (!agreed_tensors.empty()) reduce_agreed(agreed_tensors);
  }
}

void FusionEngine::record_negotiation(const std::vector<std::uint64_t>& all,
                                      const std::vector<std::uint64_t>& agreed, std::size_t words) {
  auto bit = [](const std::uint64_t* mask, std::size_t i) { return (mask[i / kBitsPerWord] >> (i % kBitsPerWord)) & 1; };
  for (std::size_t i = 0; i < gradients_.size(); ++i) {
    const std::string& name = timeline_.tensor_names[i];
    for (int r = 0; r < world_size_; ++r) {
      if (!bit(all.data() + static_cast<std::size_t>(r) * words, i) || ticked_[i][static_cast<std::size_t>(r)]) continue;
      if (!negotiating_[i]) timeline_.writer->negotiate_start(name, "ALLREDUCE");
      negotiating_[i] = true;
      timeline_.writer->negotiate_rank_ready(name, r);
      ticked_[i][static_cast<std::size_t>(r)] = true;
    }
    if (bit(agreed.data(), i) && negotiating_[i]) {
      timeline_.writer->negotiate_end(name);
      negotiating_[i] = false;
      ticked_[i].assign(ticked_[i].size(), false);
    }
  }
}

std::string FusionEngine::shape_of(std::size_t index) const { return "[" + std::to_string(gradients_[index].size()) + "]"; }

void FusionEngine::reduce_agreed(const std::vector<std::size_t>& agreed) {
  HorovodTimeline* const timeline = timeline_.writer;
  std::vector<std::size_t> packed;
  std::size_t fill_bytes = 0;
  for (std::size_t index : agreed) {
    std::span<float> gradient = gradients_[index];
    const std::size_t bytes = gradient.size_bytes();
    if (bytes > config_.threshold_bytes) {
      // Too large to fuse: reduced alone, in place in its own buffer.
      busy_compute_for(config_.op_overhead_us / 1000.0);
      if (timeline) {
        timeline->start(timeline_.tensor_names[index], "ALLREDUCE");
        timeline->activity_start(timeline_.tensor_names[index], "MPI_ALLREDUCE");
      }
      caller_.allreduce(MPI_IN_PLACE, gradient.data(), static_cast<int>(gradient.size()),
                        MPI_FLOAT, MPI_SUM, comm_, CommunicatorRole::horovod);
      for (float& value : gradient) value *= world_size_inverse_;
      if (timeline) {
        timeline->activity_end(timeline_.tensor_names[index]);
        timeline->end(timeline_.tensor_names[index], "HOROVOD_FLOAT32", shape_of(index));
      }
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
    if (timeline) {
      timeline->start(timeline_.tensor_names[index], "ALLREDUCE");
      timeline->activity_start(timeline_.tensor_names[index], "MEMCPY_IN_FUSION_BUFFER");
    }
    std::memcpy(destination, gradient.data(), bytes);
    if (timeline) timeline->activity_end(timeline_.tensor_names[index]);
    collscope_fusion_pack(fusion_buffer_.get(), fill_bytes, bytes);
    fill_bytes += bytes;
    packed.push_back(index);
  }
  if (!packed.empty()) flush_fusion_buffer(packed, fill_bytes);
}

void FusionEngine::flush_fusion_buffer(std::vector<std::size_t>& packed, std::size_t fill_bytes) {
  busy_compute_for(config_.op_overhead_us / 1000.0);
  HorovodTimeline* const timeline = timeline_.writer;
  auto activity_all = [&](const char* activity) {
    for (std::size_t index : packed)
      activity ? timeline->activity_start(timeline_.tensor_names[index], activity)
               : timeline->activity_end(timeline_.tensor_names[index]);
  };
  if (timeline) activity_all("MPI_ALLREDUCE");
  caller_.allreduce(MPI_IN_PLACE, fusion_buffer_.get(),
                    static_cast<int>(fill_bytes / sizeof(float)), MPI_FLOAT, MPI_SUM, comm_,
                    CommunicatorRole::horovod);
  if (timeline) {
    activity_all(nullptr);
    activity_all("MEMCPY_OUT_FUSION_BUFFER");
  }
  // Unpack, averaging over ranks.
  const float* source = fusion_buffer_.get();
  for (std::size_t index : packed) {
    std::span<float> gradient = gradients_[index];
    for (std::size_t i = 0; i < gradient.size(); ++i) gradient[i] = source[i] * world_size_inverse_;
    source += gradient.size();
  }
  if (timeline) {
    activity_all(nullptr);
    for (std::size_t index : packed) timeline->end(timeline_.tensor_names[index], "HOROVOD_FLOAT32", shape_of(index));
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
