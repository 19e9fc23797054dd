#pragma once
// JSON text for writers that stream millions of events (nlohmann::json per event is 10x slower). JSON is UTF-8;
// names from traces are not always: they are repaired as run/format.hpp says.
#include <collscope/run/format.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace collscope::formats::detail {

// `s` as a JSON string literal, quotes included; ill-formed UTF-8 becomes U+FFFD, so the file stays valid JSON.
inline std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (std::size_t at = 0; at < s.size();) {
    const auto c = static_cast<unsigned char>(s[at]);
    if (c >= 0x80) {
      std::size_t bad = 0;
      const std::size_t n = run::utf8_sequence(s, at, bad);
      if (n) out.append(s.substr(at, n)), at += n;
      else out.append(run::kReplacementCharacter), at += bad;
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

}  // namespace collscope::formats::detail
