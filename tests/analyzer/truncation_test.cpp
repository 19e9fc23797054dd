// Truncation is not mismatch: rank files cut short at the end (a job killed before each writer's last batch, a
// writer stopped by a full disk, dropped events) give one note per rank naming what is missing and why, never a
// critical "collective mismatch". Synthetic runs written with the real TraceWriter, then cut as those events cut
// them (rows removed from the end, the closing clock reading absent, events_dropped set).
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace collscope::analyzer;
using namespace collscope::testing;

namespace {

fs::path run_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-truncation-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  SyntheticRunSpec spec;  // 4 ranks, 20 steps of 4 world allreduces: seq 0-79
  spec.steps = 20;
  write_synthetic_run(dir.string(), spec);
  return dir;
}

void edit(const fs::path& dir, int rank, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / collscope::store::rank_file_name(rank)).c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// The last `n` world allreduces gone from the rank's file (seq 80 - n .. 79).
std::string drop_last(int n) { return "DELETE FROM collectives WHERE seq >= " + std::to_string(80 - n) + ";"; }
const std::string kNeverClosed = "DELETE FROM meta WHERE key = 'clock_monotonic_end_ns';";

bool has_mismatch(const Analysis& a) {
  for (const auto& f : a.findings)
    if (f.kind == FindingKind::Mismatch) return true;
  return false;
}

}  // namespace

TEST(Truncation, KilledJobEachRankLosingADifferentLastBatchIsNoMismatch) {
  const auto dir = run_dir("killed");
  edit(dir, 1, drop_last(1) + kNeverClosed);
  edit(dir, 2, drop_last(3) + kNeverClosed);
  for (int r : {0, 3}) edit(dir, r, kNeverClosed);
  const Analysis a = analyze_run(dir.string());
  EXPECT_FALSE(has_mismatch(a)) << text_report(a);
  ASSERT_EQ(a.notes.size(), 2u) << text_report(a);
  EXPECT_NE(a.notes[0].find("rank 1's trace lacks its last 1 call(s) on MPI_COMM_WORLD (from seq 79)"), std::string::npos) << a.notes[0];
  EXPECT_NE(a.notes[1].find("rank 2's trace lacks its last 3 call(s) on MPI_COMM_WORLD (from seq 77)"), std::string::npos) << a.notes[1];
  EXPECT_NE(a.notes[1].find("never closed"), std::string::npos) << a.notes[1];
  EXPECT_NE(a.notes[1].find("the others completed allreduce #77"), std::string::npos) << a.notes[1];
  EXPECT_NE(text_report(a).find("note: rank 2's trace"), std::string::npos);
}

TEST(Truncation, RankCutShortOnAClosedFileIsTruncatedWhenTheOthersCompletedItsCalls) {
  // A writer that stopped on a full disk and still closed the file: whole by its meta, yet the others finished
  // allreduces that cannot finish without rank 3.
  const auto dir = run_dir("disk-full");
  edit(dir, 3, drop_last(8));
  const Analysis a = analyze_run(dir.string());
  EXPECT_FALSE(has_mismatch(a)) << text_report(a);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("rank 3's trace lacks its last 8 call(s)"), std::string::npos) << a.notes[0];
  EXPECT_NE(a.notes[0].find("its file ends early; the others completed allreduce #72"), std::string::npos) << a.notes[0];
}

TEST(Truncation, DroppedEventsAreSaid) {
  const auto dir = run_dir("dropped");
  edit(dir, 0, drop_last(2) + "UPDATE meta SET value = '12' WHERE key = 'events_dropped';"
                              "INSERT OR IGNORE INTO meta(key, value) VALUES('events_dropped', '12');");
  const Analysis a = analyze_run(dir.string());
  EXPECT_FALSE(has_mismatch(a)) << text_report(a);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("the tracer dropped 12 of its events"), std::string::npos) << a.notes[0];
}

TEST(Truncation, WholeRunHasNoNotes) {
  const Analysis a = analyze_run(run_dir("whole").string());
  EXPECT_FALSE(has_mismatch(a));
  EXPECT_TRUE(a.notes.empty());
}
