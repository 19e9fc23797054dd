// The NCCL profiler plugin as NCCL drives it. NCCL itself needs a GPU, so two hosts stand in for it here:
//  - this test, which dlopens the plugin and calls its entry points with NCCL's structures (versions 5, 4, 3);
//  - the NCCL test double (tests/tracer/gpu/nccl_double_profiler.cpp), which loads the plugin from
//    NCCL_PROFILER_PLUGIN like NCCL 2.28 and emits the documented lifecycle of every collective of a real program
//    (nccl_probe_fake), run under `collscope trace --nccl-profiler` with and without the preload.
// tests/gpu/run.sh loads the plugin into real NCCL on a GPU.
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>

#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "../../../tracer/src/nccl/profiler/nccl/profiler.hpp"
#include "../../common/run_process.hpp"
#include "../gpu/nccl_double_profiler.hpp"

namespace fs = std::filesystem;
using namespace collscope::nccl_profiler;
using namespace collscope::store;
using collscope::testing::run_process;

namespace {

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-profiler-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void* open_plugin() {
  void* lib = dlopen(COLLSCOPE_TEST_PROFILER, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  return lib;
}

// Rows of one traced run: collectives by (comm, seq) with their profile.
struct TracedRun {
  std::vector<CollectiveRow> collectives;
  std::map<std::int64_t, NcclProfileRow> profile;  // by collective id
  std::vector<NcclProxyOpRow> proxy_ops;
  std::vector<CommunicatorRow> communicators;
  std::vector<std::string> strings;
  std::map<std::string, std::string> meta;
};

TracedRun read_run(const fs::path& file) {
  TraceReader r(file.string());
  TracedRun run;
  run.collectives = r.collectives();
  for (const auto& p : r.rows<NcclProfileRow>()) run.profile[p.collective] = p;
  run.proxy_ops = r.rows<NcclProxyOpRow>();
  run.communicators = r.communicators();
  run.strings = r.strings();
  run.meta = r.meta();
  return run;
}

const std::string kBin = COLLSCOPE_TEST_BIN;

// The plugin's own recorder starts once per process, at the first init: the in-process tests share its file.
const fs::path kInProcessRun = [] {
  const auto dir = fresh_dir("in-process");
  setenv("COLLSCOPE_RUN_DIR", dir.c_str(), 1);
  setenv("COLLSCOPE_FLUSH_MS", "5", 1);
  setenv("RANK", "0", 1);
  return dir;
}();

}  // namespace

TEST(NcclProfilerPlugin, ExportsVersions5To3AndAsksForWhatEachCarries) {
  void* lib = open_plugin();
  ASSERT_NE(lib, nullptr);
  auto* v5 = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  auto* v4 = static_cast<ProfilerV4*>(dlsym(lib, "ncclProfiler_v4"));
  auto* v3 = static_cast<ProfilerV3*>(dlsym(lib, "ncclProfiler_v3"));
  ASSERT_TRUE(v5 && v4 && v3);
  EXPECT_EQ(dlsym(lib, "ncclProfiler_v2"), nullptr);  // NCCL < 2.26 finds nothing it knows and runs without
  EXPECT_EQ(dlsym(lib, "ncclProfiler_v1"), nullptr);
  EXPECT_STREQ(v5->name, "collscope");
  const int tasks = kColl | kP2p | kProxyOp | kProxyStep | kKernelCh;
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v5->init(&ctx, 42, &mask, "c5", 1, 2, 0, nullptr), kSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(mask, tasks | kCollApi | kP2pApi);  // v5: the API events name the call inside the user's call
  EXPECT_EQ(v5->finalize(ctx), kSuccess);
  ASSERT_EQ(v4->init(&ctx, &mask, "c4", 43, 1, 2, 0, nullptr), kSuccess);
  EXPECT_EQ(mask, tasks);
  EXPECT_EQ(v4->finalize(ctx), kSuccess);
  ASSERT_EQ(v3->init(&ctx, &mask), kSuccess);
  EXPECT_EQ(mask, tasks);
  EXPECT_EQ(v3->finalize(ctx), kSuccess);
  // Unknown events and null handles are left alone.
  void* h = reinterpret_cast<void*>(1);
  EventDescrV5 other{};
  other.type = kNetPlugin;
  ASSERT_EQ(v5->init(&ctx, 44, &mask, "c", 1, 2, 0, nullptr), kSuccess);
  EXPECT_EQ(v5->startEvent(ctx, &h, &other), kSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(v5->stopEvent(nullptr), kSuccess);
  EXPECT_EQ(v5->recordEventState(nullptr, kKernelChStop, nullptr), kSuccess);
  EXPECT_EQ(v5->finalize(ctx), kSuccess);
}

// One allreduce through the v5 entry points, in the documented order, by hand; the plugin records it alone.
TEST(NcclProfilerPlugin, OneCollectiveByHandThroughV5) {
  void* lib = open_plugin();
  ASSERT_NE(lib, nullptr);
  auto* v5 = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v5->init(&ctx, 0xfeed, &mask, "hand", 2, 8, 3, nullptr), kSuccess);
  float buffer[256];
  auto start = [&](EventDescrV5 d) {
    void* h = nullptr;
    v5->startEvent(ctx, &h, &d);
    return h;
  };
  EventDescrV5 api{};
  api.type = kCollApi;
  api.collApi = {"AllReduce", 256, "ncclFloat32", 0, reinterpret_cast<void*>(0x5eed), false};
  void* api_h = start(api);
  ASSERT_NE(api_h, nullptr);
  v5->stopEvent(api_h);
  EventDescrV5 coll{};
  coll.type = kColl;
  coll.parentObj = api_h;
  coll.coll = {7, "AllReduce", buffer, buffer, 256, 0, "ncclFloat32", 2, 8, "RING", "LL128", nullptr};
  void* task = start(coll);
  ASSERT_NE(task, nullptr);
  v5->stopEvent(task);
  // The network: channel 0 sends 3 steps of 4 KiB to rank 4.
  EventDescrV5 op{};
  op.type = kProxyOp;
  op.parentObj = task;
  op.proxyOp = {getpid(), 0, 4, 3, 4096, 1};
  void* op_h = start(op);
  ASSERT_NE(op_h, nullptr);
  for (int s = 0; s < 3; ++s) {
    EventDescrV5 step{};
    step.type = kProxyStep;
    step.parentObj = op_h;
    step.proxyStep.step = s;
    void* step_h = start(step);
    EventStateArgsV5 a{};
    a.proxyStep.transSize = 4096;
    v5->recordEventState(step_h, kProxyStepSendGpuWait, &a);
    v5->recordEventState(step_h, kProxyStepSendWait, &a);  // the same step's bytes reported twice: counted once
    v5->stopEvent(step_h);
  }
  v5->stopEvent(op_h);
  // Two kernel channels on a GPU clock 5 s ahead of the host; channel 1 ends last, 30 us after the common start.
  const std::int64_t offset = 5'000'000'000;
  const std::int64_t t0 = now_ns();
  std::vector<void*> kernel;
  for (int c = 0; c < 2; ++c) {
    EventDescrV5 k{};
    k.type = kKernelCh;
    k.parentObj = task;
    k.kernelCh = {static_cast<std::uint8_t>(c), static_cast<std::uint64_t>(t0 + offset)};
    kernel.push_back(start(k));
  }
  while (now_ns() < t0 + 31'000) std::this_thread::yield();
  for (int c = 0; c < 2; ++c) {
    EventStateArgsV5 a{};
    a.kernelCh.pTimer = static_cast<std::uint64_t>(t0 + offset + (c + 1) * 15'000);
    v5->recordEventState(kernel[c], kKernelChStop, &a);
    v5->stopEvent(kernel[c]);
  }
  v5->finalize(ctx);
  // The writer thread runs on; wait for the rows (WAL: readable while written).
  const auto file = kInProcessRun / "rank-00000.sqlite";
  TracedRun run;
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!fs::exists(file)) continue;
    run = read_run(file);
    if (!run.profile.empty() && !run.proxy_ops.empty() && !run.communicators.empty() &&
        run.communicators[0].destroyed_ns)
      break;
  }
  ASSERT_EQ(run.collectives.size(), 1u);
  ASSERT_EQ(run.profile.size(), 1u);
  const auto& c = run.collectives[0];
  EXPECT_EQ(c.op, Op::Allreduce);
  EXPECT_EQ(c.seq, 0);
  EXPECT_EQ(c.count, 256);
  EXPECT_EQ(c.bytes, 1024);
  EXPECT_EQ(run.strings.at(c.datatype), "ncclFloat32");
  ASSERT_TRUE(c.stream);
  EXPECT_EQ(*c.stream, 0x5eedu);
  ASSERT_TRUE(c.gpu_start_ns && c.gpu_end_ns);
  EXPECT_EQ(*c.gpu_end_ns - *c.gpu_start_ns, 30'000);  // GPU clock durations are exact
  // The offset comes from when the proxy reported each timestamp: the host times are late by microseconds.
  EXPECT_GE(*c.gpu_start_ns, t0);
  EXPECT_LT(*c.gpu_start_ns, t0 + 1'000'000);
  const auto& p = run.profile.begin()->second;
  EXPECT_EQ(p.collective, c.id);
  EXPECT_EQ(run.strings.at(p.algorithm), "RING");
  EXPECT_EQ(run.strings.at(p.protocol), "LL128");
  EXPECT_EQ(p.channels, 2);
  EXPECT_EQ(p.warps, 8);
  EXPECT_EQ(p.kernel_channels, 2);
  EXPECT_EQ(p.nccl_seq, 7);
  EXPECT_EQ(p.api_version, 5);
  EXPECT_EQ(p.proxy_ops, 1);
  ASSERT_EQ(run.proxy_ops.size(), 1u);
  const auto& o = run.proxy_ops[0];
  EXPECT_EQ(o.collective, c.id);
  EXPECT_TRUE(o.is_send);
  EXPECT_EQ(o.peer, 4);
  EXPECT_EQ(o.steps, 3);
  EXPECT_EQ(o.steps_done, 3);
  EXPECT_EQ(o.chunk_bytes, 4096);
  EXPECT_EQ(o.bytes, 3 * 4096);
  EXPECT_GE(o.end_ns, o.start_ns);
  ASSERT_EQ(run.communicators.size(), 1u);
  EXPECT_EQ(run.communicators[0].key, 0xfeedu);  // NCCL's commId: the same on every rank
  EXPECT_EQ(run.communicators[0].size, 8);
  EXPECT_EQ(run.communicators[0].rank, 3);
  EXPECT_TRUE(run.communicators[0].destroyed_ns);
}

#ifdef COLLSCOPE_TEST_HAVE_NCCL_DOUBLE
namespace {

// nccl_probe_fake --group-by-size as rank 1 of 4, traced. Its world communicator's 12 calls, by seq:
// 0-2 allreduce 4 KiB, 3 bcast, 4 send, 5 recv, 6 allgather, 7 reduce, 8 reduce-scatter, 9 allreduce 64 B,
// 10 allreduce 256 KiB (9 and 10 in one group: NCCL launches 10 first), 11 the failed allreduce (count 0).
TracedRun trace_probe(const fs::path& dir, const std::vector<std::string>& trace_flags, int api,
                      const std::string& event_batches = "1") {
  std::vector<std::string> argv{kBin + "/collscope", "trace", "-o", dir.string()};
  argv.insert(argv.end(), trace_flags.begin(), trace_flags.end());
  argv.insert(argv.end(), {"--", kBin + "/nccl_probe_fake", "--group-by-size"});
  auto r = run_process(argv, {{"RANK", "1"}, {"WORLD_SIZE", "4"},
                              {"NCCL_TEST_DOUBLE_PROFILER_API", std::to_string(api)},
                              {"COLLSCOPE_PRELOAD", COLLSCOPE_TEST_PRELOAD},
                              {"COLLSCOPE_NCCL_PROFILER", COLLSCOPE_TEST_PROFILER},
                              {"COLLSCOPE_EVENT_BATCHES", event_batches}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("collscope:"), std::string::npos) << r.err;
  return read_run(dir / "rank-00001.sqlite");
}

std::vector<const CollectiveRow*> on_comm(const TracedRun& run, std::int64_t comm) {
  std::vector<const CollectiveRow*> out;
  for (const auto& c : run.collectives)
    if (c.comm == comm) out.push_back(&c);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
  return out;
}

// What the double's kernel channels make: channels x 10 us.
std::int64_t expected_span(std::int64_t bytes_per_rank, bool p2p) {
  const int channels = p2p ? 1 : bytes_per_rank < 65536 ? 2 : 4;
  return channels * nccl_double::kChannelNs;
}

void expect_profiled(const TracedRun& run, const CollectiveRow& c, int api, std::int64_t bytes_per_rank, bool p2p) {
  SCOPED_TRACE("seq " + std::to_string(c.seq));
  auto it = run.profile.find(c.id);
  ASSERT_NE(it, run.profile.end()) << "no profile";
  const auto& p = it->second;
  EXPECT_EQ(p.api_version, api);
  EXPECT_EQ(p.channels, p2p ? 1 : bytes_per_rank < 65536 ? 2 : 4);
  EXPECT_EQ(run.strings.at(p.algorithm), p2p ? "" : bytes_per_rank < 65536 ? "TREE" : "RING");
  EXPECT_EQ(p.proxy_ops, 2 * p.channels);  // a send and a receive per channel
  if (api >= 4) {
    ASSERT_TRUE(c.gpu_start_ns && c.gpu_end_ns);
    EXPECT_EQ(*c.gpu_end_ns - *c.gpu_start_ns, expected_span(bytes_per_rank, p2p));
    EXPECT_GE(*c.gpu_start_ns, c.start_ns);  // the kernel ran after the call began
    EXPECT_EQ(p.kernel_channels, p.channels);
  } else {
    EXPECT_FALSE(c.gpu_start_ns);  // v3 kernel channels carry no timestamps
    EXPECT_EQ(p.kernel_channels, 0);
  }
}

class NcclProfilerWithPreload : public ::testing::TestWithParam<int> {};

}  // namespace

// Traced both ways (interposer + profiler plugin): exactly the rows of the interposer alone, the profile on them.
TEST_P(NcclProfilerWithPreload, OneRowPerCollectiveAndTheProfileOnIt) {
  const int api = GetParam();
  const auto plain = trace_probe(fresh_dir("plain" + std::to_string(api)), {}, api);
  const auto both = trace_probe(fresh_dir("both" + std::to_string(api)), {"--nccl-profiler"}, api);
  ASSERT_EQ(both.collectives.size(), plain.collectives.size());
  for (std::size_t i = 0; i < plain.collectives.size(); ++i) {
    EXPECT_EQ(both.collectives[i].comm, plain.collectives[i].comm);
    EXPECT_EQ(both.collectives[i].seq, plain.collectives[i].seq);
    EXPECT_EQ(both.collectives[i].op, plain.collectives[i].op);
    EXPECT_EQ(both.collectives[i].bytes, plain.collectives[i].bytes);
  }
  EXPECT_EQ(both.communicators.size(), plain.communicators.size());  // the plugin registered none of its own
  const auto world = on_comm(both, 1);
  ASSERT_EQ(world.size(), 12u);
  const std::int64_t per_rank[] = {4096, 4096, 4096, 2048, 400, 400, 64, 64, 128, 64, 262144};
  for (int i = 0; i < 11; ++i) {
    const bool p2p = i == 4 || i == 5;
    if (p2p && api < 5) {
      // NCCL < 2.28 names a point-to-point task by nothing the interposer knows: left unmatched, not guessed.
      EXPECT_EQ(both.profile.count(world[i]->id), 0u) << i;
      continue;
    }
    expect_profiled(both, *world[i], api, per_rank[i], p2p);
  }
  // The group launched the 256 KiB allreduce before the 64 B one: NCCL's numbers follow the launch.
  EXPECT_EQ(both.profile.at(world[10]->id).nccl_seq, 3);
  EXPECT_EQ(both.profile.at(world[9]->id).nccl_seq, 4);
  EXPECT_EQ(both.profile.count(world[11]->id), 0u);  // the failed call: NCCL never launched it
  // The child (1 rank: NCCL gives it no task) has no profile; the ncclCommInitAll communicator's call is named by
  // its API event in v5; before v5 its init ran on NCCL's helper thread, so nothing names it.
  for (const auto* c : on_comm(both, 2)) EXPECT_EQ(both.profile.count(c->id), 0u);
  const auto all = on_comm(both, 4);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(both.profile.count(all[0]->id), api >= 5 ? 1u : 0u);
  const int matched = api >= 5 ? 12 : 9;
  EXPECT_EQ(both.meta.at("nccl_profiler.matched"), std::to_string(matched));
  EXPECT_EQ(both.meta.at("nccl_profiler.unmatched"), std::to_string(api >= 5 ? 0 : 3));
  EXPECT_EQ(both.meta.at("nccl_profiler.dropped"), "0");
  EXPECT_EQ(both.meta.at("nccl_profiler.incomplete"), "0");
  std::map<std::int64_t, int> ops_per_row;
  for (const auto& o : both.proxy_ops) {
    ++ops_per_row[o.collective];
    EXPECT_EQ(o.steps_done, 4);
    // Step sizes come with the step states from v4 on (NCCL's v3 shim forwards the states without them).
    EXPECT_EQ(o.bytes, api >= 4 ? 4 * nccl_double::kChunkBytes : 0);
  }
  for (const auto& [row, n] : ops_per_row) EXPECT_EQ(n, both.profile.at(row).proxy_ops) << row;
}

// NCCL calls go through event batches like MPI calls (schema 1.6): kind-1 records, and their GPU times, learnt
// later from the kernel channels, kind-6 records joined on by id. Read back, the rows of the row path
// (COLLSCOPE_EVENT_BATCHES=0, where the GPU times are updates of the rows), and `collscope sql` makes them rows.
TEST(NcclProfilerWithPreload, NcclCallsAndTheirGpuTimesGoThroughEventBatches) {
  const auto batched_dir = fresh_dir("batched"), rows_dir = fresh_dir("rows");
  const auto batched = trace_probe(batched_dir, {"--nccl-profiler"}, 5);
  const auto rows = trace_probe(rows_dir, {"--nccl-profiler"}, 5, "0");
  const auto file = (batched_dir / "rank-00001.sqlite").string();
  auto sql_int = [](const std::string& path, const std::string& sql) {
    sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
    auto q = db.prepare(sql);
    return q.step() ? q.int64(0) : -1;
  };
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM collectives"), 0);
  EXPECT_EQ(sql_int(file, "SELECT sum(count) FROM event_batches WHERE kind = 1"),
            static_cast<std::int64_t>(batched.collectives.size()));
  EXPECT_GE(sql_int(file, "SELECT sum(count) FROM event_batches WHERE kind = 6"), 10);
  EXPECT_EQ(sql_int((rows_dir / "rank-00001.sqlite").string(), "SELECT count(*) FROM event_batches"), 0);
  // What does not differ between two runs: the calls, their NCCL fields, their GPU spans and their profiles.
  auto lines = [](const TracedRun& run) {
    std::vector<std::string> out;
    auto opt = [](const auto& v) { return v ? std::to_string(*v) : std::string("NULL"); };
    for (const auto& c : run.collectives) {
      const auto p = run.profile.find(c.id);
      out.push_back(fmt::format("{} {} {} {} {} {} {} {} {} {} {}", c.id, c.comm, c.seq, int(c.op), c.bytes,
                                opt(c.stream), opt(c.correlation), opt(c.group), c.status,
                                c.gpu_start_ns ? *c.gpu_end_ns - *c.gpu_start_ns : -1,
                                p == run.profile.end() ? -1 : p->second.channels));
    }
    return out;
  };
  const auto want = lines(rows);
  ASSERT_EQ(want.size(), 15u);
  EXPECT_EQ(lines(batched), want);
  const auto s = run_process({kBin + "/collscope", "sql", batched_dir.string()});
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM event_batches"), 0);
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM collectives WHERE gpu_start_ns IS NOT NULL"),
            sql_int((rows_dir / "rank-00001.sqlite").string(),
                    "SELECT count(*) FROM collectives WHERE gpu_start_ns IS NOT NULL"));
  const auto expanded = read_run(batched_dir / "rank-00001.sqlite");
  ASSERT_EQ(expanded.collectives.size(), batched.collectives.size());
  for (std::size_t i = 0; i < batched.collectives.size(); ++i) {
    EXPECT_EQ(expanded.collectives[i].gpu_start_ns, batched.collectives[i].gpu_start_ns) << i;
    EXPECT_EQ(expanded.collectives[i].start_ns, batched.collectives[i].start_ns) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Api, NcclProfilerWithPreload, ::testing::Values(5, 4, 3),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

// The plugin alone (no preload): it writes the rows itself, the same rows the interposer writes for every call
// NCCL gave a task, on a communicator keyed by NCCL's id.
TEST(NcclProfilerAlone, WritesTheRowsTheInterposerWould) {
  const auto plain = trace_probe(fresh_dir("plain-alone"), {}, 5);
  const auto alone = trace_probe(fresh_dir("alone"), {"--nccl-profiler", "--no-preload"}, 5);
  EXPECT_EQ(alone.meta.at("trace_started_by"), "nccl-profiler");
  const auto world = on_comm(plain, 1);
  ASSERT_EQ(world.size(), 12u);
  // The plugin's world communicator: the first it registered (size 4, rank 1).
  ASSERT_FALSE(alone.communicators.empty());
  const auto& comm = alone.communicators[0];
  EXPECT_EQ(comm.size, 4);
  EXPECT_EQ(comm.rank, 1);
  EXPECT_EQ(comm.key, plain.communicators[0].key);  // the double's id hash is the interposer's key function
  const auto mine = on_comm(alone, comm.id);
  ASSERT_EQ(mine.size(), 11u);  // not the failed call
  const std::int64_t per_rank[] = {4096, 4096, 4096, 2048, 400, 400, 64, 64, 128, 64, 262144};
  for (int i = 0; i < 11; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(mine[i]->seq, world[i]->seq);
    EXPECT_EQ(mine[i]->op, world[i]->op);
    EXPECT_EQ(mine[i]->bytes, world[i]->bytes);
    EXPECT_EQ(mine[i]->count, world[i]->count);
    EXPECT_EQ(mine[i]->root, world[i]->root);
    EXPECT_EQ(mine[i]->peer, world[i]->peer);
    // Two processes, two heaps: the buffers agree in which exist and which coincide (in place).
    EXPECT_EQ(mine[i]->sendbuf == 0, world[i]->sendbuf == 0);
    EXPECT_EQ(mine[i]->recvbuf == 0, world[i]->recvbuf == 0);
    EXPECT_EQ(mine[i]->sendbuf == mine[i]->recvbuf, world[i]->sendbuf == world[i]->recvbuf);
    EXPECT_EQ(mine[i]->stream, world[i]->stream);
    expect_profiled(alone, *mine[i], 5, per_rank[i], i == 4 || i == 5);
  }
  EXPECT_EQ(alone.meta.at("nccl_profiler.unmatched"), "0");
}
#endif
