#pragma once
// Text for the formats the reports write (JUnit XML, HTML, SVG, Markdown, JSON; also the tuner's report): escaping,
// with ill-formed UTF-8 repaired as run/format.hpp says. Names come from traces as bytes: communicator and tensor
// names may hold anything, markup included.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace collscope::analyzer {

// &, <, >, " and ' as entities, control characters other than tab and newline dropped, ill-formed UTF-8 as U+FFFD:
// safe in element text and in quoted attributes of XML, HTML and SVG.
std::string xml_escape(std::string_view s);

// Text for Markdown (GitHub's included): markup characters escaped, so a name such as `<img src=x onerror=...>` or
// `[x](javascript:...)` is shown as typed and never rendered as HTML or a link; '|' escaped (table cells), newlines
// as spaces, ill-formed UTF-8 as U+FFFD.
std::string markdown_text(std::string_view s);
// `s` as a Markdown code span, with a backtick fence longer than any run of backticks inside.
std::string markdown_code(std::string_view s);

// JSON text of `j` (indent as nlohmann's dump); strings with ill-formed UTF-8 get U+FFFD instead of throwing
// type_error.316 and losing the whole report.
std::string json_text(const nlohmann::json& j, int indent = 2);

}  // namespace collscope::analyzer
