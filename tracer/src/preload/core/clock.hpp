#pragma once
// Timestamps on the hot path. Reading the TSC costs ~11 ns against ~25 ns for clock_gettime here, so events carry
// raw ticks and the writer thread converts them to CLOCK_MONOTONIC ns with calibration pairs it samples itself
// (linear interpolation between the pairs around each tick, as Tracy does). Without an invariant TSC, ticks are
// CLOCK_MONOTONIC ns already and conversion is the identity.
#include <cstdint>
#include <ctime>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define COLLSCOPE_HAVE_TSC 1
#endif

namespace collscope::tracer {

inline std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Set once at load time from /proc/cpuinfo (constant_tsc and nonstop_tsc).
extern bool g_use_tsc;

inline std::uint64_t ticks() {
#ifdef COLLSCOPE_HAVE_TSC
  if (g_use_tsc) return __rdtsc();
#endif
  return static_cast<std::uint64_t>(monotonic_ns());
}

bool detect_invariant_tsc();

// Converts ticks to CLOCK_MONOTONIC ns. Owned by the writer thread (not thread-safe).
class TickConverter {
 public:
  // Samples a (ticks, ns) pair; call regularly (each drain). The first call anchors the conversion.
  void calibrate();
  // One (ticks, ns) pair read together; calibrate() adds what it reads (tests add their own).
  void add_pair(std::uint64_t ticks, std::int64_t ns);
  // What calibrate() does with the narrowest of its reads: `bracket` is the ticks between the two tick reads around
  // the clock read, `mid` their midpoint. Skips a preempted (wide) read, replaces a wide first pair (tests give
  // their own reads).
  void add_read(std::uint64_t mid, std::int64_t ns, std::uint64_t bracket);
  std::int64_t to_ns(std::uint64_t t) const;

 private:
  struct Pair {
    std::uint64_t ticks;
    std::int64_t ns;
  };
  std::vector<Pair> pairs_;
  double fallback_ns_per_tick_ = 1.0;
  std::uint64_t narrowest_bracket_ticks_ = ~std::uint64_t{0} / 16;  // the narrowest clock read calibrate() has seen
  std::uint64_t anchor_width_ = 0;  // the bracket of the first pair calibrate() kept (ticks)
  // The segment the last conversion used: events come in time order, so most conversions reuse it.
  mutable std::size_t segment_ = 0;  // 0: none
  mutable std::uint64_t segment_from_ = 0, segment_to_ = 0;  // ticks it covers, [from, to)
  mutable double segment_slope_ = 0;
};

}  // namespace collscope::tracer
