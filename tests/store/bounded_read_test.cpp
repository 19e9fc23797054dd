// One bad value in a rank file costs a one-line InputError naming the file and the value, within a second:
// never gigabytes (a string id far beyond the table, an absurd world size) or a reader blocked forever (a FIFO).
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>

namespace fs = std::filesystem;
using namespace collscope::store;

namespace {

fs::path temp_dir() { return collscope::test::temp_root("collscope-bounded-read-test"); }

std::string sample(const std::string& name) {
  const auto path = (temp_dir() / name).string();
  TraceWriter w(path);
  w.begin();
  w.set_meta(meta_key::kWorldRank, "1");
  w.set_meta(meta_key::kWorldSize, "4");
  CollectiveRow r;
  r.comm = 1;
  r.datatype = w.intern("MPI_FLOAT");
  w.add_collective(r);
  w.commit();
  return path;
}

void edit(const std::string& path, const std::string& sql) {
  sqlite::Database(path, sqlite::OpenMode::ReadWrite).exec(sql);
}

// The InputError `read` throws, checked to be one line and to come within a second.
std::string refusal(const std::function<void()>& read) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    read();
  } catch (const collscope::InputError& e) {
    msg = e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg;
}

// The address space a test may use: a refusal must not need gigabytes first. Not in a sanitizer build, whose
// runtime reserves terabytes of address space; there max_allocation_size_mb (tests/CMakeLists.txt) fails any one
// allocation over 2 GiB instead.
struct AddressSpaceLimit {
  explicit AddressSpaceLimit(rlim_t bytes) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;
#endif
    getrlimit(RLIMIT_AS, &saved);
    rlimit l = saved;
    l.rlim_cur = bytes;
    set = setrlimit(RLIMIT_AS, &l) == 0;
  }
  ~AddressSpaceLimit() {
    if (set) setrlimit(RLIMIT_AS, &saved);
  }
  rlimit saved{};
  bool set = false;
};

}  // namespace

TEST(BoundedRead, StringIdFarBeyondTheTableIsRefusedNotAllocated) {
  const auto path = sample("strings.sqlite");
  edit(path, "INSERT INTO strings VALUES(268435455, 'x')");
  std::string msg;
  {
    AddressSpaceLimit limit(std::size_t{2} << 30);  // the old reader allocated 9.4 GB here
    msg = refusal([&] { TraceReader(path).strings(); });
  }
  EXPECT_NE(msg.find("strings.sqlite: strings.id 268435455 is far beyond the table's 3 rows"), std::string::npos) << msg;
  edit(path, "DELETE FROM strings WHERE id = 268435455; INSERT INTO strings VALUES(-5, 'x')");
  msg = refusal([&] { TraceReader(path).strings(); });
  EXPECT_NE(msg.find("strings.sqlite: strings.id -5 "), std::string::npos) << msg;
  // Dense ids with gaps (hand-made files) still read.
  edit(path, "DELETE FROM strings WHERE id = -5; INSERT INTO strings VALUES(40, 'y')");
  const auto strings = TraceReader(path).strings();
  ASSERT_EQ(strings.size(), 41u);
  EXPECT_EQ(strings[1], "MPI_FLOAT");
  EXPECT_EQ(strings[40], "y");
}

TEST(BoundedRead, AbsurdWorldSizeOrRankIsRefusedWhenOpened) {
  const auto path = sample("world.sqlite");
  {
    TraceReader r(path);
    EXPECT_EQ(r.world_rank(), 1);
    EXPECT_EQ(r.world_size(), 4);
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"world_size", "100000000"}, {"world_size", "0"}, {"world_size", "-3"}, {"world_size", "4x"},
           {"world_size", "99999999999999999999"}, {"world_rank", "-1"}, {"world_rank", "2147483647"},
           {"world_rank", ""}}) {
    edit(path, "UPDATE meta SET value = " + sqlite::quote(value) + " WHERE key = '" + key + "'");
    const auto msg = refusal([&] { TraceReader r(path); });
    EXPECT_NE(msg.find("world.sqlite: meta." + key + " '" + value + "' is not a number from "), std::string::npos)
        << msg;
    edit(path, "UPDATE meta SET value = '" + std::string(key == "world_size" ? "4" : "1") + "' WHERE key = '" + key + "'");
  }
  // The largest world any machine runs still reads; a file that does not say gives nullopt.
  edit(path, "UPDATE meta SET value = '8388608' WHERE key = 'world_size'");
  EXPECT_EQ(TraceReader(path).world_size(), kMaxWorldSize);
  edit(path, "DELETE FROM meta WHERE key IN ('world_size', 'world_rank')");
  EXPECT_FALSE(TraceReader(path).world_size().has_value());
  EXPECT_FALSE(TraceReader(path).world_rank().has_value());
}

TEST(BoundedRead, FifoOrDeviceNamedLikeARankFileIsRefusedAtOnce) {
  const auto dir = temp_dir() / "fifo-run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(sample("rank0.sqlite"), dir / "rank-00000.sqlite");
  const auto fifo = (dir / "rank-00001.sqlite").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  // The run lists it; reading it says what it is instead of waiting for a writer that never comes.
  const auto files = rank_files(dir.string());
  ASSERT_EQ(files.size(), 2u);
  const auto msg = refusal([&] { TraceReader r(files[1]); });
  EXPECT_NE(msg.find("rank-00001.sqlite: not a regular file"), std::string::npos) << msg;
  EXPECT_NE(refusal([&] { TraceReader r("/dev/zero"); }).find("/dev/zero: not a regular file"), std::string::npos);
}
