// One preload for every MPI ABI: the same C program (mpi_calls_probe.c), built against Open MPI and against
// MPICH, traced with each MPI's own launcher; every call it says it made is in the trace, exactly.
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "../common/run_process.hpp"
#include "probe_account.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::run_process;

namespace {

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");
const std::string kCollscope = kBin + "/collscope";

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-mpi-abi-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::vector<std::string> traced(const fs::path& dir, std::vector<std::string> job) {
  std::vector<std::string> argv = {kCollscope, "trace", "-o", dir.string(), "--"};
  argv.insert(argv.end(), job.begin(), job.end());
  return argv;
}

// Runs the probe with 2 ranks under the tracer and checks every rank's account against its trace file.
void probe_matches_trace(const std::string& name, std::vector<std::string> launcher, const std::string& abi) {
  const auto dir = fresh_dir(name);
  launcher.push_back(kBin + "/" + name);
  const fs::path account = dir.string() + "-account";
  const auto r = run_process(traced(dir, launcher), {{"COLLSCOPE_PROBE_OUT", account.string()}}, 120);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("collscope:"), std::string::npos) << r.err;  // nothing to warn about
  for (int rank : {0, 1}) {
    const std::string said = collscope::testing::account_of(account, rank);
    ASSERT_NE(said.find("rank " + std::to_string(rank) + ": done"), std::string::npos) << said;
    TraceReader trace((dir / rank_file_name(rank)).string());
    EXPECT_EQ(trace.meta_value("mpi_abi").value_or(""), abi);
    collscope::testing::expect_collectives_match(trace, said, rank);
  }
}

}  // namespace

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
TEST(MpiAbi, OpenMpiProgramIsTracedExactly) {
  probe_matches_trace("mpi_calls_probe_openmpi", collscope::testing::mpirun(2), "Open MPI");
}
#endif

#ifdef COLLSCOPE_TEST_MPICH_PROBE
TEST(MpiAbi, MpichProgramIsTracedExactly) {
  probe_matches_trace("mpi_calls_probe_mpich", {COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "2"}, "MPICH");
}
#endif
