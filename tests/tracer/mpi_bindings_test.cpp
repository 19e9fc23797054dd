// Every binding a job calls MPI through: Fortran (use mpi, mpif.h, use mpi_f08; Open MPI's bindings call PMPI_X,
// MPICH's call the C MPI_X), Python (mpi4py loads libmpi with RTLD_LOCAL), and an MPI the tracer does not know.
#include <gtest/gtest.h>

#include <sstream>

#include "probe_account.hpp"

using namespace collscope::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> with_launcher(std::vector<std::string> launcher, const std::string& program) {
  launcher.push_back(program);
  return launcher;
}

}  // namespace

#ifdef COLLSCOPE_TEST_FORTRAN_OPEN_MPI
TEST(MpiBindings, OpenMpiFortranUseMpi) {
  expect_probe_traced_exactly(
      run_traced_probe("f-ompi-usempi", with_launcher(mpirun(2), bin_dir() + "/mpi_fortran_probe_openmpi_usempi")),
      "Open MPI");
}
TEST(MpiBindings, OpenMpiFortranMpifH) {
  expect_probe_traced_exactly(
      run_traced_probe("f-ompi-mpifh", with_launcher(mpirun(2), bin_dir() + "/mpi_fortran_probe_openmpi_mpifh")),
      "Open MPI");
}
TEST(MpiBindings, OpenMpiFortranUseMpiF08) {
  expect_probe_traced_exactly(
      run_traced_probe("f-ompi-f08", with_launcher(mpirun(2), bin_dir() + "/mpi_fortran_probe_openmpi_f08")),
      "Open MPI");
}
#endif

#ifdef COLLSCOPE_TEST_FORTRAN_MPICH
TEST(MpiBindings, MpichFortranUseMpi) {
  expect_probe_traced_exactly(
      run_traced_probe("f-mpich-usempi", {COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "2",
                                          bin_dir() + "/mpi_fortran_probe_mpich_usempi"}),
      "MPICH");
}
TEST(MpiBindings, MpichFortranUseMpiF08) {
  expect_probe_traced_exactly(
      run_traced_probe("f-mpich-f08", {COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "2",
                                       bin_dir() + "/mpi_fortran_probe_mpich_f08"}),
      "MPICH");
}
#endif

#ifdef COLLSCOPE_TEST_MPI4PY_PYTHON
TEST(MpiBindings, Mpi4pyLoadsLibmpiLocallyAndIsTraced) {
  expect_probe_traced_exactly(
      run_traced_probe("mpi4py", with_launcher(with_launcher(mpirun(2), COLLSCOPE_TEST_MPI4PY_PYTHON),
                                               COLLSCOPE_TEST_MPI4PY_PROBE)),
      "Open MPI");
}
#endif

// An MPI of an ABI the tracer does not know: the program's calls reach that library untouched (its output is the
// untraced run's), collscope says so in one line, and writes no trace.
TEST(MpiBindings, UnknownMpiRunsUntouchedWithOneWarning) {
  const std::string app = bin_dir() + "/fake_mpi_app";
  const auto plain = run_process({app}, {}, 60);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("allreduce 0 -> 2 4 6"), std::string::npos) << plain.out;
  const auto run = run_traced_probe("unknown-mpi", {app});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.out, plain.out);
  std::istringstream err(run.result.err);
  std::vector<std::string> lines;
  // The preload's lines ("collscope: ..."), not `trace`'s summary after the job ("collscope trace: ...").
  for (std::string l; std::getline(err, l);)
    if (l.starts_with("collscope: ")) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_EQ(lines[0], "collscope: unknown MPI library (FakeMPI 0.1 (collscope test double)): the job runs untraced");
  EXPECT_FALSE(fs::exists(run.dir) && !fs::is_empty(run.dir));
  EXPECT_NE(run.result.err.find("collscope trace: nothing traced"), std::string::npos) << run.result.err;
}

// A function the job's MPI library lacks: the call gets an error code and one line naming it, never a jump to a
// null address.
TEST(MpiBindings, AFunctionTheLibraryLacksReturnsAnError) {
  const auto run = run_traced_probe("missing-function", {bin_dir() + "/fake_mpi_app", "--call-missing"});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("barrier found 16"), std::string::npos) << run.result.out;  // MPI_ERR_OTHER
  EXPECT_NE(run.result.err.find("collscope: MPI_Barrier is not in this job's MPI library"), std::string::npos)
      << run.result.err;
}
