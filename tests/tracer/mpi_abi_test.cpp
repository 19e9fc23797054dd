// One preload for every MPI ABI: the same C program (mpi_calls_probe.c), built against Open MPI and against
// MPICH, traced with each MPI's own launcher; every call it says it made is in the trace, exactly.
#include <gtest/gtest.h>

#include "probe_account.hpp"

using namespace collscope::testing;

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
TEST(MpiAbi, OpenMpiProgramIsTracedExactly) {
  auto job = mpirun(2);
  job.push_back(bin_dir() + "/mpi_calls_probe_openmpi");
  expect_probe_traced_exactly(run_traced_probe("openmpi", job), "Open MPI");
}
#endif

#ifdef COLLSCOPE_TEST_MPICH_PROBE
TEST(MpiAbi, MpichProgramIsTracedExactly) {
  expect_probe_traced_exactly(
      run_traced_probe("mpich", {COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "2", bin_dir() + "/mpi_calls_probe_mpich"}),
      "MPICH");
}
#endif
