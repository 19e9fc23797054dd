#include <collscope/run/format.hpp>

#include <fmt/format.h>

#include <cmath>

namespace collscope::run {
namespace {

// 3 significant digits without an exponent: 1023.4 is "1023", not "1.02e+03".
std::string three_digits(double v) { return std::fabs(v) >= 999.5 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

}  // namespace

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return three_digits(v) + " " + kUnits[u];
}

std::string format_duration(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return three_digits(ns / 1e3) + " µs";
  if (a < 1e9) return three_digits(ns / 1e6) + " ms";
  return three_digits(ns / 1e9) + " s";
}

std::string format_ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

std::string format_bandwidth(double gbps) { return three_digits(gbps) + " GB/s"; }

}  // namespace collscope::run
