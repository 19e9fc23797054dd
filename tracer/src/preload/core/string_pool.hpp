#pragma once
// Process-wide append-only string table for names the hot path refers to by id (datatype and reduction names,
// NVTX registered strings and domains). Interning takes a lock and is done once per distinct name, off the
// per-event path; reading an id's string is lock-free.
#include <cstdint>
#include <string_view>

namespace collscope::tracer {

inline constexpr std::uint32_t kMaxPooledStrings = 65536;

// Id >= 1 of `s` (copied), or 0 when the pool is full or s is empty.
std::uint32_t pool_intern(std::string_view s);
// The string of an id returned by pool_intern ("" for 0 or unknown).
const char* pool_string(std::uint32_t id);

}  // namespace collscope::tracer
