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

std::size_t utf8_sequence(std::string_view s, std::size_t at, std::size_t& bad, bool* incomplete) {
  const auto c = static_cast<unsigned char>(s[at]);
  if (incomplete) *incomplete = false;
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else return bad = 1, 0;
  for (std::size_t k = 1; k < n; ++k) {
    if (at + k >= s.size()) {
      if (incomplete) *incomplete = true;
      return bad = k, 0;
    }
    const auto b = static_cast<unsigned char>(s[at + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return bad = k, 0;
  }
  return n;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t at = 0; at < s.size();) {
    std::size_t bad = 0;
    if (const std::size_t n = utf8_sequence(s, at, bad)) {
      out.append(s.substr(at, n));
      at += n;
    } else {
      out.append(kReplacementCharacter);
      at += bad;
    }
  }
  return out;
}

}  // namespace collscope::run
