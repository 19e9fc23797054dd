// `collscope analyze` started by a launcher: which process of how many this one is (the launchers' variables), and
// under real Open MPI (2 and 3 processes) and MPICH (3), every process reads a share of the rank files over the
// launcher's MPI and process 0 writes one report identical to the one-process report; where no MPI library can be
// used, process 0 works alone and the others stop, each saying on stderr what it does.
#include <collscope/cluster/launcher_process.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "run_process.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::cluster::launcher_process;
using collscope::test::read_file;
using collscope::test::run_collscope;
using collscope::test::shell_quote;

namespace {

using Variables = std::map<std::string, std::string>;

// Sets the given variables, unsets every other launcher variable, and puts them all back when it goes.
class LauncherEnvironment {
 public:
  explicit LauncherEnvironment(const Variables& set) {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID",
                             "SLURM_NTASKS", "PMIX_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      else saved_[name] = std::nullopt;
      ::unsetenv(name);
    }
    for (const auto& [name, value] : set) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~LauncherEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

// The JSON report without the one figure that differs between any two analyses: how long it took.
nlohmann::json without_timing(const std::string& text) {
  auto j = nlohmann::json::parse(text);
  j["summary"].erase("analysis_seconds");
  return j;
}

// A synthetic run of `ranks` ranks and `steps` steps at DIR/NAME, with rank `slow_rank` 4 ms slower every step
// (none: -1); its path.
std::string write_run(const fs::path& dir, const std::string& name, int ranks, int steps, int slow_rank = -1) {
  collscope::testing::SyntheticRunSpec spec;
  spec.ranks = ranks;
  spec.steps = steps;
  spec.slow_rank = slow_rank;
  spec.slow_ms = slow_rank >= 0 ? 4 : 0;
  collscope::testing::write_synthetic_run((dir / name).string(), spec);
  return (dir / name).string();
}

}  // namespace

TEST(LauncherProcess, ReadsEachLaunchersVariables) {
  {
    LauncherEnvironment env(Variables{});
    EXPECT_FALSE(launcher_process());
  }
  {
    LauncherEnvironment env(
        Variables{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    const auto p = launcher_process();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rank, 2);
    EXPECT_EQ(p->size, 3);
    EXPECT_EQ(p->local_size, 2);  // processes on this host: process 0's loader threads
    EXPECT_EQ(p->launcher, "mpirun (Open MPI)");
  }
  {
    LauncherEnvironment env(Variables{{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}});
    const auto p = launcher_process();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->size, 4);
    EXPECT_EQ(p->launcher, "mpirun (PMI)");
  }
  {
    LauncherEnvironment env(Variables{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "8"}});
    const auto p = launcher_process();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rank, 1);
    EXPECT_EQ(p->size, 8);
    EXPECT_EQ(p->launcher, "srun");
  }
  {
    LauncherEnvironment env(Variables{{"PMIX_RANK", "5"}});
    const auto p = launcher_process();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rank, 5);
    EXPECT_EQ(p->size, 0);  // PMIx alone does not say how many
    EXPECT_EQ(p->local_size, 0);
  }
  {
    LauncherEnvironment env(Variables{{"OMPI_COMM_WORLD_RANK", "two"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
    const auto p = launcher_process();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->launcher, "srun");  // a rank that is not a number is no launcher's
  }
}

// A run with a known straggler (rank 2, 4 ms more compute every step) analysed by one process, then by mpirun with 2
// and 3 processes of Open MPI and 3 of MPICH, each reading a share of the 5 rank files: the same report byte for
// byte (text), the same JSON but for the analysis's own duration.
TEST(AnalyzeUnderMpirun, ProcessesShareTheLoadAndProcessZeroWritesTheOneProcessReport) {
  const fs::path dir = collscope::test::fresh_dir("collscope-analyze-launcher", "run");
  write_run(dir, "run", 5, 30, 2);
  // The run by its full path, as mpirun is given it below (the reports name it).
  const std::string run = shell_quote((dir / "run").string());
  ASSERT_EQ(run_collscope(dir, "analyze " + run + " -o one.txt"), 0) << read_file(dir / "err.txt");
  EXPECT_EQ(read_file(dir / "err.txt"), "");  // no launcher: nothing said about modes
  ASSERT_EQ(run_collscope(dir, "analyze " + run + " --format json -o one.json"), 0) << read_file(dir / "err.txt");
  const std::string one_text = read_file(dir / "one.txt");
  ASSERT_NE(one_text.find("rank 2"), std::string::npos) << one_text;  // the straggler is named
  const std::string collscope = collscope::test::bin_dir() + "/collscope";
  struct Launch {
    std::vector<std::string> argv;
    std::string launcher, library;
  };
  std::vector<Launch> launches = {{collscope::testing::mpirun(2), "mpirun (Open MPI)", "libmpi.so.40"},
                                  {collscope::testing::mpirun(3), "mpirun (Open MPI)", "libmpi.so.40"}};
#ifdef COLLSCOPE_TEST_MPICH_MPIRUN
  launches.push_back({{COLLSCOPE_TEST_MPICH_MPIRUN, "-np", "3"}, "mpirun (PMI)", "libmpich.so.12"});
#endif
  for (const Launch& launch : launches) {
    const int processes = std::stoi(launch.argv[2]);
    const std::string name = launch.library + "-" + std::to_string(processes);
    SCOPED_TRACE(name);
    // `mpirun -np N collscope analyze RUN ARGS...`: its stderr; the test fails when it does not exit 0.
    auto analyze_under_mpirun = [&](std::vector<std::string> args) {
      auto argv = launch.argv;
      argv.insert(argv.end(), {collscope, "analyze", (dir / "run").string()});
      argv.insert(argv.end(), args.begin(), args.end());
      const auto r = collscope::testing::run_process(argv);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      return r.err;
    };
    const fs::path text = dir / (name + ".txt");
    const std::string err = analyze_under_mpirun({"-o", text.string()});
    EXPECT_EQ(read_file(text), one_text);
    EXPECT_NE(err.find(fmt::format("collscope analyze: process 0 of {} under {}: each process reads a share of the "
                                   "rank files with 1 loader thread(s) (MPI: {}); process 0 analyses and writes the "
                                   "report", processes, launch.launcher, launch.library)),
              std::string::npos) << err;
    // 5 files shared out: 3 processes read 2, 2 and 1 (equal files, the lowest processes first).
    const std::string shares = processes == 2 ? R"(3 file\(s\); 2 file\(s\), .* sent)"
                                              : R"(2 file\(s\); 2 file\(s\), .* sent; 1 file\(s\), .* sent)";
    EXPECT_TRUE(std::regex_search(err, std::regex("collscope analyze: .*/run loaded by " + std::to_string(processes) +
                                                  " processes in [0-9.]+ s \\(" + shares + "\\)")))
        << err;
    EXPECT_EQ(err.find("stops"), std::string::npos) << err;  // no process stops: each has its share
    const fs::path json = dir / (name + ".json");
    analyze_under_mpirun({"--format", "json", "-o", json.string()});
    EXPECT_EQ(without_timing(read_file(json)), without_timing(read_file(dir / "one.json")));
  }
}

// Where the launcher's MPI cannot be opened (COLLSCOPE_MPI_LIBRARY names a file that is not there), process 0
// analyses alone and writes the same report; the others say why and stop.
TEST(AnalyzeUnderMpirun, WithoutAnMpiToShareTheLoadProcessZeroWorksAlone) {
  const fs::path dir = collscope::test::fresh_dir("collscope-analyze-launcher", "alone");
  write_run(dir, "run", 4, 20, 1);
  ASSERT_EQ(run_collscope(dir, "analyze " + shell_quote((dir / "run").string()) + " -o one.txt"), 0)
      << read_file(dir / "err.txt");
  auto argv = collscope::testing::mpirun(3);
  argv.insert(argv.end(), {"-x", "COLLSCOPE_MPI_LIBRARY=/nonexistent/libmpi.so", collscope::test::bin_dir() + "/collscope",
                           "analyze", (dir / "run").string(), "-o", (dir / "three.txt").string()});
  const auto r = collscope::testing::run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir / "three.txt"), read_file(dir / "one.txt"));
  const std::string why = "(collscope: no MPI library opens here (tried /nonexistent/libmpi.so))";
  EXPECT_NE(r.err.find("collscope analyze: process 0 of 3 under mpirun (Open MPI): works alone here"),
            std::string::npos) << r.err;
  for (int p = 1; p < 3; ++p)
    EXPECT_NE(r.err.find(fmt::format("collscope analyze: process {} of 3 under mpirun (Open MPI): process 0 does the "
                                     "work; this one stops {}", p, why)),
              std::string::npos) << r.err;
}

// compare under mpirun -np 2: both processes read a share of each run, process 0 compares and gives the exit code
// (1: the new run's straggler is a new finding); the comparison is the one-process comparison, byte for byte.
TEST(AnalyzeUnderMpirun, CompareGivesTheOneProcessVerdict) {
  const fs::path dir = collscope::test::fresh_dir("collscope-analyze-launcher", "compare");
  const std::string base = write_run(dir, "base", 4, 30), next = write_run(dir, "new", 4, 30, 1);
  ASSERT_EQ(run_collscope(dir, "compare " + shell_quote(base) + " " + shell_quote(next) + " -o one.txt"), 1)
      << read_file(dir / "err.txt");
  auto argv = collscope::testing::mpirun(2);
  argv.insert(argv.end(), {collscope::test::bin_dir() + "/collscope", "compare", base, next, "-o", (dir / "two.txt").string()});
  const auto r = collscope::testing::run_process(argv);
  EXPECT_NE(r.exit_code, 0) << r.err;  // mpirun passes on process 0's 1
  EXPECT_EQ(read_file(dir / "two.txt"), read_file(dir / "one.txt"));
  for (const auto& run : {base, next})
    EXPECT_NE(r.err.find("collscope compare: " + run + " loaded by 2 processes"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stops"), std::string::npos) << r.err;
}

// Commands that process 0 does alone under a launcher (export, predict): one output, the one-process output byte for
// byte, and the other process says it stops, instead of both doing the same work into the same file.
TEST(AnalyzeUnderMpirun, ExportAndPredictRunInProcessZeroAlone) {
  const fs::path dir = collscope::test::fresh_dir("collscope-analyze-launcher", "export");
  const std::string run = write_run(dir, "run", 4, 20);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"export", run}, std::vector<std::string>{"predict", run, "--set", "HOROVOD_CYCLE_TIME=5"}}) {
    SCOPED_TRACE(command[0]);
    std::string args;
    for (const auto& a : command) args += " " + shell_quote(a);
    ASSERT_EQ(run_collscope(dir, args.substr(1) + " -o one.out"), 0) << read_file(dir / "err.txt");
    auto argv = collscope::testing::mpirun(2);
    argv.push_back(collscope::test::bin_dir() + "/collscope");
    argv.insert(argv.end(), command.begin(), command.end());
    argv.insert(argv.end(), {"-o", (dir / "two.out").string()});
    const auto r = collscope::testing::run_process(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(dir / "two.out"), read_file(dir / "one.out"));
    EXPECT_NE(r.err.find("collscope " + command[0] + ": process 1 of 2 under mpirun (Open MPI): process 0 does the "
                         "work; this one stops"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("collscope " + command[0] + ": process 0 of 2 under mpirun (Open MPI): works alone here"),
              std::string::npos) << r.err;
  }
}

// Processes that do not see the run's files (another host's filesystem; here another working directory and a relative
// run path, mpirun's MPMD form) send their share's files back unread, and process 0 reads them itself: the report is
// the one-process report, not one with ranks missing.
TEST(AnalyzeUnderMpirun, FilesOtherProcessesCannotReadAreReadByProcessZero) {
  const fs::path dir = collscope::test::fresh_dir("collscope-analyze-launcher", "unseen");
  fs::create_directories(dir / "sees");
  fs::create_directories(dir / "elsewhere");
  write_run(dir / "sees", "run", 6, 20, 1);  // 2 files per process: each other one sends 2 back unread
  ASSERT_EQ(run_collscope(dir / "sees", "analyze run -o ../one.txt"), 0) << read_file(dir / "sees" / "err.txt");
  const std::string collscope = collscope::test::bin_dir() + "/collscope", out = (dir / "three.txt").string();
  auto argv = collscope::testing::mpirun(1);
  argv.insert(argv.end(), {"-wdir", (dir / "sees").string(), collscope, "analyze", "run", "-o", out, ":", "-np", "2",
                           "-wdir", (dir / "elsewhere").string(), collscope, "analyze", "run", "-o", out});
  const auto r = collscope::testing::run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir / "three.txt"), read_file(dir / "one.txt"));
  EXPECT_NE(r.err.find("collscope analyze: run loaded by 3 processes in "), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(\(2 file\(s\); 0 file\(s\), [^;]* sent; 0 file\(s\), [^;]* sent; )"
                                                  R"(4 file\(s\) the others could not read, read by process 0\))")))
      << r.err;
}
