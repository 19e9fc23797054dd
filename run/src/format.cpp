#include <collscope/run/format.hpp>

#include <fmt/format.h>

#include <cmath>

namespace collscope::run {

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.3g} {}", v, kUnits[u]);
}

std::string format_duration(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} µs", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string format_ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

std::string format_bandwidth(double gbps) { return fmt::format("{:.3g} GB/s", gbps); }

}  // namespace collscope::run
