#pragma once
// What the viewer's benchmarks measure about themselves: frame times (wall and CPU) and memory from /proc.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <time.h>

namespace collscope::gui::bench {

// VmRSS (resident now) or VmHWM (the peak so far), KiB.
inline long status_kib(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  return 0;
}
inline long rss_kib() { return status_kib("VmRSS:"); }
inline long peak_rss_kib() { return status_kib("VmHWM:"); }

// CPU time of the calling thread, ms: what a frame costs whatever else the machine runs (the wall time of a frame
// on a loaded 2-core machine is mostly waiting for a core).
inline double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Per frame: wall time and (when recorded) the painting thread's CPU time, ms.
struct Frames {
  std::vector<double> ms;
  std::vector<double> cpu_ms;
  double mean() const { return std::accumulate(ms.begin(), ms.end(), 0.0) / std::max<std::size_t>(1, ms.size()); }
  double pct(double p) const {
    auto v = ms;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
  }
  double max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
  Frames cpu() const { return Frames{cpu_ms, {}}; }
};

}  // namespace collscope::gui::bench
