#include <collscope/analyzer/markup.hpp>

#include <algorithm>

namespace collscope::analyzer {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at s[at] (Unicode table 3-7), or 0; then `bad` is the length of its
// maximal well-formed prefix (>= 1), the bytes one U+FFFD replaces.
std::size_t utf8_sequence(std::string_view s, std::size_t at, std::size_t& bad) {
  const auto c = static_cast<unsigned char>(s[at]);
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
    if (at + k >= s.size()) return bad = k, 0;
    const auto b = static_cast<unsigned char>(s[at + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return bad = k, 0;
  }
  return n;
}

// Calls `ascii(c)` for each ASCII byte and appends well-formed multi-byte characters (U+FFFD for ill-formed ones).
template <typename Ascii>
std::string map_text(std::string_view s, Ascii ascii) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t at = 0; at < s.size();) {
    std::size_t bad = 0;
    const std::size_t n = utf8_sequence(s, at, bad);
    if (n == 1) ascii(out, s[at]);
    else if (n > 1) out.append(s.substr(at, n));
    else out.append(kReplacementCharacter);
    at += n ? n : bad;
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  return map_text(s, [](std::string& out, char c) { out += c; });
}

std::string xml_escape(std::string_view s) {
  return map_text(s, [](std::string& out, char c) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Other control characters are not allowed in XML 1.0 (a JUnit parser rejects them): dropped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  });
}

std::string markdown_text(std::string_view s) {
  return map_text(s, [](std::string& out, char c) {
    switch (c) {
      // Entities for what starts HTML or an entity: CommonMark renders them as the characters.
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n':
      case '\r':
      case '\t': out += ' '; break;
      // Backslash escapes for emphasis, code, links, images, tables and escapes themselves.
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '!':
      case '|':
      case '#':
      case '~':
        out += '\\';
        out += c;
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
    }
  });
}

std::string markdown_code(std::string_view s) {
  std::size_t longest = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  std::string body = map_text(s, [](std::string& out, char c) {
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  });
  // A space on each side keeps a leading or trailing backtick from joining the fence (CommonMark strips one).
  return fence + " " + body + " " + fence;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace collscope::analyzer
