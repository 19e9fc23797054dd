// The tracer on the real workload: the fusion trainer reports what it did (COLLSCOPE_SAMPLE_REPORT); the trace
// must hold exactly those calls, matched across ranks, with the same bytes and (within 5 %) the same durations.
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "../common/run_process.hpp"
#include "../common/run_queue.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::mpirun;
using collscope::testing::run_process;
using nlohmann::json;

namespace {

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");

std::map<int, json> sample_reports(const std::string& out) {
  std::map<int, json> reports;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const std::string tag = "COLLSCOPE_SAMPLE_REPORT ";
    if (line.rfind(tag, 0) != 0) continue;
    auto j = json::parse(line.substr(tag.size()));
    reports[j.at("rank").get<int>()] = j;
  }
  return reports;
}

struct OpTotals {
  std::int64_t calls = 0;
  std::int64_t bytes = 0;
  double ms = 0;
};

}  // namespace

TEST(SampleTrace, TraceHoldsExactlyWhatTheTrainerDid) {
  const fs::path dir = fs::temp_directory_path() / ("collscope-sample-trace-" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  for (auto& a : mpirun(2)) argv.push_back(a);
  for (std::string a : {kBin + "/fusion_trainer", std::string("--steps"), std::string("8"), std::string("--model-scale"),
                        std::string("0.1")})
    argv.push_back(a);
  auto r = run_process(argv, {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reports = sample_reports(r.out);
  ASSERT_EQ(reports.size(), 2u) << r.out;

  std::vector<std::vector<CommunicatorRow>> comms(2);
  std::vector<std::map<std::uint64_t, std::vector<CollectiveRow>>> by_key(2);  // communicator key -> calls by seq
  for (int rank = 0; rank < 2; ++rank) {
    TraceReader reader((dir / rank_file_name(rank)).string());
    const json& report = reports.at(rank);
    comms[rank] = reader.communicators();
    std::map<std::int64_t, std::uint64_t> key_of;
    for (auto& c : comms[rank]) key_of[c.id] = c.key;
    std::map<std::string, OpTotals> totals;
    for (auto& c : reader.collectives()) {
      auto& t = totals[std::string(op_name(c.op))];
      t.calls++;
      t.bytes += c.bytes;
      t.ms += (c.end_ns - c.start_ns) / 1e6;
      by_key[rank][key_of.at(c.comm)].push_back(c);
    }
    EXPECT_EQ(reader.meta_int(meta_key::kEventsDropped), 0);
    // Exactly the calls, per op, that the trainer counted itself.
    std::map<std::string, std::int64_t> expected_calls, traced_calls;
    for (auto& [op, n] : report.at("collectives").items())
      if (n.get<std::int64_t>() > 0) expected_calls[op] = n.get<std::int64_t>();
    for (auto& [op, t] : totals) traced_calls[op] = t.calls;
    EXPECT_EQ(traced_calls, expected_calls) << "rank " << rank;
    for (auto& [op, b] : report.at("collective_bytes").items())
      EXPECT_EQ(totals[op].bytes, b.get<std::int64_t>()) << op << " rank " << rank;
    // Durations: the trainer times each call from outside, the tracer from inside, on the same clock: each traced
    // interval lies within the trainer's, so the traced total is at most the trainer's. What the trainer sees
    // beyond it is the tracer's own code around each call and any time the thread spent waiting for a CPU between
    // the two timestamps: within 5 % on an idle machine, but a loaded host can preempt a thread there for a
    // whole timeslice. So the excess is bounded by 5 %, or by 20 us per call plus the rank's run-queue delay over
    // the run (its threads' scheduler counters, recorded in the trace's cpu_samples), whichever is larger.
    const double runq_ms = double(collscope::testing::run_queue_ns(reader)) / 1e6;
    for (auto& [op, ms] : report.at("collective_ms").items()) {
      const double own = ms.get<double>();
      const auto calls = static_cast<double>(totals[op].calls);
      std::printf("rank %d %s: traced %.3f ms, the trainer's own %.3f ms (%+.2f %%), run-queue delay %.3f ms\n", rank,
                  op.c_str(), totals[op].ms, own, 100 * (totals[op].ms - own) / own, runq_ms);
      EXPECT_LE(totals[op].ms, own + calls * 1e-3) << op << " rank " << rank;  // nested, 1 us per call for rounding
      if (own < 5.0) continue;  // a few tiny calls: relative error is meaningless
      EXPECT_LE(own - totals[op].ms, std::max(own * 0.05, calls * 0.020 + runq_ms)) << op << " rank " << rank;
    }
    // Communicators: world, the trainer's own duplicate (horovod), and the process set from MPI_Comm_split.
    std::map<std::string, std::int64_t> calls_by_comm;
    for (auto& c : comms[rank]) {
      const auto n = static_cast<std::int64_t>(by_key[rank][c.key].size());
      if (c.name == "MPI_COMM_WORLD") calls_by_comm["world"] = n;
      else if (c.name.rfind("dup", 0) == 0) calls_by_comm["horovod"] = n;
      else if (c.name.rfind("split", 0) == 0) {
        calls_by_comm["process_set"] = n;
        const auto& ps = report.at("process_set");
        EXPECT_EQ(c.color, ps.at("color").get<std::int64_t>());
        EXPECT_EQ(c.members, ps.at("members").get<std::vector<std::int32_t>>());
      }
    }
    for (auto& [name, n] : report.at("comm_calls_by_communicator").items())
      EXPECT_EQ(calls_by_comm[name], n.get<std::int64_t>()) << name << " rank " << rank;
  }
  // Matching across ranks: for every communicator both ranks share, the k-th call is the same collective.
  int shared = 0;
  for (auto& [key, calls0] : by_key[0]) {
    auto it = by_key[1].find(key);
    if (it == by_key[1].end()) continue;
    ++shared;
    const auto& calls1 = it->second;
    ASSERT_EQ(calls0.size(), calls1.size());
    for (std::size_t i = 0; i < calls0.size(); ++i) {
      EXPECT_EQ(calls0[i].seq, static_cast<std::int64_t>(i));
      EXPECT_EQ(calls1[i].seq, static_cast<std::int64_t>(i));
      EXPECT_EQ(calls0[i].op, calls1[i].op);
      EXPECT_EQ(calls0[i].count, calls1[i].count);
    }
  }
  EXPECT_EQ(shared, 2);  // world and the horovod duplicate (the process sets of 2 ranks have one member each)
  // The fusion buffer: one address reused for many allreduces of different sizes, with packs recorded.
  TraceReader reader((dir / rank_file_name(0)).string());
  auto buffers = reader.buffers();
  ASSERT_FALSE(buffers.empty());
  auto fusion = *std::max_element(buffers.begin(), buffers.end(),
                                  [](auto& a, auto& b) { return a.tensors_packed < b.tensors_packed; });
  const auto fused = reports.at(0).at("fusion").at("fused_allreduces").get<std::int64_t>();
  EXPECT_EQ(fusion.uses, fused);
  EXPECT_GT(fusion.uses, 8);
  EXPECT_LT(fusion.bytes_min, fusion.bytes_max);
  EXPECT_GT(fusion.tensors_packed, fusion.uses);  // several tensors per fused allreduce
  EXPECT_EQ(fusion.bytes_packed, fusion.bytes_total);
  fs::remove_all(dir);
}

namespace {

// The fusion trainer traced on 2 ranks: the run directory, and each rank's report.
fs::path trace_trainer(const std::string& name, const std::vector<std::pair<std::string, std::string>>& env,
                       std::map<int, json>& reports) {
  const fs::path dir = fs::temp_directory_path() / ("collscope-sample-trace-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  for (auto& a : mpirun(2)) argv.push_back(a);
  for (const char* a : {"--steps", "4", "--model-scale", "0.05"}) argv.push_back(a);
  argv.insert(argv.end() - 4, kBin + "/fusion_trainer");
  auto r = run_process(argv, env, 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  reports = sample_reports(r.out);
  EXPECT_EQ(reports.size(), 2u) << r.out;
  return dir;
}

// Every column of a buffers row.
std::string buffer_text(const BufferRow& b) {
  return std::to_string(b.address) + " " + std::to_string(b.bytes_max) + " " + std::to_string(b.bytes_min) + " " +
         std::to_string(b.bytes_total) + " " + std::to_string(b.uses) + " " + std::to_string(b.first_ns) + " " +
         std::to_string(b.last_ns) + " " + std::to_string(b.tensors_packed) + " " + std::to_string(b.bytes_packed);
}

}  // namespace

// The fusion buffers' totals go through event batches (schema 1.6, kind 5: one record per buffer a drain touched,
// the last one of an address its row). The trainer's fusion depends on timing (its background cycle), so two runs
// fuse differently: each run, batched or not (COLLSCOPE_EVENT_BATCHES=0), must hold exactly the fusion its own report
// counted; and a batched file reads as exactly the rows plain SQL has after `collscope sql`.
TEST(SampleTrace, FusionBuffersThroughEventBatchesAreTheRowPathsBuffers) {
  std::map<int, json> batched_reports, row_reports;
  const fs::path batched = trace_trainer("batched", {}, batched_reports);
  const fs::path rows = trace_trainer("rows", {{"COLLSCOPE_EVENT_BATCHES", "0"}}, row_reports);
  std::vector<std::vector<std::string>> decoded(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& [dir, reports] : {std::pair{batched, &batched_reports}, std::pair{rows, &row_reports}}) {
      TraceReader reader((dir / rank_file_name(rank)).string());
      const auto buffers = reader.buffers();
      ASSERT_GE(buffers.size(), 2u);
      EXPECT_EQ(reader.row_count("buffers"), static_cast<std::int64_t>(buffers.size()));
      const auto fusion = *std::max_element(buffers.begin(), buffers.end(),
                                            [](auto& a, auto& b) { return a.tensors_packed < b.tensors_packed; });
      EXPECT_EQ(fusion.uses, reports->at(rank).at("fusion").at("fused_allreduces").get<std::int64_t>()) << dir;
      EXPECT_EQ(fusion.bytes_packed, fusion.bytes_total) << dir;
      EXPECT_GT(fusion.tensors_packed, fusion.uses) << dir;
      if (dir != batched) continue;
      for (const auto& b : buffers) decoded[rank].push_back(buffer_text(b));
      sqlite::Database db((dir / rank_file_name(rank)).string(), sqlite::OpenMode::ReadOnly);
      auto plain = db.prepare("SELECT count(*) FROM buffers");
      ASSERT_TRUE(plain.step());
      EXPECT_EQ(plain.int64(0), 0) << "every buffer total is in event batches";
    }
  }
  const auto s = run_process({kBin + "/collscope", "sql", batched.string()}, {}, 120);
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  for (int rank = 0; rank < 2; ++rank) {
    TraceReader expanded((batched / rank_file_name(rank)).string());
    std::vector<std::string> plain;
    for (const auto& b : expanded.buffers()) plain.push_back(buffer_text(b));
    EXPECT_EQ(plain, decoded[rank]) << rank;
  }
  fs::remove_all(batched);
  fs::remove_all(rows);
}
