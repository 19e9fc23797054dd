#pragma once
// CPU time of the calling thread (ns): what the tracer benchmarks charge to a thread, leaving out the time other
// processes held its core (on a loaded host that is most of the wall time).
#include <cstdint>
#include <ctime>

inline std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
