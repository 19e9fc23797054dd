// Sequence numbers survive dropped events. A burst of calls overflows the thread's ring (the writer is told to
// drain only every 400 ms: COLLSCOPE_EARLY_WAKE=0), so most of its events are dropped; every call still takes its
// number, so the calls after the burst carry the numbers they have on every other rank (matching relies on it).
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "../common/absent_dir.hpp"
#include "../common/run_process.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::run_process;

namespace {

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");
constexpr long kBurst = 20000;

fs::path fresh_dir(const std::string& name) { return collscope::testing::absent_dir("collscope-seq-drops-test", name); }

collscope::testing::ProcessResult trace(const fs::path& dir, std::vector<std::string> job) {
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  argv.insert(argv.end(), job.begin(), job.end());
  // The smallest ring (1024 events) and a writer that drains only on its 400 ms timer: the burst overflows the ring
  // whenever the timer fires (the default 16384-event ring could hold most of it between two drains).
  return run_process(argv, {{"COLLSCOPE_EARLY_WAKE", "0"}, {"COLLSCOPE_FLUSH_MS", "400"}, {"COLLSCOPE_RING_EVENTS", "1024"},
                      // CPU samples share the ring and its drop count: off, so the count is the calls alone
                      {"COLLSCOPE_CPU_SAMPLE_US", "0"}},
                     120);
}

// The rows of the communicator named `comm_name`: burst + 10 calls, most dropped, the last 10 numbered
// kBurst .. kBurst + 9, no number twice, and every call either a row or counted as dropped.
void expect_numbers_survive_drops(const fs::path& file, const std::string& comm_name) {
  TraceReader reader(file.string());
  std::int64_t comm = -1;
  for (const auto& c : reader.communicators())
    if (c.name == comm_name) comm = c.id;
  ASSERT_GE(comm, 0) << file;
  std::vector<std::int64_t> seqs;
  for (const auto& c : reader.collectives())
    if (c.comm == comm) seqs.push_back(c.seq);
  std::sort(seqs.begin(), seqs.end());
  const std::int64_t dropped = reader.meta_int("events_dropped").value_or(-1);
  EXPECT_GT(dropped, 0) << file << ": the burst was meant to overflow the ring";
  EXPECT_EQ(static_cast<std::int64_t>(seqs.size()) + dropped, kBurst + 10) << file;
  EXPECT_EQ(std::set<std::int64_t>(seqs.begin(), seqs.end()).size(), seqs.size()) << file;
  ASSERT_GE(seqs.size(), 10u) << file;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seqs[seqs.size() - 10 + i], kBurst + i) << file;
}

}  // namespace

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
TEST(SeqAcrossDrops, MpiCallsAfterABurstKeepTheirNumbersOnEveryRank) {
  const auto dir = fresh_dir("mpi");
  auto job = collscope::testing::mpirun(2);
  job.insert(job.end(), {kBin + "/mpi_calls_probe_openmpi", "--burst", std::to_string(kBurst)});
  const auto r = trace(dir, job);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank : {0, 1}) expect_numbers_survive_drops(dir / rank_file_name(rank), "MPI_COMM_WORLD");
}
#endif

#ifdef COLLSCOPE_TEST_NCCL_BURST_PROBE
TEST(SeqAcrossDrops, NcclCallsAfterABurstKeepTheirNumbers) {
  const auto dir = fresh_dir("nccl");
  const auto r = trace(dir, {kBin + "/nccl_burst_probe", std::to_string(kBurst)});
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("burst 20010 calls"), std::string::npos) << r.out;
  expect_numbers_survive_drops(dir / rank_file_name(1), "nccl");
}
#endif
