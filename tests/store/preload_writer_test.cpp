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

TEST(PreloadWriter, AFullBufferIsFlushedByTheJobThreadAndSaidOnceAtExit) {
  // One rank (an allreduce costs ~0.1 us) with the writer held back and a 1 MiB cap: the thread records far more
  // than its buffers hold, so it writes them out itself. Nothing is lost, and the rank says once how long it waited.
  const auto dir = fresh_dir("flushes");
  const long calls = 200000;
  const auto r = run_process(traced_burst(dir, 1, calls), {{"COLLSCOPE_WRITER_HOLD", "1"}, {"COLLSCOPE_BUFFER_MB", "1"}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0: 200000 allreduces"), std::string::npos) << r.out;  // the job is unaffected
  const std::regex line(R"(collscope: rank 0 waited ([0-9.]+) ms in (\d+) trace flushes \(its trace buffers were full; )"
                        R"(COLLSCOPE_BUFFER_MB=4 gives them more memory than the 1 MiB now\)\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, line)) << r.err;
  EXPECT_FALSE(std::regex_search(m.suffix().str(), std::regex("collscope: rank \\d+ waited"))) << "said twice: " << r.err;
  EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
  TraceReader reader((dir / rank_file_name(0)).string());
  EXPECT_EQ(reader.meta_int("events_dropped"), 0);
  EXPECT_EQ(reader.row_count("collectives"), calls + 2);  // and the two barriers
  EXPECT_EQ(reader.row_count("tracer_flushes"), std::stol(m[2]));
}
