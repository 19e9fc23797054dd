#pragma once
// Fusion buffers filled on the GPU (Horovod style: device-to-device cudaMemcpyAsync of each tensor into the
// fusion buffer, then one NCCL call on the buffer). The CUDA runtime callback notes each copy's destination and
// size; when a collective reads a buffer, the copies that landed inside it since the previous read are the
// tensors packed into it, and become FusionPack events (buffers.tensors_packed / bytes_packed).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace collscope::tracer::gpu {

struct PackedCopy {
  std::uint64_t offset = 0;  // bytes from the buffer's start
  std::uint64_t bytes = 0;
};

// The recent copies not yet claimed by a collective. Bounded: the oldest are forgotten (kCapacity copies).
class RecentCopies {
 public:
  static constexpr std::size_t kCapacity = 4096;

  void add(std::uint64_t dst, std::uint64_t bytes);
  // Removes and returns the copies whose destination range lies inside [buffer, buffer + bytes), oldest first.
  std::vector<PackedCopy> take_inside(std::uint64_t buffer, std::uint64_t bytes);
  std::size_t size() const { return copies_.size(); }

 private:
  struct Copy {
    std::uint64_t dst;
    std::uint64_t bytes;
  };
  std::vector<Copy> copies_;
};

// Process-wide hooks (thread-safe, a lock per call: copies and NCCL calls cost microseconds already).
void note_copy(const void* dst, std::size_t bytes);
void note_buffer_read(const void* buffer, std::int64_t bytes);

}  // namespace collscope::tracer::gpu
