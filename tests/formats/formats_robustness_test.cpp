// `collscope export` and `collscope import` through the built binary on text that is not UTF-8 and on a corrupt
// timeline: the export stays valid JSON, a Latin-1 tensor name imports, a bad byte mid-file is one line naming it.
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::test::bin_dir;
using collscope::test::read_file;
using collscope::test::run_collscope;
using collscope::test::shell;
using collscope::test::shell_quote;

namespace {

fs::path root() { return collscope::test::temp_root("collscope-formats-robust"); }

// A Horovod timeline of `tensors` gradients reduced once per step on 2 ranks (the writer's event sequence), tensor 0
// named `first_name` (raw bytes, as Horovod writes whatever the framework named it).
std::string timeline(int tensors, int steps, const std::string& first_name) {
  std::string out = "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"start_time_since_epoch_in_micros\": 1700000000000000}},\n";
  for (int t = 1; t <= tensors; ++t)
    out += fmt::format("{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"args\": {{\"name\": \"{}\"}}}},\n", t,
                       t == 1 ? first_name : fmt::format("grad/{}", t));
  std::int64_t ts = 100;
  for (int s = 0; s < steps; ++s)
    for (int t = 1; t <= tensors; ++t, ts += 100)
      out += fmt::format(
          "{{\"ph\": \"B\", \"name\": \"NEGOTIATE_ALLREDUCE\", \"ts\": {0}, \"pid\": {1}}},\n"
          "{{\"ph\": \"X\", \"name\": \"0\", \"ts\": {0}, \"pid\": {1}, \"dur\": 0}},\n"
          "{{\"ph\": \"X\", \"name\": \"1\", \"ts\": {2}, \"pid\": {1}, \"dur\": 0}},\n"
          "{{\"ph\": \"E\", \"ts\": {2}, \"pid\": {1}}},\n"
          "{{\"ph\": \"B\", \"name\": \"ALLREDUCE\", \"ts\": {3}, \"pid\": {1}}},\n"
          "{{\"ph\": \"B\", \"name\": \"MPI_ALLREDUCE\", \"ts\": {3}, \"pid\": {1}}},\n"
          "{{\"ph\": \"E\", \"ts\": {4}, \"pid\": {1}}},\n"
          "{{\"ph\": \"E\", \"ts\": {4}, \"pid\": {1}, \"args\": {{\"dtype\": \"HOROVOD_FLOAT32\", \"shape\": \"[1024]\"}}}},\n",
          ts, t, ts + 10, ts + 20, ts + 80);
  return out + "{\"ph\": \"i\", \"name\": \"CYCLE_START\", \"ts\": " + std::to_string(ts) + ", \"s\": \"g\"}\n]\n";
}

}  // namespace

// A thread and a communicator name cut mid-character (the kernel cuts names at 15 bytes) and a Latin-1 byte: the
// Chrome trace is still valid JSON, with U+FFFD where the bytes were.
TEST(FormatsRobustness, ExportIsValidJsonWithInvalidUtf8Names) {
  const fs::path dir = root() / "export";
  fs::remove_all(dir);
  fs::create_directories(dir);
  collscope::testing::SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 4;
  collscope::testing::write_synthetic_run((dir / "run").string(), spec);
  for (const auto& f : fs::directory_iterator(dir / "run"))
    ASSERT_EQ(shell("sqlite3 " + shell_quote(f.path().string()) +
                    " \"UPDATE communicators SET name = CAST(X'776f726c642dc3' AS TEXT) WHERE id = 1; "
                    "INSERT OR REPLACE INTO threads(id, tid, name) VALUES(77, 4242, CAST(X'707974686f6e2df0' AS TEXT));\""),
              0);
  ASSERT_EQ(run_collscope(dir, "export run -o trace.json"), 0) << read_file(dir / "err.txt");
  nlohmann::json trace;
  ASSERT_NO_THROW(trace = nlohmann::json::parse(read_file(dir / "trace.json")));  // strict: rejects ill-formed UTF-8
  bool comm = false, thread = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e.contains("args") && e["args"].contains("communicator")) comm |= e["args"]["communicator"] == "world-\xef\xbf\xbd";
    if (e.value("name", "") == "thread_name") thread |= e["args"]["name"] == "python-\xef\xbf\xbd";
  }
  EXPECT_TRUE(comm);
  EXPECT_TRUE(thread);
}

// A Latin-1 byte in a tensor name (0xE9, "é") imports; before, the parser stopped at the first event and the
// import failed with "no Horovod operations found".
TEST(FormatsRobustness, LatinOneTensorNameImports) {
  const fs::path dir = root() / "latin1";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "timeline.json", std::ios::binary) << timeline(6, 5, "grad/caf\xe9");
  ASSERT_EQ(run_collscope(dir, "import timeline.json -o run"), 0) << read_file(dir / "err.txt");
  const std::string err = read_file(dir / "err.txt");
  EXPECT_NE(err.find("2 ranks, 6 tensors, 30 tensor operations"), std::string::npos) << err;
  EXPECT_NE(err.find("5 steps"), std::string::npos) << err;
  EXPECT_NE(err.find("1 invalid UTF-8 sequence(s) in names read as U+FFFD"), std::string::npos) << err;
  ASSERT_EQ(run_collscope(dir, "analyze run --format json"), 0) << read_file(dir / "err.txt");
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "out.txt"))["summary"]["steps"], 5);
}

// A garbage byte in the middle of a timeline is one line naming the file and the byte, exit 2; before, the import
// kept the first half, said the file had ended mid-event, and exited 0.
TEST(FormatsRobustness, GarbageByteMidTimelineIsOneLineNamingTheByte) {
  const fs::path dir = root() / "garbage";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text = timeline(6, 20, "grad/1");
  // Between two events, 55 % into the file: a byte no JSON has there.
  std::size_t at = text.find("},\n{", text.size() * 55 / 100) + 3;
  text.insert(at, "\x01");
  std::ofstream(dir / "timeline.json", std::ios::binary) << text;
  EXPECT_EQ(run_collscope(dir, "import timeline.json -o run"), 2) << read_file(dir / "err.txt");
  const std::string err = read_file(dir / "err.txt");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(fmt::format("collscope: timeline.json: not valid JSON at byte {} of {}", at, text.size())), std::string::npos) << err;
  // The same file cut there instead (a killed writer) keeps its complete events, as before.
  std::ofstream(dir / "cut.json", std::ios::binary) << text.substr(0, at - 3);
  EXPECT_EQ(run_collscope(dir, "import cut.json -o run"), 0) << read_file(dir / "err.txt");
  EXPECT_NE(read_file(dir / "err.txt").find("the file ended mid-event"), std::string::npos) << read_file(dir / "err.txt");
}
