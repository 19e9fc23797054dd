#pragma once
// The recording path of NVTX ranges, shared by the NVTX injection (nvtx_injection.cpp: the job's own NVTX calls)
// and the annotation table (annotation_api.cpp: collscope's Python sitecustomize). Needs no NVTX header, so the
// annotation table exists in a preload built without the CUDA toolkit. The writer side (nvtx_ranges.cpp) pairs
// pushes with pops per (thread, domain) and starts with ends per range id, and writes nvtx_ranges rows.
//
// Hot path (push/pop, start/end, mark): one TSC read and one 128-byte record on the thread's ring. Messages
// up to kInlineText bytes are copied into the record; longer ones, wide strings, domains and registered
// strings are interned once in the process string pool and referred to by id.
//
// Event field use (EventKind::Nvtx*):
//   t0        ticks of the call
//   a[0]      domain: string pool id of the domain name, 0 = default domain
//   a[1]      name: string pool id, 0 = the name is inline in the text area (seq .. peer, NUL-terminated)
//   a[2]      range id (start/end)
//   a[3]      payload bits; op = kPayloadNone / kPayloadInt / kPayloadDouble
//   root      category (uint32 bits)
//   comm_slot colour ARGB when flags & kNvtxHasColor
//   status    push level returned to the caller (0 = outermost)
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/clock.hpp"
#include "core/cpu_sampling.hpp"
#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer::nvtx {

constexpr std::uint8_t kPayloadNone = 0;
constexpr std::uint8_t kPayloadInt = 1;
constexpr std::uint8_t kPayloadDouble = 2;
constexpr std::uint16_t kNvtxHasColor = 1;

// The text area: the collective fields seq .. peer are unused by NVTX events (52 contiguous bytes).
constexpr std::size_t kTextOffset = offsetof(Event, seq);
constexpr std::size_t kTextBytes = offsetof(Event, thread) - kTextOffset;
constexpr std::size_t kInlineText = kTextBytes - 1;
static_assert(kTextBytes == 52, "NVTX text area layout changed");

// No category, colour or payload.
inline void clear_attributes(Event& e) {
  e.op = kPayloadNone;
  e.flags = 0;
  e.root = 0;
  e.comm_slot = 0;
  e.a[3] = 0;
}

inline char* text_area(Event& e) { return reinterpret_cast<char*>(&e) + kTextOffset; }
inline const char* text_area(const Event& e) { return reinterpret_cast<const char*>(&e) + kTextOffset; }

extern std::atomic<std::uint64_t> g_next_range_id;
extern std::atomic<std::uint64_t> g_unbalanced_pops;  // pops with no push on their thread (meta nvtx_unbalanced_pops)

// The push level of the calling thread in `domain` (0 = default domain), as nvtxRangePush/Pop return it.
std::int32_t* depth_of(std::uint64_t domain);
// Fills the name of `e` from an ASCII message: inline when short, else pooled.
void set_ascii_name(Event& e, const char* message);
// Records meta nvtx.category.DOMAIN.N = name.
void name_category(std::uint64_t domain, std::uint32_t category, const std::string& name);
// Opens this process's trace file now when nothing else will (no MPI in the job), as the first NVTX call does,
// as world rank `rank` of `size` (rank < 0: from the launcher's environment, else 0).
void start_runtime_if_alone(int rank = -1, int size = -1);

// ---- the recording calls ----------------------------------------------------------------------------------

template <typename Name>
int push(std::uint64_t domain, Name&& fill_name) {
  std::int32_t* depth = depth_of(domain);
  const std::int32_t level = (*depth)++;
  if (!recording()) return level;
  const std::uint64_t t = ticks();
  maybe_sample_cpu(t, CpuSampleSite::RangeBoundary);
  emit([&](Event& e) {
    e.kind = EventKind::NvtxPush;
    e.t0 = t;
    e.a[0] = domain;
    e.status = level;
    fill_name(e);
  });
  return level;
}

int pop(std::uint64_t domain);

template <typename Name>
std::uint64_t start(std::uint64_t domain, Name&& fill_name) {
  const std::uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (!recording()) return id;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxStart;
    e.t0 = t;
    e.a[0] = domain;
    e.a[2] = id;
    fill_name(e);
  });
  return id;
}

void end(std::uint64_t domain, std::uint64_t id);

template <typename Name>
void mark(std::uint64_t domain, Name&& fill_name) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxMark;
    e.t0 = t;
    e.a[0] = domain;
    fill_name(e);
  });
}

// The push of a plain name in `domain`, for the annotation table.
inline int push_name(std::uint64_t domain, const char* name) {
  return push(domain, [name](Event& e) {
    clear_attributes(e);
    set_ascii_name(e, name);
  });
}

}  // namespace collscope::tracer::nvtx
