// A command's output file (store/output_file.hpp): whole or not at all, and never a device or FIFO replaced by a
// regular file (`collscope export RUN -o /dev/stdout` had renamed its partial file over /dev/stdout).
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;
using collscope::store::write_output_file;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("collscope-output-file-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(OutputFile, WrittenWholeOrNotAtAll) {
  const fs::path dir = fresh_dir("whole");
  const fs::path out = dir / "report.txt";
  write_output_file(out.string(), [](std::ostream& o) { o << "first\n"; });
  EXPECT_EQ(read(out), "first\n");
  // A writer that fails half way leaves the earlier file as it was, and no partial file.
  EXPECT_THROW(write_output_file(out.string(),
                                 [](std::ostream& o) {
                                   o << "half";
                                   throw std::runtime_error("the export failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(read(out), "first\n");
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  EXPECT_THROW(write_output_file(dir.string(), [](std::ostream& o) { o << "x"; }), collscope::InputError);
  EXPECT_THROW(write_output_file((dir / "no-such-dir" / "f").string(), [](std::ostream& o) { o << "x"; }),
               collscope::InputError);
  fs::remove_all(dir);
}

TEST(OutputFile, AFifoIsWrittenInPlaceNotReplaced) {
  const fs::path dir = fresh_dir("fifo");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] { return read(fifo); });
  write_output_file(fifo.string(), [](std::ostream& o) { o << "through the pipe\n"; });
  EXPECT_EQ(reader.get(), "through the pipe\n");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_FALSE(fs::exists(fifo.string() + ".partial"));
  fs::remove_all(dir);
}

TEST(OutputFile, ALinkToAFileStaysALink) {
  const fs::path dir = fresh_dir("link");
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink(dir / "target.json", dir / "latest.json");
  write_output_file((dir / "latest.json").string(), [](std::ostream& o) { o << "new"; });
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "latest.json")));
  EXPECT_EQ(read(dir / "target.json"), "new");
  fs::remove_all(dir);
}
