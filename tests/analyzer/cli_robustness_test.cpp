// `collscope analyze` and `compare` through the built binary on runs with hostile or missing content: names that are
// not UTF-8 or that hold markup, a command line whose number does not fit 64 bits, a new run without steps.
// The runs are synthetic (the real TraceWriter), edited with the sqlite3 shell as a corrupt or unusual job would
// leave them.
#include <collscope/testing/synthetic_run.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::test::bin_dir;
using collscope::test::read_file;
using collscope::test::run_collscope;
using collscope::test::shell;
using collscope::test::shell_quote;

namespace {

fs::path root() { return collscope::test::temp_root("collscope-analyzer-cli"); }

// Runs `sql` on every rank file of `run`.
void edit_run(const fs::path& run, const std::string& sql) {
  for (const auto& f : fs::directory_iterator(run)) {
    if (f.path().extension() == ".sqlite") {
      ASSERT_EQ(shell("sqlite3 " + shell_quote(f.path().string()) + " " + shell_quote(sql)), 0) << sql;
    }
  }
}

fs::path synthetic(const fs::path& dir, collscope::testing::SyntheticRunSpec spec = {}) {
  fs::remove_all(dir);
  spec.ranks = 3;
  spec.steps = 12;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  return dir;
}

// Parses JSON strictly (nlohmann's parser rejects ill-formed UTF-8 in strings, as browsers and Python do).
nlohmann::json strict_json(const std::string& text) { return nlohmann::json::parse(text); }

}  // namespace

// A run directory with a Latin-1 byte in its name and a communicator name cut mid-character (the kernel
// cuts names at 15 bytes): the JSON reports are valid JSON with U+FFFD, not `internal error: type_error.316`.
TEST(AnalyzerCli, JsonReportsStayValidWithInvalidUtf8Names) {
  const fs::path dir = root() / "utf8";
  fs::create_directories(dir);
  const fs::path base = synthetic(dir / "base");
  collscope::testing::SyntheticRunSpec slow;
  slow.degraded_from_step = 4;
  slow.degraded_link_gbps = 1;
  const fs::path next = synthetic(dir / "caf\xe9", slow);  // "café" in Latin-1
  edit_run(next, "UPDATE communicators SET name = CAST(X'776f726c642dc3' AS TEXT) WHERE id = 1;");  // "world-" + cut "é"
  ASSERT_EQ(run_collscope(dir, "analyze " + shell_quote(next.filename().string()) + " --format json"), 0) << read_file(dir / "err.txt");
  nlohmann::json report;
  ASSERT_NO_THROW(report = strict_json(read_file(dir / "out.txt"))) << read_file(dir / "out.txt").substr(0, 300);
  EXPECT_EQ(report["run_dir"].get<std::string>().substr(report["run_dir"].get<std::string>().size() - 6), "caf\xef\xbf\xbd");
  bool named = false;
  for (const auto& c : report["communicators"]) named |= c["name"] == "world-\xef\xbf\xbd";
  EXPECT_TRUE(named) << report["communicators"].dump();

  const int rc = run_collscope(dir, "compare base " + shell_quote(next.filename().string()) + " --format json --junit junit.xml");
  ASSERT_TRUE(rc == 0 || rc == 1) << read_file(dir / "err.txt");  // the degraded link may well be a regression
  nlohmann::json comparison;
  ASSERT_NO_THROW(comparison = strict_json(read_file(dir / "out.txt"))) << read_file(dir / "out.txt").substr(0, 300);
  EXPECT_FALSE(comparison["findings_new"].empty()) << comparison.dump();
  // The JUnit file is well-formed XML (UTF-8) for CI's parser.
  EXPECT_EQ(shell("python3 -c 'import sys, xml.etree.ElementTree as t; t.parse(sys.argv[1])' " + shell_quote((dir / "junit.xml").string())), 0)
      << read_file(dir / "junit.xml");
}

// A new run without steps is no "no regression": the gate fails (exit 1) and says why, in the text,
// the JSON and the JUnit file (a failed step_time case).
TEST(AnalyzerCli, CompareWithoutStepsInTheNewRunFailsTheGate) {
  const fs::path dir = root() / "nodata";
  fs::create_directories(dir);
  synthetic(dir / "base");
  edit_run(synthetic(dir / "new"), "DELETE FROM collectives; DELETE FROM nvtx_ranges;");  // the job died after MPI_Init
  EXPECT_EQ(run_collscope(dir, "compare base new --junit junit.xml"), 1) << read_file(dir / "out.txt") << read_file(dir / "err.txt");
  EXPECT_NE(read_file(dir / "out.txt").find("step time: NO DATA: the new run has no steps (the base run has 12)"), std::string::npos)
      << read_file(dir / "out.txt");
  EXPECT_NE(read_file(dir / "out.txt").find("verdict: NO DATA, the gate fails"), std::string::npos) << read_file(dir / "out.txt");
  const std::string junit = read_file(dir / "junit.xml");
  EXPECT_NE(junit.find("name=\"step time\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("type=\"no-data\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
  ASSERT_EQ(run_collscope(dir, "compare base new --format json"), 1);
  const auto j = strict_json(read_file(dir / "out.txt"));
  EXPECT_EQ(j["gate_failed"], true);
  EXPECT_EQ(j["regression"], false);
  EXPECT_NE(j["no_data"].get<std::string>().find("no steps"), std::string::npos);
  // The other way round too; and two runs without collectives have no wall time to compare either.
  EXPECT_EQ(run_collscope(dir, "compare new base"), 1) << read_file(dir / "out.txt");
  EXPECT_NE(read_file(dir / "out.txt").find("the base run has no steps"), std::string::npos) << read_file(dir / "out.txt");
  EXPECT_EQ(run_collscope(dir, "compare new new"), 1) << read_file(dir / "out.txt");
  EXPECT_NE(read_file(dir / "out.txt").find("wall time: NO DATA"), std::string::npos) << read_file(dir / "out.txt");
  // Same runs: still no regression.
  EXPECT_EQ(run_collscope(dir, "compare base base"), 0) << read_file(dir / "out.txt");
}

// A batch size or fusion threshold on the recorded command line too large for 64 bits is unknown, not
// `internal error: stoll`.
TEST(AnalyzerCli, HugeNumbersOnTheRecordedCommandLineAreUnknown) {
  const fs::path dir = root() / "stoll";
  fs::create_directories(dir);
  edit_run(synthetic(dir / "run"),
           "UPDATE meta SET value = 'train --batch-size 99999999999999999999999 --fusion-threshold 77777777777777777777777' "
           "WHERE key = 'command_line'; DELETE FROM meta WHERE key = 'env.HOROVOD_FUSION_THRESHOLD';");
  EXPECT_EQ(run_collscope(dir, "analyze run"), 0) << read_file(dir / "err.txt");
  EXPECT_NE(read_file(dir / "out.txt").find("12 steps"), std::string::npos) << read_file(dir / "out.txt");
  EXPECT_EQ(read_file(dir / "out.txt").find("samples/s"), std::string::npos) << read_file(dir / "out.txt");  // no batch size known
  EXPECT_EQ(run_collscope(dir, "compare run run"), 0) << read_file(dir / "err.txt");
}

// A communicator named with HTML reaches Markdown reports as text, never as markup.
TEST(AnalyzerCli, MarkdownShowsNamesAsText) {
  const fs::path dir = root() / "markdown";
  fs::create_directories(dir);
  synthetic(dir / "base");
  collscope::testing::SyntheticRunSpec slow;
  slow.degraded_from_step = 4;
  slow.degraded_link_gbps = 1;
  edit_run(synthetic(dir / "new", slow),
           "UPDATE communicators SET name = '<img src=x onerror=alert(1)> [x](javascript:alert(2)) `code` | cell' WHERE id = 1;");
  ASSERT_EQ(run_collscope(dir, "analyze new --format markdown"), 0) << read_file(dir / "err.txt");
  const std::string analysis = read_file(dir / "out.txt");
  ASSERT_NE(analysis.find("onerror"), std::string::npos) << analysis;  // the finding names the communicator
  EXPECT_EQ(analysis.find("<img"), std::string::npos) << analysis;
  EXPECT_NE(analysis.find("&lt;img src=x onerror=alert(1)&gt; \\[x\\](javascript:alert(2)) \\`code\\` \\| cell"), std::string::npos)
      << analysis;
  run_collscope(dir, "compare base new --format markdown");
  const std::string comparison = read_file(dir / "out.txt");
  ASSERT_NE(comparison.find("onerror"), std::string::npos) << comparison;
  EXPECT_EQ(comparison.find("<img"), std::string::npos) << comparison;
  EXPECT_EQ(comparison.find("[x](javascript"), std::string::npos) << comparison;
}
