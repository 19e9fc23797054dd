// The preload's writer keeps up with OSU-style rates (10 000 back-to-back small allreduces per rank, 2 ranks on
// 2 cores), and when a thread records faster than it can save anyway, each rank says so once at exit with the
// count and the knob that avoids it; the rows written plus the events dropped are exactly the calls made.
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "run_process.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::store::TraceReader;
using collscope::store::rank_file_name;
using collscope::testing::mpirun;
using collscope::testing::run_process;

namespace {

const std::string kBin = collscope::test::bin_dir();

fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("collscope-preload-writer-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

std::vector<std::string> traced_burst(const fs::path& dir, int ranks, long iterations) {
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  for (const auto& a : mpirun(ranks)) argv.push_back(a);
  for (const auto& a : {kBin + "/allreduce_burst", std::string("--iterations"), std::to_string(iterations)})
    argv.push_back(a);
  return argv;
}

}  // namespace

TEST(PreloadWriter, TenThousandBackToBackAllreducesPerRankDropNothing) {
  const auto dir = fresh_dir("osu-rate");
  const auto r = run_process(traced_burst(dir, 2, 10000), {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    TraceReader reader((dir / rank_file_name(rank)).string());
    EXPECT_EQ(reader.meta_int("events_dropped"), 0) << "rank " << rank;
    EXPECT_EQ(reader.row_count("collectives"), 10000 + 2) << "rank " << rank;  // and the two barriers
  }
}

TEST(PreloadWriter, DropsAreCountedExactlyAndReportedOnceAtExit) {
  // One rank (an allreduce costs ~0.1 us) against a 1024-event ring: the thread records many times faster than
  // any writer saves, so most events are dropped, whatever the machine.
  const auto dir = fresh_dir("drops");
  const long calls = 200000;
  const auto r = run_process(traced_burst(dir, 1, calls), {{"COLLSCOPE_RING_EVENTS", "1024"},
                             // CPU samples share the ring and its drop count: off, so the count is the calls alone
                             {"COLLSCOPE_CPU_SAMPLE_US", "0"}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0: 200000 allreduces"), std::string::npos) << r.out;  // the job is unaffected
  const std::regex line(R"(collscope: rank 0 dropped (\d+) events \(a thread recorded faster than the writer could )"
                        R"(save them\); COLLSCOPE_RING_EVENTS=4096 \(now 1024\) gives each thread a larger buffer\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, line)) << r.err;
  EXPECT_EQ(std::regex_search(m.suffix().str(), std::regex("collscope: rank \\d+ dropped")), false) << "said more than once: " << r.err;
  const long dropped = std::stol(m[1]);
  EXPECT_GT(dropped, 0);
  TraceReader reader((dir / rank_file_name(0)).string());
  EXPECT_EQ(reader.meta_int("events_dropped"), dropped);
  // Every call was either written or counted: the two barriers and the allreduces.
  EXPECT_EQ(reader.row_count("collectives") + dropped, calls + 2);
  std::int64_t max_seq = -1;
  reader.for_each<collscope::store::CollectiveRow>(
      collscope::store::columns<&collscope::store::CollectiveRow::seq>(),
      [&](const collscope::store::CollectiveRow& row) { max_seq = std::max(max_seq, row.seq); });
  // Sequence numbers count every call, dropped or not (matching across ranks depends on it): the last written one
  // is far beyond the number of rows written.
  EXPECT_LT(max_seq, calls + 2);
  EXPECT_GT(max_seq, reader.row_count("collectives")) << dropped << " dropped";
}
