// The preload links nothing a traced job might lack, and hides the SQLite and fmt it carries: its NEEDED
// entries are the C and C++ runtimes only, and a job that links its own SQLite keeps using its own.
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "run_process.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::testing::env_or;
using collscope::testing::mpirun;
using collscope::testing::run_process;
using collscope::test::lines_of;

namespace {

const std::string kBin = collscope::test::bin_dir();
const std::string kPreload = env_or("COLLSCOPE_PRELOAD", kBin + "/../lib/libcollscope-preload.so");

}  // namespace

TEST(PreloadLink, NeedsOnlyTheCAndCxxRuntimes) {
  ASSERT_TRUE(fs::exists(kPreload)) << kPreload;
  const auto r = run_process({"readelf", "-d", "-W", kPreload}, {}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::set<std::string> allowed = {"libc.so.6",   "libm.so.6",      "libdl.so.2",
                                         "libpthread.so.0", "libstdc++.so.6", "libgcc_s.so.1"};
  const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  int entries = 0;
  for (const auto& line : lines_of(r.out)) {
    std::smatch m;
    if (!std::regex_search(line, m, needed)) continue;
    ++entries;
    EXPECT_TRUE(allowed.count(m[1])) << kPreload << " needs " << m[1]
                                     << ": a node without it would refuse the preload and run the job untraced";
  }
  EXPECT_GE(entries, 1) << r.out;
}

TEST(PreloadLink, ExportsNoSqliteOrFmtSymbol) {
  const auto r = run_process({"readelf", "--dyn-syms", "-W", kPreload}, {}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int defined = 0;
  for (const auto& line : lines_of(r.out)) {
    std::istringstream in(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(in >> num >> value >> size >> type >> bind >> vis >> ndx >> name) || ndx == "UND" || ndx == "Ndx") continue;
    ++defined;
    EXPECT_EQ(name.find("sqlite3"), std::string::npos) << "exported: " << name;
    EXPECT_EQ(name.find("3fmt"), std::string::npos) << "exported: " << name;  // fmt:: in a mangled name
  }
  EXPECT_GT(defined, 10);  // the MPI wrappers at least
}

TEST(PreloadLink, AJobWithItsOwnSqliteKeepsItAndIsTraced) {
  const std::string job = kBin + "/sqlite_job";
  ASSERT_TRUE(fs::exists(job)) << job;
  const auto dir = fs::temp_directory_path() / ("collscope-preload-link-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "job");
  const int rows = 200;
  auto argv = std::vector<std::string>{kBin + "/collscope", "trace", "-o", (dir / "run").string(), "--"};
  for (const auto& a : mpirun(2)) argv.push_back(a);
  for (const auto& a : {job, (dir / "job").string(), std::to_string(rows)}) argv.push_back(a);
  const auto r = run_process(argv, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0: sqlite "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libcollscope-preload"), std::string::npos) << "the job's SQLite calls reached the preload: " << r.out;
  // A finished run is its rank files alone: no -wal or -shm beside them, before or after reading.
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "run")) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite"}));
  for (int rank = 0; rank < 2; ++rank) {
    collscope::store::TraceReader reader((dir / "run" / collscope::store::rank_file_name(rank)).string());
    EXPECT_EQ(reader.row_count("collectives"), rows);
  }
  files.clear();
  for (const auto& e : fs::directory_iterator(dir / "run")) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite"}));
  fs::remove_all(dir);
}
