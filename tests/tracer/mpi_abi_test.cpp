// One preload for every MPI ABI: the same C program (mpi_calls_probe.c), built against Open MPI and against
// MPICH, traced with each MPI's own launcher; every call it says it made is in the trace, exactly.
#include <gtest/gtest.h>

#include <regex>

#include "probe_account.hpp"

using namespace collscope::testing;

namespace {

// The non-blocking allreduce the probe overlapped with `compute_ns` of computation (between the posting call and
// MPI_Wait): its row spans the computation, and its communication time (inside the posting call and the
// completion calls) excludes it: posting + computation + waiting fit in the row's span.
void expect_overlap_excluded(const ProbeRun& run, int rank) {
  const std::string said = account_of(run.account, rank);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(said, m, std::regex("overlap compute_ns=(\\d+)"))) << said;
  const std::int64_t compute_ns = std::stoll(m[1]);
  collscope::store::TraceReader trace((run.dir / collscope::store::rank_file_name(rank)).string());
  const collscope::store::CollectiveRow* last = nullptr;
  const auto rows = trace.collectives();
  for (const auto& r : rows)
    if (r.op == collscope::store::Op::Iallreduce && r.count == 65536 && (!last || r.seq > last->seq)) last = &r;
  ASSERT_TRUE(last) << "rank " << rank;
  ASSERT_TRUE(last->post_end_ns && last->wait_ns);
  const std::int64_t communication_ns = (*last->post_end_ns - last->start_ns) + *last->wait_ns;
  const std::int64_t span_ns = last->end_ns - last->start_ns;
  EXPECT_GE(span_ns, compute_ns) << "rank " << rank;
  EXPECT_LE(communication_ns + compute_ns, span_ns + 100'000)  // 0.1 ms: the program's clock against the tracer's
      << "rank " << rank << ": the computation counted as communication";
  EXPECT_GT(*last->wait_ns, 0) << "rank " << rank;
  EXPECT_EQ(last->wait_calls.value_or(0), 1) << "rank " << rank;  // one MPI_Wait
}

}  // namespace

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
TEST(MpiAbi, OpenMpiProgramIsTracedExactly) {
  auto job = mpirun(2);
  job.push_back(bin_dir() + "/mpi_calls_probe_openmpi");
  const auto run = run_traced_probe("openmpi", job);
  expect_probe_traced_exactly(run, "Open MPI");
  for (int rank : {0, 1}) expect_overlap_excluded(run, rank);
}
#endif

#ifdef COLLSCOPE_TEST_MPICH_PROBE
TEST(MpiAbi, MpichProgramIsTracedExactly) {
  const auto run =
      run_traced_probe("mpich", {COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "2", bin_dir() + "/mpi_calls_probe_mpich"});
  expect_probe_traced_exactly(run, "MPICH");
  for (int rank : {0, 1}) expect_overlap_excluded(run, rank);
}
#endif
