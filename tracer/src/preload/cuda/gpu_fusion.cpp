#include "cuda/gpu_fusion.hpp"

#include <algorithm>
#include <atomic>

#include "core/clock.hpp"
#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer::gpu {

void RecentCopies::add(std::uint64_t dst, std::uint64_t bytes) {
  if (bytes == 0) return;
  if (copies_.size() >= kCapacity) copies_.erase(copies_.begin(), copies_.begin() + kCapacity / 4);
  copies_.push_back({dst, bytes});
}

std::vector<PackedCopy> RecentCopies::take_inside(std::uint64_t buffer, std::uint64_t bytes) {
  std::vector<PackedCopy> out;
  if (bytes == 0) return out;
  const std::uint64_t end = buffer + bytes;
  auto inside = [&](const Copy& c) { return c.dst >= buffer && c.dst + c.bytes <= end; };
  for (const Copy& c : copies_)
    if (inside(c)) out.push_back({c.dst - buffer, c.bytes});
  copies_.erase(std::remove_if(copies_.begin(), copies_.end(), inside), copies_.end());
  return out;
}

namespace {
std::mutex g_mutex;
RecentCopies& recent() {
  static auto* r = new RecentCopies();  // never destroyed: copies may be noted during exit
  return *r;
}
std::atomic<bool> g_any_copy{false};
}  // namespace

void note_copy(const void* dst, std::size_t bytes) {
  if (!recording()) return;
  std::lock_guard lock(g_mutex);
  recent().add(reinterpret_cast<std::uint64_t>(dst), bytes);
  g_any_copy.store(true, std::memory_order_relaxed);
}

void note_buffer_read(const void* buffer, std::int64_t bytes) {
  if (!g_any_copy.load(std::memory_order_relaxed) || !buffer || bytes <= 0) return;
  std::vector<PackedCopy> packed;
  {
    std::lock_guard lock(g_mutex);
    packed = recent().take_inside(reinterpret_cast<std::uint64_t>(buffer), static_cast<std::uint64_t>(bytes));
  }
  const std::uint64_t t = ticks();
  for (const PackedCopy& p : packed)
    emit([&](Event& e) {
      e = Event{};
      e.kind = EventKind::FusionPack;
      e.t0 = e.t1 = t;
      e.root = e.peer = -1;
      e.sendbuf = reinterpret_cast<std::uint64_t>(buffer);
      e.count = static_cast<std::int64_t>(p.offset);
      e.bytes = static_cast<std::int64_t>(p.bytes);
    });
}

}  // namespace collscope::tracer::gpu
