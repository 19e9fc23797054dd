// The optional fusion C API (collscope/tracer/fusion.h): a job that packs tensors into a fusion buffer says so,
// and the writer counts what went into each buffer (buffers.tensors_packed, bytes_packed). Exported by the
// preload; the header's weak reference makes the call a no-op without it.
#include <cstddef>
#include <cstdint>

#include "core/clock.hpp"
#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

using namespace collscope::tracer;

extern "C" __attribute__((visibility("default"))) void collscope_fusion_pack_impl(const void* buffer, size_t offset,
                                                                                  size_t bytes) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e = Event{};
    e.kind = EventKind::FusionPack;
    e.t0 = e.t1 = t;
    e.root = e.peer = -1;
    e.sendbuf = reinterpret_cast<std::uint64_t>(buffer);
    e.count = static_cast<std::int64_t>(offset);
    e.bytes = static_cast<std::int64_t>(bytes);
  });
}
