// Finished runs read from anywhere: another user, a directory nobody may write, a read-only mount, and the
// readers leave no file behind. A file still being written reads too (the tuner follows live runs).
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "run_process.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::ProcessResult;
using collscope::testing::run_process;

namespace {

const std::string kBin = collscope::test::bin_dir();

class ReadOnly : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("collscope-read-only-test-" + std::to_string(getpid()));
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    // The probe runs as another user, who may not reach the build tree: it gets a copy beside the files.
    probe_ = root_ / "trace_read_probe";
    fs::copy_file(kBin + "/trace_read_probe", probe_, fs::copy_options::overwrite_existing);
  }
  void TearDown() override {
    for (auto& e : fs::recursive_directory_iterator(root_))
      if (e.is_directory()) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(root_);
  }

  // A finished rank file (its writer closed it) with `n` collectives.
  static void write_finished(const fs::path& path, int n) {
    TraceWriter w(path.string());
    add_collectives(w, 0, n);
  }
  static void add_collectives(TraceWriter& w, int from, int to) {
    w.begin();
    for (int i = from; i < to; ++i) {
      CollectiveRow r;
      r.comm = 1;
      r.seq = i;
      r.op = Op::Allreduce;
      r.datatype = w.intern("MPI_FLOAT");
      r.start_ns = 1000 * i;
      r.end_ns = 1000 * i + 10;
      w.add_collective(r);
    }
    w.commit();
  }
  // A directory holding `file`, that only root may write (and root-owned files the others may only read).
  fs::path read_only_dir(const std::string& name, const fs::path& file) {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    fs::copy_file(file, dir / file.filename());
    fs::permissions(dir / file.filename(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                             fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    return dir;
  }
  static std::set<std::string> listing(const fs::path& dir) {
    std::set<std::string> out;
    for (auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
  }
  // Runs the probe as a user who cannot write `root_`'s directories: nobody when we are root, else ourselves.
  ProcessResult probe_as_other_user(const std::vector<std::string>& files) {
    std::vector<std::string> argv;
    if (geteuid() == 0) argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    argv.push_back(probe_.string());
    argv.insert(argv.end(), files.begin(), files.end());
    return run_process(argv, {}, 30);
  }

  fs::path root_;
  fs::path probe_;
};

}  // namespace

TEST_F(ReadOnly, FinishedRunReadsAsAnotherUserAndLeavesNothing) {
  write_finished(root_ / "rank-00000.sqlite", 300);
  EXPECT_EQ(listing(root_), (std::set<std::string>{"rank-00000.sqlite", "trace_read_probe"}))
      << "the writer left files beside its trace";
  const fs::path dir = read_only_dir("run", root_ / "rank-00000.sqlite");
  const auto file = (dir / "rank-00000.sqlite").string();
  const auto r = probe_as_other_user({file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, file + ": 300 collectives, 2 strings, 0 communicators\n") << r.err;
  // Root, who could write there, leaves nothing either.
  EXPECT_EQ(TraceReader(file).collectives().size(), 300u);
  EXPECT_EQ(listing(dir), (std::set<std::string>{"rank-00000.sqlite"}));
}

TEST_F(ReadOnly, FinishedRunReadsInsideAReadOnlyMount) {
  write_finished(root_ / "rank-00003.sqlite", 40);
  const fs::path src = read_only_dir("src", root_ / "rank-00003.sqlite");
  const fs::path mnt = root_ / "mnt";
  fs::create_directories(mnt);
  // A private mount namespace (as root, or as ourselves mapped to root in a user namespace) with the run
  // bind-mounted read-only: writing there fails with EROFS, whoever tries.
  std::vector<std::string> argv = {"unshare", "--mount"};
  if (geteuid() != 0) argv = {"unshare", "--user", "--map-root-user", "--mount"};
  const std::string file = (mnt / "rank-00003.sqlite").string();
  argv.insert(argv.end(), {"sh", "-c",
                           "mount --bind -o ro '" + src.string() + "' '" + mnt.string() +
                               "' || { echo NO-MOUNT; exit 99; }; touch '" + mnt.string() +
                               "/x' 2>/dev/null && exit 98; exec '" + probe_.string() + "' '" + file + "'"});
  const auto r = run_process(argv, {}, 30);
  if (r.exit_code == 99 || r.exit_code == 127 || r.err.find("unshare failed") != std::string::npos)
    GTEST_SKIP() << "no mount namespace here: " << r.out << r.err;
  ASSERT_NE(r.exit_code, 98) << "the bind mount was writable";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, file + ": 40 collectives, 2 strings, 0 communicators\n") << r.err;
}

TEST_F(ReadOnly, LiveFileReadsWhileBeingWrittenAndIsWholeOnceClosed) {
  const fs::path path = root_ / "rank-00001.sqlite";
  {
    TraceWriter w(path.string());
    add_collectives(w, 0, 100);
    {
      TraceReader live(path.string());  // as the tuner follows a run
      EXPECT_EQ(live.collectives().size(), 100u);
    }
    const auto r = probe_as_other_user({path.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, path.string() + ": 100 collectives, 2 strings, 0 communicators\n") << r.err;
    add_collectives(w, 100, 150);
    EXPECT_EQ(TraceReader(path.string()).collectives().size(), 150u);
  }
  EXPECT_EQ(listing(root_), (std::set<std::string>{"rank-00001.sqlite", "trace_read_probe"}));
  const fs::path dir = read_only_dir("run", path);
  const auto r = probe_as_other_user({(dir / "rank-00001.sqlite").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": 150 collectives"), std::string::npos) << r.out << r.err;
}

TEST_F(ReadOnly, KilledWritersFileReadsWhereItLiesOrSaysWhatItNeeds) {
  // What a killed writer leaves: the file in WAL mode, its last batches in -wal, and -shm.
  const fs::path live = root_ / "live";
  fs::create_directories(live);
  const fs::path path = live / "rank-00002.sqlite";
  const fs::path killed = root_ / "killed";
  fs::create_directories(killed);
  {
    TraceWriter w(path.string());
    add_collectives(w, 0, 70);
    for (const char* suffix : {"", "-wal", "-shm"})
      fs::copy_file(path.string() + suffix, killed.string() + "/rank-00002.sqlite" + suffix);
  }
  const std::string file = (killed / "rank-00002.sqlite").string();
  EXPECT_EQ(TraceReader(file).collectives().size(), 70u);  // where its writer wrote it: every committed row
  // Its log moved without its -shm, somewhere nobody may write: SQLite cannot rebuild the index of the log, so
  // the reader says what to do instead of failing obscurely (or reading the main file without the log).
  fs::remove(file + "-shm");
  const fs::path dir = root_ / "killed-read-only";
  fs::create_directories(dir);
  for (const char* suffix : {"", "-wal"}) fs::copy_file(file + suffix, dir.string() + "/rank-00002.sqlite" + suffix);
  fs::permissions(dir, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const auto r = probe_as_other_user({(dir / "rank-00002.sqlite").string()});
  std::cout << "killed writer's file, moved without -shm, read as another user: " << r.out << r.err;
  if (r.exit_code == 0) {
    EXPECT_NE(r.out.find(": 70 collectives"), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("rank-00002.sqlite: its writer did not finish and its last batches are in"),
              std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // Killed right after a checkpoint, its log is empty and everything is in its main file: that reads from
  // anywhere, and nothing appears beside it.
  sqlite::Database(file, sqlite::OpenMode::ReadWrite).exec("PRAGMA wal_checkpoint(TRUNCATE)");
  ASSERT_TRUE(!fs::exists(file + "-wal") || fs::file_size(file + "-wal") == 0);
  const fs::path checkpointed = read_only_dir("checkpointed", file);
  const auto all_in_main = probe_as_other_user({(checkpointed / "rank-00002.sqlite").string()});
  EXPECT_EQ(all_in_main.exit_code, 0) << all_in_main.err;
  EXPECT_NE(all_in_main.out.find(": 70 collectives"), std::string::npos) << all_in_main.out;
  EXPECT_EQ(listing(checkpointed), (std::set<std::string>{"rank-00002.sqlite"}));
}
