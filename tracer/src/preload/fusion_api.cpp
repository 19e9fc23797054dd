// The optional fusion C API a job may call (collscope/tracer/fusion.h): one tensor copied into a fusion buffer.
// Its events become buffers.tensors_packed / bytes_packed.
#include <cstddef>
#include <cstdint>

#include "clock.hpp"
#include "event.hpp"
#include "runtime.hpp"
#include "thread_buffer.hpp"

extern "C" __attribute__((visibility("default"))) void collscope_fusion_pack_impl(const void* buffer,
                                                                                  std::size_t offset,
                                                                                  std::size_t bytes) {
  using namespace collscope::tracer;
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e = Event{};
    e.kind = EventKind::FusionPack;
    e.t0 = e.t1 = t;
    e.root = -1;
    e.sendbuf = reinterpret_cast<std::uint64_t>(buffer);
    e.count = static_cast<std::int64_t>(offset);
    e.bytes = static_cast<std::int64_t>(bytes);
  });
}
