#include "core/comm_registry.hpp"

#include <mutex>

#include "core/clock.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer {
namespace {
constexpr std::size_t kMapSize = 2 * kMaxCommunicators;  // power of two
const void* const kTombstone = reinterpret_cast<const void*>(~std::uintptr_t{0});

struct MapEntry {
  std::atomic<const void*> handle{nullptr};
  std::atomic<std::uint32_t> slot{0};
};

MapEntry g_map[kMapSize];
CommSlot g_slots[kMaxCommunicators + 1];
std::uint32_t g_next_slot = 1;
std::mutex g_mutex;

std::size_t bucket(const void* h) {
  auto v = reinterpret_cast<std::uintptr_t>(h);
  v ^= v >> 17;
  v *= 0xed5ad4bbU;
  v ^= v >> 11;
  return v & (kMapSize - 1);
}

void emit_comm_event(EventKind kind, std::uint32_t slot) {
  emit([&](Event& e) {
    e = Event{};
    e.kind = kind;
    e.comm_slot = slot;
    e.t0 = ticks();
  });
}

MapEntry* find_entry(const void* handle) {
  for (std::size_t i = bucket(handle), n = 0; n < kMapSize; i = (i + 1) & (kMapSize - 1), ++n) {
    const void* h = g_map[i].handle.load(std::memory_order_acquire);
    if (h == handle) return &g_map[i];
    if (h == nullptr) return nullptr;
  }
  return nullptr;
}
}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t seed) {
  auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = seed;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

CommSlot& comm_slot(std::uint32_t index) { return g_slots[index <= kMaxCommunicators ? index : 0]; }

std::uint32_t comm_lookup(const void* handle) {
  MapEntry* e = find_entry(handle);
  return e ? e->slot.load(std::memory_order_acquire) : 0;
}

std::uint32_t comm_register(const void* handle, CommDescription d) {
  std::uint32_t index = 0;
  {
    std::lock_guard lock(g_mutex);
    if (g_next_slot > kMaxCommunicators) return 0;
    index = g_next_slot++;
    static_cast<CommDescription&>(g_slots[index]) = std::move(d);
    if (MapEntry* e = find_entry(handle)) {
      e->slot.store(index, std::memory_order_release);
    } else {
      for (std::size_t i = bucket(handle), n = 0; n < kMapSize; i = (i + 1) & (kMapSize - 1), ++n) {
        const void* h = g_map[i].handle.load(std::memory_order_relaxed);
        if (h == nullptr || h == kTombstone) {
          g_map[i].slot.store(index, std::memory_order_relaxed);
          g_map[i].handle.store(handle, std::memory_order_release);
          break;
        }
      }
    }
  }
  emit_comm_event(EventKind::CommCreated, index);
  return index;
}

void comm_unregister(const void* handle) {
  std::uint32_t index = 0;
  {
    std::lock_guard lock(g_mutex);
    MapEntry* e = find_entry(handle);
    if (!e) return;
    index = e->slot.load(std::memory_order_relaxed);
    e->slot.store(0, std::memory_order_relaxed);
    e->handle.store(kTombstone, std::memory_order_release);
  }
  emit_comm_event(EventKind::CommDestroyed, index);
}

}  // namespace collscope::tracer
