#pragma once
// JSON text for writers that stream millions of events (nlohmann::json per event is 10x slower), and the UTF-8
// repair both the writer and the Horovod reader use: JSON is UTF-8, names from traces are not always (the kernel
// cuts thread names at 15 bytes, mid-character; Latin-1 bytes in tensor names).
#include <cstddef>
#include <string>
#include <string_view>

namespace collscope::plugins::detail {

// "\xEF\xBF\xBD", U+FFFD REPLACEMENT CHARACTER: what an ill-formed UTF-8 sequence becomes.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Length of the well-formed UTF-8 sequence at s[at] (1 to 4; Unicode table 3-7: no overlongs, no surrogates, nothing
// above U+10FFFF), or 0 when ill-formed; then `bad` is the length of its maximal well-formed prefix (at least 1),
// the bytes one U+FFFD replaces (Unicode's "maximal subpart" practice). `incomplete` is set when the sequence is
// only cut short by the end of `s` (a reader reading in chunks waits for more).
inline std::size_t utf8_sequence(std::string_view s, std::size_t at, std::size_t& bad, bool* incomplete = nullptr) {
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

// `s` as a JSON string literal, quotes included; ill-formed UTF-8 becomes U+FFFD, so the file stays valid JSON.
inline std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (std::size_t at = 0; at < s.size();) {
    const auto c = static_cast<unsigned char>(s[at]);
    if (c >= 0x80) {
      std::size_t bad = 0;
      const std::size_t n = utf8_sequence(s, at, bad);
      if (n) out.append(s.substr(at, n)), at += n;
      else out.append(kReplacementCharacter), at += bad;
      continue;
    }
    ++at;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace collscope::plugins::detail
