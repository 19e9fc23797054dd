#include <collscope/analyzer/markup.hpp>
#include <collscope/run/format.hpp>

#include <algorithm>

namespace collscope::analyzer {
namespace {

// Calls `ascii(c)` for each ASCII byte and appends well-formed multi-byte characters (U+FFFD for ill-formed ones).
template <typename Ascii>
std::string map_text(std::string_view s, Ascii ascii) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t at = 0; at < s.size();) {
    std::size_t bad = 0;
    const std::size_t n = run::utf8_sequence(s, at, bad);
    if (n == 1) ascii(out, s[at]);
    else if (n > 1) out.append(s.substr(at, n));
    else out.append(run::kReplacementCharacter);
    at += n ? n : bad;
  }
  return out;
}

}  // namespace

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
