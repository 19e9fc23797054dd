#include <collscope/run/format.hpp>

#include <fmt/format.h>

#include <algorithm>
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

std::string format_size_range(std::int64_t lo, std::int64_t hi) {
  return lo == hi ? format_bytes(double(lo)) : format_bytes(double(lo)) + "–" + format_bytes(double(hi));
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

namespace {

std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

// The byte length of the first `cols` code points of s.
std::size_t prefix_bytes(std::string_view s, std::size_t cols) {
  std::size_t i = 0, n = 0;
  while (i < s.size() && n < cols) {
    ++i, ++n;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) ++i;
  }
  return i;
}

}  // namespace

std::string wrap_text(std::string_view text, std::size_t width, std::size_t indent) {
  width = std::max<std::size_t>(width, indent + 10);
  const std::string pad(indent, ' ');
  std::string out;
  std::size_t line = 0;  // columns on the current output line
  bool line_has_word = false;
  auto new_line = [&] {
    out += '\n';
    out += pad;
    line = indent;
    line_has_word = false;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    std::string_view para = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (pos > 0) new_line();
    std::size_t i = 0;
    // Leading spaces of a paragraph are kept (an indented table line).
    while (i < para.size() && para[i] == ' ') out += ' ', ++line, ++i;
    while (i < para.size()) {
      std::size_t j = para.find(' ', i);
      if (j == std::string_view::npos) j = para.size();
      std::string_view word = para.substr(i, j - i);
      while (!word.empty()) {
        const std::size_t w = columns(word);
        if (line_has_word && line + 1 + w > width) new_line();
        else if (line_has_word) out += ' ', ++line;
        if (line + w <= width) {
          out += word;
          line += w;
          line_has_word = true;
          break;
        }
        // Longer than a whole line: cut it.
        const std::size_t cut = prefix_bytes(word, width - line);
        out += word.substr(0, cut);
        word.remove_prefix(cut);
        new_line();
      }
      i = j;
      while (i < para.size() && para[i] == ' ') ++i;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return out;
}

}  // namespace collscope::run
