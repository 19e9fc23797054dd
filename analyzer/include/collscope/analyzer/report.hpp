#pragma once
// Report writers over one Analysis. JSON schema: docs/report-json.md.
#include <collscope/analyzer/analysis.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace collscope::analyzer {

enum class ReportFormat { Text, Json, Markdown, Html };
ReportFormat report_format_from_name(const std::string& name);  // throws InputError

std::string text_report(const Analysis& a);
nlohmann::json json_report(const Analysis& a);
std::string markdown_report(const Analysis& a);
std::string html_report(const Analysis& a);  // self-contained, inline SVG plots
std::string render_report(const Analysis& a, ReportFormat format);

}  // namespace collscope::analyzer
