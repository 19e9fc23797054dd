// Reports for people: the SVG chart library and the HTML report on synthetic runs with known ground truth.
// Every SVG must be well-formed XML (checked by Python's parser), say its units and draw what was injected.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/analyzer/svg_chart.hpp>
#include <collscope/run/format.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::analyzer;
using collscope::test::shell;
using collscope::testing::SyntheticRunSpec;

namespace {

fs::path temp_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-report-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Every <svg>…</svg> of `text` parses as XML; returns how many there were (−1 when one does not parse).
int well_formed_svgs(const std::string& text) {
  const auto file = temp_dir("xml") / "page.txt";
  std::ofstream(file) << text;
  const std::string script =
      "import re,sys,xml.etree.ElementTree as E\n"
      "t=open(sys.argv[1],encoding='utf-8').read()\n"
      "s=re.findall(r'<svg.*?</svg>',t,re.S)\n"
      "[E.fromstring(x) for x in s]\n"
      "sys.exit(10+len(s))\n";
  std::ofstream(file.parent_path() / "check.py") << script;
  const int rc = shell(fmt::format("python3 {} {} 2>&1", (file.parent_path() / "check.py").string(), file.string()));
  return rc >= 10 && rc < 128 ? rc - 10 : -1;  // a Python exception exits 1
}

std::vector<std::string> tick_texts(const std::string& svg) {
  std::vector<std::string> out;
  const auto start = svg.find("<g class=\"ticks\"");
  if (start == std::string::npos) return out;
  const auto end = svg.find("</g>", start);
  static const std::regex text(R"(<text[^>]*>([^<]*)</text>)");
  for (std::sregex_iterator it(svg.begin() + static_cast<std::ptrdiff_t>(start), svg.begin() + static_cast<std::ptrdiff_t>(end), text), stop;
       it != stop; ++it)
    out.push_back((*it)[1].str());
  return out;
}

}  // namespace

TEST(Chart, TicksAreRoundAndNumbersPlain) {
  EXPECT_EQ(chart::linear_ticks(0, 9.3, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  // Integer axes (trials, steps) never get fractional ticks, even over a short range.
  for (double t : chart::linear_ticks(1, 3, 8, true)) EXPECT_EQ(t, std::round(t));
  // No scientific notation, no "-0", precision from the step.
  EXPECT_EQ(chart::plain_number(0.00002, 0.00001), "0.00002");
  EXPECT_EQ(chart::plain_number(2.5e9, 5e8), "2500M");
  EXPECT_EQ(chart::plain_number(20000, 10000), "20k");
  EXPECT_EQ(chart::plain_number(9000, 1000), "9000");
  EXPECT_EQ(chart::plain_number(1e6, 1e6), "1M");
  EXPECT_EQ(chart::plain_number(1500, 500), "1500");
  EXPECT_EQ(chart::plain_number(-1e-12, 0.5), "0.0");
  EXPECT_EQ(chart::plain_number(0.25, 0.05), "0.25");
}

TEST(Chart, XYChartHasAxesTicksLegendAndTips) {
  chart::XYChart c;
  c.title = "Bus bandwidth";
  c.x = {.label = "message size", .scale = chart::Scale::Log2, .format = [](double b) { return collscope::run::format_bytes(b); }};
  c.y = {.label = "busbw (GB/s)", .from_zero = true};
  chart::Series s{.name = "allreduce median", .colour = 0x1f77b4, .mark = chart::Mark::LinePoints};
  for (int k = 10; k <= 24; k += 2) s.points.push_back({.x = double(1 << k), .y = k * 0.4, .tip = fmt::format("tip {}", k)});
  c.series.push_back(s);
  c.references.push_back({.y = 12.5, .name = "link 12.5 GB/s"});
  const std::string svg = chart::render(c);
  EXPECT_EQ(well_formed_svgs(svg), 1);
  for (const char* want : {"Bus bandwidth", "message size", "busbw (GB/s)", "allreduce median", "link 12.5 GB/s", "tip 16"})
    EXPECT_NE(svg.find(want), std::string::npos) << want;
  const auto ticks = tick_texts(svg);
  EXPECT_NE(std::find(ticks.begin(), ticks.end(), "2 MiB"), ticks.end()) << fmt::format("{}", fmt::join(ticks, " | "));
  EXPECT_NE(std::find(ticks.begin(), ticks.end(), "15"), ticks.end());  // y reaches the reference above the data
  for (const auto& t : ticks) EXPECT_EQ(t.find('e'), std::string::npos) << t;
}

TEST(Chart, HeatMapMergesRowsBeyondWhatFits) {
  chart::HeatMap m;
  m.title = "lateness";
  for (int r = 0; r < 1000; ++r) {
    m.row_labels.push_back(fmt::format("rank {}", r));
    m.cells.push_back(std::vector<double>(50, r == 777 ? 5.0 : 0.0));
  }
  m.max_rows = 100;
  const std::string svg = chart::render(m);
  EXPECT_EQ(well_formed_svgs(svg), 1);
  // 10 ranks per row: the straggler's block is labelled by its range and keeps its maximum.
  EXPECT_NE(svg.find("rank 770–rank 779, 0: 5"), std::string::npos);
  EXPECT_EQ(svg.find("rank 777,"), std::string::npos);
}

TEST(HtmlReport, ShowsLatenessOfTheStragglerBandwidthReferenceAndUnits) {
  const auto dir = temp_dir("straggler");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 12;
  spec.slow_rank = 2;
  spec.slow_ms = 3;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  AnalysisOptions options;
  options.link_gbps = 10;
  const Analysis a = analyze_run(dir.string(), options);
  // Lateness, not wait: the slow rank is late into every step's collectives, the others are not.
  ASSERT_EQ(a.steps.steps.size(), 12u);
  for (const auto& s : a.steps.steps) {
    for (std::size_t r = 0; r < 4; ++r) {
      if (r == 2) continue;
      EXPECT_LT(a.lateness.lateness_ns[r][s.index], 0.2 * a.lateness.lateness_ns[2][s.index]) << "step " << s.index << " rank " << r;
    }
    EXPECT_NEAR(a.lateness.lateness_ns[2][s.index] / 1e6, 3, 0.5);
    EXPECT_LT(s.rank_wait_ns[2], s.rank_wait_ns[0]);
  }
  const std::string html = html_report(a);
  EXPECT_GE(well_formed_svgs(html), 4);
  EXPECT_NE(html.find("rank 2, step 5: 3"), std::string::npos);  // hover text of the straggler's cell, in ms
  EXPECT_NE(html.find("link 10 GB/s (--link-gbps)"), std::string::npos);
  EXPECT_NE(html.find("<b>Bus bandwidth (busbw)</b>"), std::string::npos);
  EXPECT_NE(html.find("Step time per rank"), std::string::npos);
  EXPECT_NE(html.find("4 MiB"), std::string::npos);
  EXPECT_EQ(html.find("4194304"), std::string::npos);  // sizes are formatted, never raw byte counts
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

namespace {

Analysis synthetic(const std::string& name, SyntheticRunSpec spec) {
  const auto dir = temp_dir(name);
  collscope::testing::write_synthetic_run(dir.string(), spec);
  return analyze_run(dir.string());
}

std::vector<std::string> junit_case_names(const std::string& xml) {
  std::vector<std::string> out;
  static const std::regex name(R"re(<testcase classname="[^"]*" name="([^"]*)")re");
  for (std::sregex_iterator it(xml.begin(), xml.end(), name), end; it != end; ++it) out.push_back((*it)[1].str());
  return out;
}

}  // namespace

TEST(CompareReport, VerdictFirstChangesReadRightNoBusbwOfTinyMessages) {
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 20;
  const Analysis base = synthetic("cmp-base", spec);
  spec.seed = 2;
  spec.link_gbps = 1;  // the link falls to a tenth: busbw −90 %, a bit slower steps
  const Analysis slow_link = synthetic("cmp-slow-link", spec);
  const Comparison c = compare_analyses(base, slow_link, 0.05);
  const std::string md = comparison_markdown(c);
  // The verdict is the first paragraph; the table is folded.
  const auto verdict = md.find("**Regression**: step time");
  ASSERT_NE(verdict, std::string::npos) << md;
  EXPECT_LT(verdict, md.find("<details>"));
  EXPECT_LT(md.find("<details>"), md.find("| metric |"));
  // Bandwidth that fell reads as a fall: "−9x %" and worse, never "+900 %".
  const auto row = md.find("| busbw allreduce 4 MiB..8 MiB |");
  ASSERT_NE(row, std::string::npos) << md;
  const std::string line = md.substr(row, md.find('\n', row) - row);
  EXPECT_TRUE(std::regex_search(line, std::regex(R"(\| -(8[5-9]|9[0-9])\.[0-9] % worse \|)"))) << line;
  // The same run against itself: "no change", never "+0.0 % better".
  const std::string same = comparison_markdown(compare_analyses(base, base, 0.05));
  EXPECT_NE(same.find("**No regression**"), std::string::npos) << same;
  EXPECT_EQ(same.find("+0.0 %"), std::string::npos) << same;
  EXPECT_NE(same.find("no change"), std::string::npos) << same;
  // 8-byte allreduces: latency, not bandwidth; no busbw row at all.
  spec = {};
  spec.ranks = 2;
  spec.steps = 20;
  spec.allreduce_bytes = 8;
  const Analysis tiny = synthetic("cmp-tiny", spec);
  for (const auto& m : compare_analyses(tiny, tiny, 0.05).metrics) EXPECT_FALSE(m.name.starts_with("busbw")) << m.name;
  // Text for a terminal fits 100 columns.
  const std::string text = comparison_text(c);
  for (std::size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    std::size_t cols = 0;
    for (std::size_t i = a; i < b; ++i) cols += (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80;
    EXPECT_LE(cols, 100u) << text.substr(a, b - a);
  }
}

TEST(CompareReport, NewStragglerFailsItsJUnitCaseWithStableNames) {
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 12;
  const Analysis base = synthetic("junit-base", spec);
  spec.seed = 3;
  spec.slow_rank = 3;
  spec.slow_ms = 1.5;
  const Analysis straggler = synthetic("junit-straggler", spec);
  const Comparison c = compare_analyses(base, straggler, 0.5);  // a gate the step time stays within
  ASSERT_FALSE(c.metrics.at(0).regression);
  ASSERT_EQ(c.findings_new.size(), 1u);
  EXPECT_EQ(c.findings_new[0].key, "straggler rank 3");
  EXPECT_TRUE(c.regression);  // the new finding fails the comparison
  EXPECT_NE(comparison_markdown(c).find("new finding: straggler rank 3"), std::string::npos);
  const std::string xml = comparison_junit(c);
  const auto at = xml.find("name=\"finding straggler\"");
  ASSERT_NE(at, std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"new finding: straggler rank 3", at), std::string::npos) << xml;
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  // Opted out: listed, not failing.
  const Comparison allowed = compare_analyses(base, straggler, 0.5, false);
  EXPECT_FALSE(allowed.regression);
  EXPECT_EQ(comparison_junit(allowed).find("<failure"), std::string::npos);
  // Case names do not depend on what the runs hold (sizes, findings): the same for any two runs.
  spec = {};
  spec.ranks = 2;
  spec.steps = 12;
  spec.allreduce_bytes = 300 << 10;
  const Analysis other = synthetic("junit-other", spec);
  EXPECT_EQ(junit_case_names(xml), junit_case_names(comparison_junit(compare_analyses(other, other, 0.05))));
  EXPECT_EQ(junit_case_names(xml).front(), "step time");
}

// Bandwidths read as a person writes them at every scale (an 8-byte call once showed "2.25e-06 GB/s").
TEST(TextReport, BandwidthInUnitsThatFit) {
  EXPECT_EQ(collscope::run::format_bandwidth(12.34), "12.3 GB/s");
  EXPECT_EQ(collscope::run::format_bandwidth(0.0412), "0.0412 GB/s");
  EXPECT_EQ(collscope::run::format_bandwidth(0.000512), "512 kB/s");
  EXPECT_EQ(collscope::run::format_bandwidth(2.25e-6), "2.25 kB/s");
  EXPECT_EQ(collscope::run::format_bandwidth(2.5e-8), "25 B/s");
  EXPECT_EQ(collscope::run::format_bandwidth(0), "0 GB/s");
}

TEST(TextReport, WrapsToHundredColumns) {
  EXPECT_EQ(wrap_text("aaa bbb ccc ddd", 12, 2), "aaa bbb ccc\n  ddd");
  EXPECT_EQ(wrap_text("µµµµµ µµµµ", 10, 0), "µµµµµ µµµµ");  // columns, not bytes
  EXPECT_EQ(wrap_text("abcdefghijklmnop", 10, 0), "abcdefghij\nklmnop");  // a word longer than a line is cut
  EXPECT_EQ(wrap_text("one\n  two", 100, 4), "one\n      two");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 10;
  spec.slow_rank = 1;
  spec.slow_ms = 4;
  spec.allreduces_per_step = 40;  // latency-bound too: findings with long evidence
  spec.allreduce_bytes = 64 << 10;
  const auto dir = temp_dir("text");
  collscope::testing::write_synthetic_run(dir.string(), spec);
  const std::string text = text_report(analyze_run(dir.string()));
  EXPECT_NE(text.find("rank 1 is a straggler"), std::string::npos) << text;
  for (std::size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    std::size_t cols = 0;
    for (std::size_t i = a; i < b; ++i) cols += (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80;
    if (text.compare(a, 2, "==") == 0) continue;  // the header names the run directory, whatever its length
    EXPECT_LE(cols, 100u) << text.substr(a, b - a);
  }
}
