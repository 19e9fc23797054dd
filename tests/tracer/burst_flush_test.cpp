// A burst far larger than the trace buffers, with the writer thread held back (COLLSCOPE_WRITER_HOLD=1: it never
// drains, as if it got no CPU) and a 1 MiB buffer cap (16 chunks): the recording threads must write the events out
// themselves (tracer flushes, each recorded in tracer_flushes), and nothing is lost: every call is a row, numbered
// exactly, and events_dropped is 0.
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

fs::path fresh_dir(const std::string& name) { return collscope::testing::absent_dir("collscope-burst-flush-test", name); }

collscope::testing::ProcessResult trace(const fs::path& dir, std::vector<std::string> job) {
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  argv.insert(argv.end(), job.begin(), job.end());
  return run_process(argv, {{"COLLSCOPE_WRITER_HOLD", "1"}, {"COLLSCOPE_BUFFER_MB", "1"}}, 120);
}

// The rows of the communicator named `comm_name`: burst + 10 calls, numbered 0 .. burst + 9 with none missing or
// twice; no event dropped; and the trace says when the job's threads flushed and how many events each flush wrote.
void expect_every_call_kept(const fs::path& file, const std::string& comm_name) {
  TraceReader reader(file.string());
  std::int64_t comm = -1;
  for (const auto& c : reader.communicators())
    if (c.name == comm_name) comm = c.id;
  ASSERT_GE(comm, 0) << file;
  std::vector<std::int64_t> seqs;
  for (const auto& c : reader.collectives())
    if (c.comm == comm) seqs.push_back(c.seq);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(reader.meta_int("events_dropped").value_or(-1), 0) << file;
  ASSERT_EQ(static_cast<std::int64_t>(seqs.size()), kBurst + 10) << file;
  for (std::int64_t i = 0; i < kBurst + 10; ++i)
    if (seqs[i] != i) FAIL() << file << ": call " << i << " has number " << seqs[i];
  // 1 MiB holds 16 chunks of 512 events: a burst of 20 000 calls cannot fit, so the threads flushed, at least once
  // per 16 chunks' worth, each flush writing events out.
  std::int64_t flushes = 0, flushed = 0;
  reader.for_each<TracerFlushRow>(columns<&TracerFlushRow::start_ns, &TracerFlushRow::end_ns, &TracerFlushRow::events>(),
                                  [&](const TracerFlushRow& f) {
                                    ++flushes;
                                    flushed += f.events;
                                    EXPECT_GE(f.end_ns, f.start_ns);
                                  });
  EXPECT_GE(flushes, kBurst / (16 * 512)) << file;
  EXPECT_GT(flushed, 0) << file;
}

}  // namespace

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
TEST(NeverDrop, MpiBurstBeyondTheBuffersWithTheWriterHeldLosesNothing) {
  const auto dir = fresh_dir("mpi");
  auto job = collscope::testing::mpirun(2);
  job.insert(job.end(), {kBin + "/mpi_calls_probe_openmpi", "--burst", std::to_string(kBurst)});
  const auto r = trace(dir, job);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank : {0, 1}) expect_every_call_kept(dir / rank_file_name(rank), "MPI_COMM_WORLD");
}
#endif

#ifdef COLLSCOPE_TEST_NCCL_BURST_PROBE
TEST(NeverDrop, NcclBurstBeyondTheBuffersWithTheWriterHeldLosesNothing) {
  const auto dir = fresh_dir("nccl");
  const auto r = trace(dir, {kBin + "/nccl_burst_probe", std::to_string(kBurst)});
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("burst 20010 calls"), std::string::npos) << r.out;
  expect_every_call_kept(dir / rank_file_name(1), "nccl");
}
#endif
