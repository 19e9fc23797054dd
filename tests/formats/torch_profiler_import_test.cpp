// `collscope import` of torch.profiler traces, through the built binary as a user runs it:
// - real traces of a 2-rank DDP job on gloo (tests/data/kineto-ddp-gloo-torch1.13, README there; Debian's torch
//   1.13, the autograd profiler's shape): the straggler run names rank 1 at about 30 ms per step, the plain run
//   names nobody, every rank has the collectives the job issued;
// - a Kineto-shaped trace (torch 2.x: distributedInfo, record_param_comms with the c10d metadata, written here with
//   the argument names of PyTorch's profiler source, as no torch 2.x is installed here): sizes, groups and Seq;
// - bad files: one line naming the file, exit 2.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::test::read_file;
using collscope::test::run_collscope;
using collscope::test::shell_quote;

namespace {

const fs::path kData = fs::path(COLLSCOPE_TEST_DATA_DIR) / "kineto-ddp-gloo-torch1.13";

fs::path fresh(const std::string& name) { return collscope::test::fresh_dir("collscope-torch-import", name); }

std::string traces_of(const std::string& run) {
  return shell_quote((kData / run / "rank-0.json").string()) + " " + shell_quote((kData / run / "rank-1.json").string());
}

nlohmann::json analysed(const fs::path& dir, const std::string& run) {
  EXPECT_EQ(run_collscope(dir, "import " + traces_of(run) + " -o run"), 0) << read_file(dir / "err.txt");
  EXPECT_EQ(run_collscope(dir, "analyze run --format json"), 0) << read_file(dir / "err.txt");
  return nlohmann::json::parse(read_file(dir / "out.txt"));
}

const nlohmann::json* straggler(const nlohmann::json& report) {
  for (const auto& f : report["findings"])
    if (f["kind"] == "straggler") return &f;
  return nullptr;
}

// Per rank: op name -> rows, from the rank file.
std::map<std::string, int> ops_of(const fs::path& rank_file) {
  const fs::path out = rank_file.string() + ".ops";
  EXPECT_EQ(collscope::test::shell("sqlite3 -separator ' ' " + shell_quote(rank_file.string()) +
                                   " 'SELECT op, count(*) FROM collectives GROUP BY op' > " + shell_quote(out.string())),
            0);
  std::map<std::string, int> ops;
  std::ifstream in(out);
  int op = 0, n = 0;
  while (in >> op >> n) ops[op == 1 ? "allreduce" : op == 15 ? "barrier" : op == 5 ? "allgather" : std::to_string(op)] = n;
  return ops;
}

// A Kineto trace of one rank as torch 2.x writes it (the shape of libkineto's output_json.cpp and the argument
// names of torch/csrc/profiler/util.cpp): `steps` steps of one allreduce of 1024 floats on process group "0"
// (ranks 0-1) and one allgather on group "1" ("[0, 1]", 4096 elements out), then a barrier; `late_us` delays
// this rank's calls in each step. The gloo work runs on another thread and ends when the latest rank has called.
std::string kineto_trace(int rank, int steps, double late_us, int seq_base) {
  nlohmann::json events = nlohmann::json::array();
  auto x = [&](const std::string& name, const std::string& cat, double ts, double dur, int tid, nlohmann::json args) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 4000 + rank}, {"tid", tid}, {"ts", ts},
                      {"dur", dur}, {"args", std::move(args)}});
  };
  int seq0 = seq_base, seq1 = seq_base;
  const double base = 1000;
  for (int s = 0; s < steps; ++s) {
    const double t0 = base + s * 10000;
    x("ProfilerStep#" + std::to_string(s), "user_annotation", t0, 9000, 1, nlohmann::json::object());
    x("DistributedDataParallel.forward", "user_annotation", t0 + 100, 1000, 1, nlohmann::json::object());
    const double call = t0 + 2000 + late_us, latest = t0 + 2000 + 3000;  // rank 1 is 3000 us late in the tests
    x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", call - 500, 400, 1, nlohmann::json::object());
    x("c10d::allreduce_", "cpu_op", call, 50, 1, nlohmann::json::object());
    x("record_param_comms", "cpu_op", call + 1, 40, 1,
      {{"Collective name", "allreduce"}, {"dtype", "Float"}, {"In msg nelems", 1024}, {"Out msg nelems", 1024},
       {"In split size", "[]"}, {"Out split size", "[]"}, {"Global rank start", 0}, {"Global rank stride", 1},
       {"Group size", 2}, {"Process Group Name", "0"}, {"Process Group Description", "default_pg"},
       {"Process Group Ranks", "[0, 1]"}, {"Rank", rank}, {"Seq", seq0++}});
    x("gloo:all_reduce", "cpu_op", call + 5, latest + 200 - (call + 5), 7, nlohmann::json::object());
    x("record_param_comms", "cpu_op", call + 300, 40, 1,
      {{"Collective name", "_allgather_base"}, {"dtype", "BFloat16"}, {"In msg nelems", 2048}, {"Out msg nelems", 4096},
       {"Group size", 2}, {"Process Group Name", "1"}, {"Process Group Ranks", "[0, 1]"}, {"Seq", seq1++}});
    x("gloo:all_gather", "cpu_op", call + 305, latest + 500 - (call + 305), 8, nlohmann::json::object());
    x("Optimizer.step#SGD.step", "user_annotation", latest + 1000, 500, 1, nlohmann::json::object());
  }
  const double end = base + steps * 10000;
  x("record_param_comms", "cpu_op", end, 10, 1,
    {{"Collective name", "barrier"}, {"dtype", "Float"}, {"In msg nelems", 0}, {"Out msg nelems", 0}, {"Group size", 2},
     {"Process Group Name", "0"}, {"Process Group Ranks", "[0, 1]"}, {"Seq", seq0++}});
  x("gloo:barrier", "cpu_op", end + 5, 100, 7, nlohmann::json::object());
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 4000 + rank}, {"tid", 1}, {"args", {{"name", "python"}}}});
  nlohmann::json root = {{"schemaVersion", 1},
                         {"deviceProperties", nlohmann::json::array()},
                         {"distributedInfo", {{"backend", "gloo"}, {"rank", rank}, {"world_size", 2}}},
                         {"traceEvents", events},
                         {"traceName", fmt::format("trace_rank{}.json", rank)},
                         {"baseTimeNanoseconds", 1'764'900'000'000'000'000LL}};
  return root.dump(1);
}

// A trace in the shape of torch 2.0-2.2's Kineto (as in HTA's test data, recorded with record_shapes=True):
// timestamps in microseconds since 1970 and no baseTimeNanoseconds, record_param_comms without the c10d
// metadata, sizes only in the ops' "Input Dims" / "Input type" (C++ type names), Kineto's log lines after the events
// ("INFO"). Per step one allreduce (c10d::allreduce_ takes a tensor list: its size is on gloo:all_reduce) of 1024
// floats and one _allgather_base_ of 2048 -> 4096 bf16 elements; `late_us` delays this rank's calls. `gloo_only`:
// the backend's spans alone, no c10d op (a profiler that records only those).
std::string torch20_trace(int rank, int steps, double late_us, bool gloo_only) {
  using nlohmann::json;
  json events = json::array();
  auto x = [&](const std::string& name, const std::string& cat, double ts, double dur, int tid, json args) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 7000 + rank}, {"tid", tid}, {"ts", ts},
                      {"dur", dur}, {"args", std::move(args)}});
  };
  const double base = 1'682'725'898'079'291.0;  // 2023-04-29, microseconds since 1970
  for (int s = 0; s < steps; ++s) {
    const double t0 = base + s * 10000, call = t0 + 2000 + late_us, latest = t0 + 2000 + 3000;
    x("ProfilerStep#" + std::to_string(551 + s), "user_annotation", t0, 9000, 1, json::object());
    x("DistributedDataParallel.forward", "user_annotation", t0 + 100, 1000, 1, json::object());
    x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", call - 500, 400, 1, json::object());
    x("Optimizer.step#SGD.step", "user_annotation", latest + 1000, 500, 1, json::object());
    if (!gloo_only) {
      x("c10d::allreduce_", "cpu_op", call, 50, 1,
        {{"Input Dims", {json::array(), json::array(), json::array(), json::array()}},
         {"Input type", {"TensorList", "", "", "Scalar"}}});
      x("record_param_comms", "cpu_op", call + 1, 40, 1, {{"External id", 313}});
      x("c10d::_allgather_base_", "cpu_op", call + 300, 50, 1,
        {{"Input Dims", {{4096}, {2048}, json::array()}}, {"Input type", {"c10::BFloat16", "c10::BFloat16", ""}}});
    }
    x("gloo:all_reduce", "user_annotation", call + 5, latest + 200 - (call + 5), 7,
      {{"Input Dims", {{1024}}}, {"Input type", {"float"}}});
    x("gloo:all_gather", "user_annotation", call + 305, latest + 500 - (call + 305), 7,
      {{"Input Dims", {{2048}}}, {"Input type", {"c10::BFloat16"}}});
  }
  json root = {{"schemaVersion", 1},
               {"deviceProperties", json::array()},
               {"distributedInfo", {{"backend", "gloo"}, {"rank", rank}, {"world_size", 2}}},
               {"traceEvents", events},
               {"INFO", {"INFO:2024-07-15 10:52:38 1074:1074 CuptiActivityProfiler.cpp:914] a log line"}},
               {"traceName", fmt::format("rank-{}.pt.trace.json", rank)},
               {"displayTimeUnit", "ms"}};
  return root.dump(1);
}

// An NCCL job's trace without GPU activity: record_param_comms with the metadata, no kernels.
std::string nccl_without_kernels(int rank, int steps) {
  using nlohmann::json;
  json events = json::array();
  for (int s = 0; s < steps; ++s) {
    const double t0 = 1000 + s * 10000;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(s)}, {"pid", 1},
                      {"tid", 1}, {"ts", t0}, {"dur", 9000}, {"args", json::object()}});
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "record_param_comms"}, {"pid", 1}, {"tid", 1}, {"ts", t0 + 2000},
                      {"dur", 20}, {"args", {{"Collective name", "allreduce"}, {"dtype", "Float"}, {"In msg nelems", 1 << 20},
                                             {"Out msg nelems", 1 << 20}, {"Group size", 2}, {"Process Group Name", "0"},
                                             {"Process Group Ranks", "[0, 1]"}, {"Seq", s}}}});
  }
  return json({{"schemaVersion", 1}, {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
               {"traceEvents", events}, {"baseTimeNanoseconds", 1'764'900'000'000'000'000LL}})
      .dump();
}

// The imported run in dir/run (8 steps, rank 1's calls 3 ms late in each) analysed: rank 1 the straggler at 3 ms.
void expect_rank_one_three_ms_late(const fs::path& dir) {
  ASSERT_EQ(run_collscope(dir, "analyze run --format json"), 0) << read_file(dir / "err.txt");
  const auto report = nlohmann::json::parse(read_file(dir / "out.txt"));
  EXPECT_EQ(report["summary"]["steps"], 8);
  const auto* f = straggler(report);
  ASSERT_NE(f, nullptr) << report["findings"].dump(1);
  EXPECT_EQ((*f)["ranks"], nlohmann::json::array({1}));
  EXPECT_NEAR((*f)["evidence"]["lateness_per_step_ns"].get<double>() / 1e6, 3.0, 0.6) << (*f)["title"];
}

}  // namespace

TEST(TorchProfilerImport, StragglerRunNamesRankOneAtThirtyMsPerStep) {
  const fs::path dir = fresh("straggler");
  const auto report = analysed(dir, "straggler-rank1-30ms");
  const std::string err = read_file(dir / "err.txt");
  const auto* f = straggler(report);
  ASSERT_NE(f, nullptr) << report["findings"].dump(1);
  EXPECT_EQ((*f)["ranks"], nlohmann::json::array({1}));
  const double per_step_ms = (*f)["evidence"]["lateness_per_step_ns"].get<double>() / 1e6;
  EXPECT_NEAR(per_step_ms, 30.0, 6.0) << (*f)["title"];
  EXPECT_EQ(report["summary"]["steps"], 10);
  std::printf("straggler-rank1-30ms: rank 1 named at %.2f ms per step\n", per_step_ms);
}

TEST(TorchProfilerImport, PlainRunNamesNoStraggler) {
  const fs::path dir = fresh("plain");
  const auto report = analysed(dir, "plain");
  EXPECT_EQ(straggler(report), nullptr) << report["findings"].dump(1);
  EXPECT_EQ(report["summary"]["steps"], 10);
}

// Every rank has the collectives the job issued (issued.jsonl: 20 DDP bucket allreduces and 1 barrier per rank),
// on one gloo communicator over both ranks, from --format auto and --format torch-profiler alike.
TEST(TorchProfilerImport, CollectivesPerRankAreWhatTheJobIssued) {
  for (const std::string format : {"auto", "torch-profiler"}) {
    const fs::path dir = fresh("counts-" + format);
    ASSERT_EQ(run_collscope(dir, "import " + traces_of("plain") + " -o run --format " + format), 0) << read_file(dir / "err.txt");
    const std::string err = read_file(dir / "err.txt");
    EXPECT_NE(err.find("torch.profiler (autograd profiler): 2 of 2 ranks, 1 process groups, 42 collectives"),
              std::string::npos) << err;
    std::ifstream issued(kData / "plain" / "issued.jsonl");
    std::string line;
    int ranks = 0;
    while (std::getline(issued, line)) {
      const auto j = nlohmann::json::parse(line);
      const int rank = j["rank"];
      const auto ops = ops_of(dir / "run" / fmt::format("rank-{:05}.sqlite", rank));
      EXPECT_EQ(ops.at("allreduce"), j["allreduce"].get<int>()) << "rank " << rank;
      EXPECT_EQ(ops.at("barrier"), j["barrier"].get<int>()) << "rank " << rank;
      EXPECT_EQ(ops.size(), 2u) << "rank " << rank;
      ++ranks;
    }
    EXPECT_EQ(ranks, 2);
    ASSERT_EQ(run_collscope(dir, "analyze run --format json"), 0) << read_file(dir / "err.txt");
    const auto report = nlohmann::json::parse(read_file(dir / "out.txt"));
    EXPECT_EQ(report["summary"]["collectives"], 42);
    // view and compare read it as any run.
    EXPECT_EQ(run_collscope(dir, "compare run run --format json"), 0) << read_file(dir / "err.txt");
  }
}

// The Kineto shape: sizes from record_param_comms ("Float" x 1024 = 4096 bytes; an allgather of BFloat16 is its
// whole 4096-element output, 8192 bytes), one communicator per process group with its ranks, seq from "Seq" (this
// profile began at Seq 40 on both ranks: rows start from 0), a straggler from the calls' arrival.
TEST(TorchProfilerImport, KinetoTracesKeepSizesGroupsAndSeq) {
  const fs::path dir = fresh("kineto");
  std::ofstream(dir / "trace_rank0.json") << kineto_trace(0, 8, 0, 40);
  std::ofstream(dir / "trace_rank1.json") << kineto_trace(1, 8, 3000, 40);
  ASSERT_EQ(run_collscope(dir, "import trace_rank1.json trace_rank0.json -o run"), 0) << read_file(dir / "err.txt");
  const std::string err = read_file(dir / "err.txt");
  EXPECT_NE(err.find("torch.profiler (kineto): 2 of 2 ranks, 2 process groups, 34 collectives (34 sized from "
                     "record_param_comms, 0 without their work span), 8 steps"),
            std::string::npos) << err;
  for (int r = 0; r < 2; ++r) {
    const fs::path out = dir / fmt::format("rows-{}.txt", r);
    ASSERT_EQ(collscope::test::shell(
                  "sqlite3 -separator ' ' " + shell_quote((dir / "run" / fmt::format("rank-{:05}.sqlite", r)).string()) +
                  " \"SELECT m.name, c.op, min(c.seq), max(c.seq), count(*), max(c.bytes), m.members, m.rank, m.backend "
                  "FROM collectives c JOIN communicators m ON m.id = c.comm GROUP BY c.comm, c.op ORDER BY m.name, c.op\" > " +
                  shell_quote(out.string())),
              0);
    EXPECT_EQ(read_file(out), fmt::format("process group 0 (default_pg) 1 0 7 8 4096 0,1 {0} gloo\n"
                                          "process group 0 (default_pg) 15 8 8 1 0 0,1 {0} gloo\n"
                                          "process group 1 5 0 7 8 8192 0,1 {0} gloo\n",
                                          r));
  }
  expect_rank_one_three_ms_late(dir);
}

// Bad files: exit 2 and one line that names the file.
TEST(TorchProfilerImport, BadFilesAreOneLineNamingTheFileExitTwo) {
  const fs::path dir = fresh("bad");
  const std::string good = read_file(kData / "plain" / "rank-1.json");
  std::ofstream(dir / "truncated.json") << good.substr(0, good.size() / 2);
  std::ofstream(dir / "shape.json") << R"({"schemaVersion": 1, "distributedInfo": {"rank": 1}, "events": []})";
  std::ofstream(dir / "no-collectives.json") << R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}}])";
  std::ofstream(dir / "bad-rank.json") << R"({"distributedInfo": {"rank": -4, "world_size": 2}, "traceEvents": []})";
  std::ofstream(dir / "not-events.json") << R"({"distributedInfo": {"rank": 0}, "traceEvents": [1, 2]})";
  const fs::path good_copy = dir / "rank-0.json";
  fs::copy_file(kData / "plain" / "rank-0.json", good_copy);
  const struct {
    std::string file, said;
  } cases[] = {
      {"truncated.json", "the JSON ends before it is complete"},
      {"shape.json", "not a torch.profiler trace"},
      {"no-collectives.json", "no collectives found"},
      {"bad-rank.json", "distributedInfo.rank -4 is not a rank"},
      {"not-events.json", "an element of its trace events is not an event object"},
      {"missing.json", "no such file"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(run_collscope(dir, "import " + c.file + " -o run --format torch-profiler"), 2) << c.file;
    const std::string err = read_file(dir / "err.txt");
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("collscope: " + c.file + ": " + c.said), std::string::npos) << err;
  }
  // Two files of one rank.
  EXPECT_EQ(run_collscope(dir, "import rank-0.json rank-0.json -o run"), 2);
  EXPECT_NE(read_file(dir / "err.txt").find("rank-0.json: rank 0 again"), std::string::npos) << read_file(dir / "err.txt");
}

// torch 2.0-2.2's shape: sizes and types from the ops' input shapes, epoch timestamps kept in range (the straggler's
// 3 ms a step survives), the log lines after the events read past; a trace of gloo's spans alone imports as well.
TEST(TorchProfilerImport, Torch20TracesSizedFromInputShapes) {
  for (const bool gloo_only : {false, true}) {
    const fs::path dir = fresh(gloo_only ? "torch20-gloo-only" : "torch20");
    std::ofstream(dir / "rank-0.pt.trace.json") << torch20_trace(0, 8, 0, gloo_only);
    std::ofstream(dir / "rank-1.pt.trace.json") << torch20_trace(1, 8, 3000, gloo_only);
    ASSERT_EQ(run_collscope(dir, "import rank-0.pt.trace.json rank-1.pt.trace.json -o run"), 0) << read_file(dir / "err.txt");
    const std::string err = read_file(dir / "err.txt");
    EXPECT_NE(err.find("2 of 2 ranks, 1 process groups, 32 collectives (0 sized from record_param_comms, 32 from input "
                       "shapes, 0 without their work span), 8 steps"),
              std::string::npos) << err;
    for (int r = 0; r < 2; ++r) {
      const fs::path out = dir / fmt::format("rows-{}.txt", r);
      ASSERT_EQ(collscope::test::shell("sqlite3 -separator ' ' " +
                                       shell_quote((dir / "run" / fmt::format("rank-{:05}.sqlite", r)).string()) +
                                       " \"SELECT c.op, count(*), min(c.bytes), max(c.bytes), s.value FROM collectives c "
                                       "JOIN strings s ON s.id = c.datatype GROUP BY c.op ORDER BY c.op\" > " +
                                       shell_quote(out.string())),
                0);
      EXPECT_EQ(read_file(out), "1 8 4096 4096 Float\n5 8 8192 8192 BFloat16\n") << (gloo_only ? "gloo only" : "c10d");
    }
    expect_rank_one_three_ms_late(dir);
  }
}

// NCCL calls return once queued: without their kernels their span is no transfer, so they carry no size (no
// bandwidth from it) and the import says so, naming the file.
TEST(TorchProfilerImport, NcclCallsWithoutKernelsCarryNoSize) {
  const fs::path dir = fresh("nccl-no-kernels");
  std::ofstream(dir / "rank-0.json") << nccl_without_kernels(0, 6);
  std::ofstream(dir / "rank-1.json") << nccl_without_kernels(1, 6);
  ASSERT_EQ(run_collscope(dir, "import rank-0.json rank-1.json -o run"), 0) << read_file(dir / "err.txt");
  const std::string err = read_file(dir / "err.txt");
  EXPECT_NE(err.find("rank-0.json: 6 NCCL calls have no kernel in the trace; imported without their size"), std::string::npos) << err;
  EXPECT_NE(err.find("12 collectives (0 sized from record_param_comms, 12 without their work span)"), std::string::npos) << err;
  const fs::path out = dir / "bytes.txt";
  ASSERT_EQ(collscope::test::shell("sqlite3 " + shell_quote((dir / "run" / "rank-00000.sqlite").string()) +
                                   " 'SELECT count(*), max(bytes) FROM collectives' > " + shell_quote(out.string())),
            0);
  EXPECT_EQ(read_file(out), "6|0\n");
}
