#pragma once
// Escaping for the XML and HTML the reports write (JUnit, HTML report, SVG plots; also the tuner's report).
#include <string>
#include <string_view>

namespace collscope::analyzer {

// &, <, >, " and ' as entities, control characters other than tab and newline dropped: safe in element text and
// in quoted attributes of XML, HTML and SVG.
std::string xml_escape(std::string_view s);

}  // namespace collscope::analyzer
