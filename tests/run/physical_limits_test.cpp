// Values out of physical range, where rows become a run (run/physical_limits.hpp) and in the Horovod
// import: each gets one warning naming the file, the table and the row, and is left out of every figure; nothing
// is clamped silently, nothing overflows. Runs are synthetic (the real TraceWriter, known ground truth), edited with
// the sqlite3 shell as a corrupt file would have them; the reports come from the built collscope.
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::test::lines_of;
using collscope::test::read_file;
using collscope::test::run_collscope;
using collscope::test::shell;
using collscope::test::shell_quote;
using nlohmann::json;

namespace {

// 2 GB of address space for the collscope under test; none in a checking build, whose runtime reserves terabytes
// (its ASAN_OPTIONS fail any one allocation over 2 GiB instead: tests/CMakeLists.txt).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
const std::string kAddressSpaceLimit = "";
#else
const std::string kAddressSpaceLimit = "ulimit -v 2000000 && ";
#endif

fs::path root() { return collscope::test::temp_root("collscope-physical-limits"); }

fs::path synthetic(const std::string& name, int ranks = 3) {
  const fs::path dir = root() / name;
  fs::remove_all(dir);
  collscope::testing::SyntheticRunSpec spec;
  spec.ranks = ranks;
  spec.steps = 8;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  return dir;
}

void sql(const fs::path& file, const std::string& statements) {
  ASSERT_EQ(shell("sqlite3 " + shell_quote(file.string()) + " " + shell_quote(statements)), 0) << statements;
}

std::int64_t sql_int(const fs::path& file, const std::string& query) {
  const fs::path out = root() / "query.txt";
  EXPECT_EQ(shell("sqlite3 " + shell_quote(file.string()) + " " + shell_quote(query) + " > " + shell_quote(out.string())), 0);
  return std::stoll(read_file(out));
}

std::vector<std::string> lines_with(const std::vector<std::string>& lines, const std::string& part) {
  std::vector<std::string> out;
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) out.push_back(l);
  return out;
}

}  // namespace

// An end before its start was clamped to a 0 ns call; now the row is left out with one warning naming it, and the
// call keeps its place in its communicator's sequence (no false "rank 1 made fewer calls" mismatch).
TEST(PhysicalLimits, EndBeforeStartIsLeftOutNamingTheRow) {
  const fs::path run = synthetic("end-before-start");
  const fs::path file = run / "rank-00001.sqlite";
  const std::int64_t last = sql_int(file, "SELECT max(id) FROM collectives WHERE comm = 1");
  sql(file, fmt::format("UPDATE collectives SET end_ns = start_ns - 5000000 WHERE id IN (3, {})", last));
  const auto r = collscope::run::load_run(run.string());
  const auto warned = lines_with(r.problems, "rank-00001.sqlite: collectives row 3: end_ns");
  ASSERT_EQ(warned.size(), 1u) << fmt::format("{}", fmt::join(r.problems, "\n"));
  EXPECT_NE(warned[0].find("(2 rows of collectives)"), std::string::npos) << warned[0];
  for (const auto& c : r.ranks[1].collectives) EXPECT_GE(c.end_ns, c.start_ns);
  const auto clocks = collscope::run::ClockAligner().align(r);
  const auto matched = collscope::run::CollectiveMatcher().match(r, clocks);
  EXPECT_TRUE(matched.mismatches.empty()) << matched.mismatches.front().what;
}

// 2^63 bytes made the report print 1.3e15 GB/s; a one-day call inside a run of a few seconds was accepted.
TEST(PhysicalLimits, ImpossibleBytesAndDayLongCallsAreLeftOut) {
  const fs::path run = synthetic("bytes-and-day");
  sql(run / "rank-00000.sqlite", "UPDATE collectives SET bytes = 9223372036854775807 WHERE id = 5");
  sql(run / "rank-00002.sqlite", "UPDATE collectives SET end_ns = start_ns + 86400000000000 WHERE id = 9");
  ASSERT_EQ(run_collscope(root(), "analyze bytes-and-day --format json"), 0) << read_file(root() / "err.txt");
  const auto err = lines_of(read_file(root() / "err.txt"));
  EXPECT_EQ(lines_with(err, "rank-00000.sqlite: collectives row 5: bytes 9223372036854775807 is outside").size(), 1u)
      << read_file(root() / "err.txt");
  EXPECT_EQ(lines_with(err, "rank-00002.sqlite: collectives row 9: end_ns").size(), 1u) << read_file(root() / "err.txt");
  const json report = json::parse(read_file(root() / "out.txt"));
  // Every bandwidth in the report is one the synthetic link (10 GB/s) can give.
  std::function<void(const json&, const std::string&)> walk = [&](const json& j, const std::string& key) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) walk(it.value(), it.key());
    } else if (j.is_array()) {
      for (const auto& e : j) walk(e, key);
    } else if (j.is_number() && key.find("gbps") != std::string::npos) {
      EXPECT_LT(j.get<double>(), 100.0) << key;
    }
  };
  walk(report, "");
}

// clock_realtime_start_ns = INT64_MIN made the export drop 2 of 3 ranks; an anchor no clock gives is not used (one
// warning), and every rank is placed by the others' anchors and the collectives.
TEST(PhysicalLimits, ImpossibleAnchorIsNotUsedAndEveryRankExports) {
  const fs::path run = synthetic("anchor");
  sql(run / "rank-00001.sqlite", "UPDATE meta SET value = '-9223372036854775808' WHERE key = 'clock_realtime_start_ns'");
  sql(run / "rank-00002.sqlite", "UPDATE meta SET value = '9223372036854775807' WHERE key = 'clock_monotonic_end_ns'");
  ASSERT_EQ(run_collscope(root(), "export anchor -o anchor.json"), 0) << read_file(root() / "err.txt");
  const auto err = lines_of(read_file(root() / "err.txt"));
  EXPECT_EQ(lines_with(err, "rank-00001.sqlite: meta clock_realtime_start_ns = -9223372036854775808").size(), 1u)
      << read_file(root() / "err.txt");
  EXPECT_EQ(lines_with(err, "rank-00002.sqlite: meta clock_monotonic_end_ns = 9223372036854775807").size(), 1u)
      << read_file(root() / "err.txt");
  const json trace = json::parse(read_file(root() / "anchor.json"));
  std::set<int> pids;
  double last_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    pids.insert(e["pid"].get<int>());
    last_us = std::max(last_us, e["ts"].get<double>());
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2}));
  EXPECT_LT(last_us, 60e6);  // the synthetic run lasts under a minute: nobody is placed years away
}

// seq 2^31 - 1 sized the matcher's call index at 8.4 GB; a world of a million ranks printed a million lines.
TEST(PhysicalLimits, SeqBeyondTheFileAndHugeWorldsStaySmallAndFast) {
  const fs::path run = synthetic("seq-and-world");
  sql(run / "rank-00001.sqlite", "UPDATE collectives SET seq = 2147483647 WHERE id = 7");
  sql(run / "rank-00002.sqlite", "UPDATE meta SET value = '1000000' WHERE key = 'world_size'");
  const auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(shell("cd " + shell_quote(root().string()) + " && " + kAddressSpaceLimit +
                  shell_quote(collscope::test::bin_dir() + "/collscope") + " analyze seq-and-world > out.txt 2> err.txt"),
            0)
      << read_file(root() / "err.txt");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0);
  const auto err = lines_of(read_file(root() / "err.txt"));
  EXPECT_EQ(lines_with(err, "rank-00001.sqlite: collectives row 7: seq 2147483647 beyond").size(), 1u)
      << read_file(root() / "err.txt");
  EXPECT_LT(err.size(), 20u);
  EXPECT_EQ(lines_with(err, "999989 more rank files missing (world size 1000000, 3 files read)").size(), 1u)
      << read_file(root() / "err.txt");
}

// A Horovod timeline of 2 ranks, one tensor reduced per step, the last operation with `shape`, one tick named
// `tick` (the formats tests' event sequence).
std::string timeline(const std::string& shape, const std::string& tick = "1") {
  std::string out = "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"grad\"}},\n";
  std::int64_t ts = 100;
  for (int s = 0; s < 6; ++s, ts += 100)
    out += fmt::format(
        "{{\"ph\": \"B\", \"name\": \"NEGOTIATE_ALLREDUCE\", \"ts\": {0}, \"pid\": 1}},\n"
        "{{\"ph\": \"X\", \"name\": \"0\", \"ts\": {0}, \"pid\": 1, \"dur\": 0}},\n"
        "{{\"ph\": \"X\", \"name\": \"{5}\", \"ts\": {1}, \"pid\": 1, \"dur\": 0}},\n"
        "{{\"ph\": \"E\", \"ts\": {1}, \"pid\": 1}},\n"
        "{{\"ph\": \"B\", \"name\": \"ALLREDUCE\", \"ts\": {2}, \"pid\": 1}},\n"
        "{{\"ph\": \"B\", \"name\": \"MPI_ALLREDUCE\", \"ts\": {2}, \"pid\": 1}},\n"
        "{{\"ph\": \"E\", \"ts\": {3}, \"pid\": 1}},\n"
        "{{\"ph\": \"E\", \"ts\": {3}, \"pid\": 1, \"args\": {{\"dtype\": \"HOROVOD_FLOAT32\", \"shape\": \"{4}\"}}}},\n",
        ts, ts + 10, ts + 20, ts + 80, s == 5 ? shape : "[1024]", s == 2 ? tick : "1");
  return out + "{\"ph\": \"i\", \"name\": \"CYCLE_START\", \"ts\": " + std::to_string(ts) + ", \"s\": \"g\"}\n]\n";
}

// Timeline shapes overflowed to negative bytes; now such an operation is left out of the import with one warning.
TEST(PhysicalLimits, TimelineShapeBeyondAnyTensorIsLeftOut) {
  const fs::path dir = root() / "shape";
  fs::create_directories(dir);
  std::ofstream(dir / "timeline.json") << timeline("[4294967296, 4294967296, 4294967296]");
  ASSERT_EQ(run_collscope(dir, "import timeline.json -o run"), 0) << read_file(dir / "err.txt");
  const auto err = lines_of(read_file(dir / "err.txt"));
  EXPECT_EQ(lines_with(err, "timeline.json: event").size(), 1u) << read_file(dir / "err.txt");
  EXPECT_EQ(lines_with(err, "has more than 2^48 elements").size(), 1u) << read_file(dir / "err.txt");
  for (const char* f : {"rank-00000.sqlite", "rank-00001.sqlite"}) {
    EXPECT_EQ(sql_int(dir / "run" / f, "SELECT count(*) FROM collectives WHERE bytes < 0 OR bytes > 4096"), 0) << f;
    EXPECT_EQ(sql_int(dir / "run" / f, "SELECT count(*) FROM collectives"), 5) << f;
  }
}

// One tick named "100000" made the import write 100 001 rank files; it is one line naming the file, at once.
TEST(PhysicalLimits, TimelineTickOfAnImpossibleRankIsOneLine) {
  const fs::path dir = root() / "tick";
  fs::create_directories(dir);
  std::ofstream(dir / "timeline.json") << timeline("[1024]", "100000");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(run_collscope(dir, "import timeline.json -o run"), 2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 2.0);
  const std::string err = read_file(dir / "err.txt");
  EXPECT_TRUE(err.starts_with("collscope: timeline.json: a negotiation tick names rank 100000")) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(fs::exists(dir / "run" / "rank-00002.sqlite"));
}
