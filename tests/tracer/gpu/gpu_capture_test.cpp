// GPU and annotation capture on real runs under `collscope trace`, on this CPU-only machine: NVTX injection
// (exact ranges, nesting, domains, cross-thread start/end, unbalanced pops), the NCCL interposer on its test
// double (communicators, sequence numbers, groups, errors) and on the real libnccl (which fails without a GPU),
// and a CUDA job with no device (output and exit code unchanged, one meta line).
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "../../common/run_process.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::mpirun;
using collscope::testing::run_process;

namespace {

// What COLLSCOPE_TEST_ENV gives (see CMakeLists.txt): set here unless the environment already has it.
const bool kTestEnvironment = [] {
  for (auto [k, v] : {std::pair<const char*, const char*>{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                      {"OMPI_MCA_rmaps_base_oversubscribe", "1"},
                      {"OMPI_MCA_btl", "self,vader"},
                      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
                      {"COLLSCOPE_BIN", COLLSCOPE_TEST_BIN},
                      {"COLLSCOPE_PRELOAD", COLLSCOPE_TEST_PRELOAD}})
    setenv(k, v, 0);
  return true;
}();

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");
const std::string kCollscope = kBin + "/collscope";

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-gpu-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::vector<std::string> traced(const fs::path& dir, std::vector<std::string> argv) {
  std::vector<std::string> out{kCollscope, "trace", "-o", dir.string(), "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> with_mpirun(int n, std::vector<std::string> argv) {
  auto out = mpirun(n);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::set<std::string> rank_files(const fs::path& dir) {
  std::set<std::string> out;
  if (fs::exists(dir))
    for (auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

struct Range {
  std::string domain, name;
  NvtxRangeRow row;
};

std::vector<Range> ranges_of(const TraceReader& r) {
  const auto strings = r.strings();
  std::vector<Range> out;
  for (auto& row : r.nvtx_ranges()) out.push_back({strings.at(row.domain), strings.at(row.name), row});
  return out;
}

std::vector<Range> named(const std::vector<Range>& all, const std::string& name) {
  std::vector<Range> out;
  for (auto& r : all)
    if (r.name == name) out.push_back(r);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.row.start_ns < b.row.start_ns; });
  return out;
}

// The exact annotations nvtx_probe.cpp makes (see its header comment).
void expect_probe_ranges(const TraceReader& r) {
  const auto all = ranges_of(r);
  EXPECT_EQ(all.size(), 22u);
  const auto steps = named(all, "step");
  ASSERT_EQ(steps.size(), 3u);
  for (auto& s : steps) {
    EXPECT_EQ(s.domain, "");
    EXPECT_EQ(s.row.kind, NvtxKind::PushPop);
    EXPECT_EQ(s.row.depth, 0);
    ASSERT_TRUE(s.row.end_ns);
    EXPECT_GE(*s.row.end_ns, s.row.start_ns);
  }
  for (const char* inner : {"forward", "backward"}) {
    const auto v = named(all, inner);
    ASSERT_EQ(v.size(), 3u) << inner;
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(v[i].row.depth, 1);
      // Nested inside the i-th step.
      EXPECT_GE(v[i].row.start_ns, steps[i].row.start_ns);
      EXPECT_LE(*v[i].row.end_ns, *steps[i].row.end_ns);
    }
  }
  const auto waits = named(all, "allreduce-wait");
  ASSERT_EQ(waits.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(waits[i].row.depth, 2);
    ASSERT_TRUE(waits[i].row.payload_int);
    EXPECT_EQ(*waits[i].row.payload_int, 1000 + std::int64_t(i));
    ASSERT_TRUE(waits[i].row.color);
    EXPECT_EQ(*waits[i].row.color, 0xFF00FF00u);
  }
  const auto reg = named(all, "registered-range");
  ASSERT_EQ(reg.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(reg[i].domain, "collscope.test");
    EXPECT_EQ(reg[i].row.category, 7);
    ASSERT_TRUE(reg[i].row.payload_double);
    EXPECT_DOUBLE_EQ(*reg[i].row.payload_double, 0.5 * double(i + 1));
  }
  const auto handoff = named(all, "handoff");
  const auto worker = named(all, "worker-range");
  ASSERT_EQ(handoff.size(), 1u);
  ASSERT_EQ(worker.size(), 1u);
  EXPECT_EQ(handoff[0].row.kind, NvtxKind::StartEnd);
  ASSERT_TRUE(handoff[0].row.end_thread);
  EXPECT_NE(*handoff[0].row.end_thread, handoff[0].row.thread);  // started on main, ended on the worker
  EXPECT_EQ(*handoff[0].row.end_thread, worker[0].row.thread);
  EXPECT_EQ(*worker[0].row.end_thread, worker[0].row.thread);
  for (const char* m : {"before-init", "checkpoint", "dmark"}) {
    const auto v = named(all, m);
    ASSERT_EQ(v.size(), 1u) << m;
    EXPECT_EQ(v[0].row.kind, NvtxKind::Mark);
    EXPECT_FALSE(v[0].row.end_ns);
  }
  EXPECT_EQ(named(all, "dmark")[0].domain, "collscope.test");
  EXPECT_EQ(named(all, "wide-\xc3\xa9").size(), 1u);
  EXPECT_EQ(named(all, std::string(60, 'L')).size(), 1u);
  const auto never = named(all, "never-popped");
  ASSERT_EQ(never.size(), 1u);
  EXPECT_FALSE(never[0].row.end_ns);
  EXPECT_EQ(never[0].row.depth, 0);  // the unbalanced pops before it did not drive the level negative
  EXPECT_EQ(r.meta_value("nvtx_unbalanced_pops").value_or("?"), "3");
  EXPECT_EQ(r.meta_value("nvtx.category.collscope.test.7").value_or("?"), "io");
}

}  // namespace

TEST(NvtxInjection, SingleProcessRecordsExactRanges) {
  const auto dir = fresh_dir("nvtx1");
  auto plain = run_process({kBin + "/nvtx_probe"});
  auto r = run_process(traced(dir, {kBin + "/nvtx_probe"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err.find("collscope:"), std::string::npos) << r.err;
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite"}));
  TraceReader reader((dir / "rank-00000.sqlite").string());
  EXPECT_EQ(reader.meta_value("trace_started_by").value_or("?"), "nvtx");
  expect_probe_ranges(reader);
}

// NVTX ranges go through event batches (schema 1.6): a batched run and a row run (COLLSCOPE_EVENT_BATCHES=0) of the
// probe read back the same 22 ranges; `collscope sql` turns the batches into exactly the rows the reader gave; a
// corrupt NVTX batch is one line naming the file, and `collscope sql` exits 2 on it.
TEST(NvtxInjection, RangesGoThroughEventBatchesAndReadAsTheRowPathsRows) {
  const auto batched = fresh_dir("nvtx-batched"), rows = fresh_dir("nvtx-rows");
  ASSERT_EQ(run_process(traced(batched, {kBin + "/nvtx_probe"})).exit_code, 0);
  ASSERT_EQ(run_process(traced(rows, {kBin + "/nvtx_probe"}), {{"COLLSCOPE_EVENT_BATCHES", "0"}}).exit_code, 0);
  const std::string file = (batched / "rank-00000.sqlite").string();
  auto sql_int = [](const std::string& path, const std::string& sql) {
    sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
    auto q = db.prepare(sql);
    return q.step() ? q.int64(0) : -1;
  };
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM nvtx_ranges"), 0);
  EXPECT_EQ(sql_int(file, "SELECT sum(count) FROM event_batches WHERE kind = 3"), 22);
  EXPECT_EQ(sql_int((rows / "rank-00000.sqlite").string(), "SELECT count(*) FROM nvtx_ranges"), 22);
  // Everything but the times, sorted (two runs of the program: the writer's drains may split them differently).
  auto shapes = [](const TraceReader& r) {
    std::vector<std::string> out;
    for (const auto& x : ranges_of(r)) {
      const NvtxRangeRow& n = x.row;
      out.push_back(x.domain + "|" + x.name + "|" + std::to_string(int(n.kind)) + "|" + std::to_string(n.category) +
                    "|" + std::to_string(n.depth) + "|" + std::to_string(n.thread) + "|" +
                    (n.end_ns ? "ended" : "open") + "|" + (n.end_thread ? std::to_string(*n.end_thread) : "-") + "|" +
                    (n.payload_int ? std::to_string(*n.payload_int) : "-") + "|" +
                    (n.payload_double ? std::to_string(*n.payload_double) : "-") + "|" +
                    (n.color ? std::to_string(*n.color) : "-"));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<NvtxRangeRow> decoded;
  {
    TraceReader b(file), p((rows / "rank-00000.sqlite").string());
    expect_probe_ranges(b);
    expect_probe_ranges(p);
    EXPECT_EQ(shapes(b), shapes(p));
    EXPECT_EQ(b.row_count("nvtx_ranges"), 22);
    decoded = b.nvtx_ranges();
  }
  const auto corrupt = fresh_dir("nvtx-corrupt");
  fs::create_directories(corrupt);
  fs::copy_file(file, corrupt / "rank-00000.sqlite");
  sqlite::Database((corrupt / "rank-00000.sqlite").string(), sqlite::OpenMode::ReadWrite)
      .exec("UPDATE event_batches SET payload = substr(payload, 1, length(payload) - 3) WHERE kind = 3");
  const auto bad = run_process({kCollscope, "sql", corrupt.string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find((corrupt / "rank-00000.sqlite").string() + ": event_batches row "), std::string::npos)
      << bad.err;
  const auto s = run_process({kCollscope, "sql", batched.string()});
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM event_batches"), 0);
  EXPECT_EQ(sql_int(file, "SELECT count(*) FROM nvtx_ranges"), 22);
  TraceReader expanded(file);
  const auto plain = expanded.nvtx_ranges();
  ASSERT_EQ(plain.size(), decoded.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].id, decoded[i].id);
    EXPECT_EQ(plain[i].start_ns, decoded[i].start_ns);
    EXPECT_EQ(plain[i].end_ns, decoded[i].end_ns);
    EXPECT_EQ(plain[i].end_thread, decoded[i].end_thread);
    EXPECT_EQ(plain[i].payload_double, decoded[i].payload_double);
    EXPECT_EQ(plain[i].color, decoded[i].color);
  }
}

TEST(NvtxInjection, ForkedChildWritesNothing) {
  // The probe links MPI but never calls MPI_Init: its file opens at exit; the child's exit must not open one.
  const auto dir = fresh_dir("nvtxfork");
  auto r = run_process(traced(dir, {kBin + "/nvtx_probe", "--fork"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  usleep(800 * 1000);  // the child exits 300 ms after the parent
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite"}));
  TraceReader reader((dir / "rank-00000.sqlite").string());
  expect_probe_ranges(reader);  // the parent's 22 ranges, none of the child's
  const auto all = ranges_of(reader);
  EXPECT_TRUE(named(all, "in-child").empty());
  EXPECT_TRUE(named(all, "child-mark").empty());
}

TEST(NvtxInjection, MpiRanksBufferRangesBeforeInit) {
  const auto dir = fresh_dir("nvtx2");
  auto r = run_process(traced(dir, with_mpirun(2, {kBin + "/nvtx_probe", "--mpi"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The launcher makes no NVTX call and writes nothing: exactly one file per rank.
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite"}));
  for (const char* f : {"rank-00000.sqlite", "rank-00001.sqlite"}) {
    SCOPED_TRACE(f);
    TraceReader reader((dir / f).string());
    EXPECT_FALSE(reader.meta_value("trace_started_by"));  // opened by MPI_Init, not by NVTX
    expect_probe_ranges(reader);
  }
}

TEST(NvtxInjection, WithoutTheTracerTheProbeRunsUnchanged) {
  auto r = run_process({kBin + "/nvtx_probe", "--loop", "1000"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "nvtx_probe: 1000 pairs\n");
}

TEST(NvtxInjection, FusionTrainerStepsAreRanges) {
  const std::string trainer = kBin + "/fusion_trainer";
  if (!fs::exists(trainer)) GTEST_SKIP() << trainer << " not built";
  const auto dir = fresh_dir("trainer");
  auto r = run_process(traced(dir, with_mpirun(2, {trainer, "--steps", "4", "--warmup-steps", "1"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"rank-00000.sqlite", "rank-00001.sqlite"}) {
    TraceReader reader((dir / f).string());
    const auto steps = named(ranges_of(reader), "step");
    ASSERT_EQ(steps.size(), 4u) << f;
    for (auto& s : steps) {
      EXPECT_EQ(s.row.depth, 0);
      EXPECT_TRUE(s.row.end_ns);
    }
  }
}

#ifdef COLLSCOPE_TEST_HAVE_NCCL_DOUBLE
TEST(NcclInterposer, TestDoubleCommunicatorsSequencesAndGroups) {
  const std::string probe = kBin + "/nccl_probe_fake";
  const auto dir = fresh_dir("ncclfake");
  auto plain = run_process({probe});
  auto r = run_process(traced(dir, {probe}), {{"RANK", "1"}, {"WORLD_SIZE", "4"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);  // every return code passed through
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00001.sqlite"}));
  TraceReader reader((dir / "rank-00001.sqlite").string());
  EXPECT_EQ(reader.meta_value("trace_started_by").value_or("?"), "nccl");
  EXPECT_EQ(reader.meta_value("nccl_version").value_or("?"), "2.99.99 (29999)");
  EXPECT_EQ(reader.meta_value("nccl.error.ncclCommInitRank").value_or("?"), "test double error (4)");

  const auto comms = reader.communicators();
  ASSERT_EQ(comms.size(), 5u);
  // ncclCommInitAll: one communicator of 2 ranks, both here (same key), then the configured one (its own key).
  EXPECT_EQ(comms[2].key, comms[3].key);
  EXPECT_EQ(comms[2].size, 2);
  EXPECT_EQ(comms[2].rank, 0);
  EXPECT_EQ(comms[3].rank, 1);
  EXPECT_EQ(comms[4].size, 2);
  EXPECT_EQ(comms[4].rank, 0);
  std::set<std::uint64_t> keys;
  for (auto& c : comms) {
    EXPECT_TRUE(c.destroyed_ns) << c.name;
    keys.insert(c.key);
  }
  EXPECT_EQ(keys.size(), 4u);
  const auto& world = comms[0];
  const auto& child = comms[1];
  EXPECT_EQ(world.backend, Backend::Nccl);
  EXPECT_EQ(world.size, 4);
  EXPECT_EQ(world.rank, 1);
  EXPECT_FALSE(world.parent);
  EXPECT_TRUE(world.destroyed_ns);
  EXPECT_EQ(child.backend, Backend::Nccl);
  ASSERT_TRUE(child.parent);
  EXPECT_EQ(*child.parent, world.key);
  ASSERT_TRUE(child.color);
  EXPECT_EQ(*child.color, 5);
  EXPECT_NE(child.key, world.key);
  EXPECT_TRUE(child.destroyed_ns);

  const auto strings = reader.strings();
  std::vector<CollectiveRow> on_world, on_child, on_all;
  for (auto& c : reader.collectives()) {
    if (c.comm == world.id) on_world.push_back(c);
    else if (c.comm == child.id) on_child.push_back(c);
    else if (c.comm == comms[3].id) on_all.push_back(c);
    else ADD_FAILURE() << "collective on communicator " << c.comm;
  }
  ASSERT_EQ(on_world.size(), 10u);
  ASSERT_EQ(on_child.size(), 2u);
  ASSERT_EQ(on_all.size(), 1u);
  EXPECT_EQ(on_all[0].seq, 0);
  EXPECT_EQ(on_all[0].bytes, 10);
  std::sort(on_world.begin(), on_world.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
  const Op expected[] = {Op::Allreduce, Op::Allreduce, Op::Allreduce, Op::Bcast,         Op::Send,
                         Op::Recv,      Op::Allgather, Op::Reduce,    Op::ReduceScatter, Op::Allreduce};
  const std::int64_t bytes[] = {4096, 4096, 4096, 2048, 400, 400, 256, 64, 512, 0};
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(on_world[i].seq, i);
    EXPECT_EQ(on_world[i].op, expected[i]);
    EXPECT_EQ(on_world[i].bytes, bytes[i]);
    ASSERT_TRUE(on_world[i].stream);
    EXPECT_EQ(*on_world[i].stream, 0x5eedu);
    ASSERT_TRUE(on_world[i].correlation);
  }
  EXPECT_EQ(strings.at(on_world[0].datatype), "ncclFloat32");
  EXPECT_EQ(strings.at(on_world[0].reduce_op), "ncclSum");
  EXPECT_EQ(strings.at(on_world[7].reduce_op), "ncclMax");
  EXPECT_EQ(on_world[3].root.value_or(-9), 0);
  EXPECT_EQ(on_world[4].peer.value_or(-9), 2);
  EXPECT_EQ(on_world[5].peer.value_or(-9), 0);
  EXPECT_EQ(on_world[7].root.value_or(-9), 3);
  EXPECT_EQ(on_world[9].status, 5);  // ncclInvalidUsage, recorded and passed through
  EXPECT_EQ(on_world[0].status, 0);
  // Groups: calls 4..6 share one group and one correlation id; 7..8 (nested group) another; others none.
  for (int i : {0, 1, 2, 3, 9}) EXPECT_FALSE(on_world[i].group) << i;
  ASSERT_TRUE(on_world[4].group && on_world[7].group);
  EXPECT_EQ(on_world[5].group, on_world[4].group);
  EXPECT_EQ(on_world[6].group, on_world[4].group);
  EXPECT_EQ(on_world[8].group, on_world[7].group);
  EXPECT_NE(on_world[7].group, on_world[4].group);
  EXPECT_EQ(on_world[6].correlation, on_world[4].correlation);
  EXPECT_EQ(on_world[8].correlation, on_world[7].correlation);
  std::set<std::uint64_t> ungrouped;
  for (int i : {0, 1, 2, 3, 9}) ungrouped.insert(*on_world[i].correlation);
  EXPECT_EQ(ungrouped.size(), 5u);
  EXPECT_EQ(on_child[0].seq, 0);
  EXPECT_EQ(on_child[1].seq, 1);
  EXPECT_EQ(on_child[0].bytes, 128);
  EXPECT_EQ(strings.at(on_child[0].datatype), "ncclFloat16");
  // No GPU here: no activity, no GPU times.
  EXPECT_EQ(reader.row_count("gpu_activities"), 0);
  for (auto& c : on_world) EXPECT_FALSE(c.gpu_start_ns);
  // NCCL calls are event batch records (schema 1.6), not rows.
  sqlite::Database db((dir / "rank-00001.sqlite").string(), sqlite::OpenMode::ReadOnly);
  auto rows = db.prepare("SELECT count(*) FROM collectives");
  ASSERT_TRUE(rows.step());
  EXPECT_EQ(rows.int64(0), 0);
  auto batched = db.prepare("SELECT sum(count) FROM event_batches WHERE kind = 1");
  ASSERT_TRUE(batched.step());
  EXPECT_EQ(batched.int64(0), 13);
}
#endif

#ifdef COLLSCOPE_TEST_HAVE_NCCL_REAL
TEST(NcclInterposer, RealLibncclFailsWithoutGpuAndTheErrorIsPassedThrough) {
  const std::string probe = kBin + "/nccl_probe_real";
  const auto dir = fresh_dir("ncclreal");
  auto plain = run_process({probe}, {}, 60);
  auto r = run_process(traced(dir, {probe}), {}, 60);
  ASSERT_FALSE(plain.timed_out);
  ASSERT_EQ(r.exit_code, plain.exit_code) << r.err;
  EXPECT_EQ(r.out, plain.out);
  // The probe prints "ncclCommInitRank -> RC" and "version V".
  auto value_after = [&](const std::string& key) {
    auto p = plain.out.find(key);
    if (p == std::string::npos) return std::string("?");
    auto e = plain.out.find('\n', p);
    return plain.out.substr(p + key.size(), e - p - key.size());
  };
  const std::string init_rc = value_after("ncclCommInitRank -> ");
  const std::string version = value_after("version ");
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite"}));
  TraceReader reader((dir / "rank-00000.sqlite").string());
  const auto v = reader.meta_value("nccl_version");
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("(" + version + ")"), std::string::npos) << *v;
  if (init_rc != "0") {
    const auto err = reader.meta_value("nccl.error.ncclCommInitRank");
    ASSERT_TRUE(err) << "init failed with " << init_rc << " but no error recorded";
    EXPECT_NE(err->find("(" + init_rc + ")"), std::string::npos) << *err;
    EXPECT_EQ(reader.communicators().size(), 0u);
  }
}
#endif

#ifdef COLLSCOPE_TEST_HAVE_CUDART
TEST(GpuCapture, CudaJobWithoutDeviceRunsUnchangedAndNotesItOnce) {
  const std::string probe = kBin + "/cuda_nodevice_probe";
  const auto dir = fresh_dir("nodevice");
  auto plain = run_process(with_mpirun(1, {probe}));
  auto r = run_process(traced(dir, with_mpirun(1, {probe})), {{"COLLSCOPE_FLUSH_MS", "10"}});
  ASSERT_EQ(r.exit_code, plain.exit_code) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err.find("collscope:"), std::string::npos) << r.err;
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite"}));
  TraceReader reader((dir / "rank-00000.sqlite").string());
  const auto note = reader.meta_value("gpu_capture");
  ASSERT_TRUE(note) << "no gpu_capture meta line";
  // The writer starts GPU capture at its first drain while the job runs; it runs when a core is idle, so on a
  // loaded machine this short job can end first, which the note then says (once in ten clean-clone suite runs
  // under load).
  const bool ended_first = note->find("ended before the tracer's writer started GPU capture") != std::string::npos;
  if (plain.out.find("devices 0") != std::string::npos && !ended_first) {  // the machine really has no GPU
    EXPECT_TRUE(note->find("no CUDA driver") != std::string::npos || note->find("no CUDA device") != std::string::npos)
        << *note;
  }
  EXPECT_EQ(reader.row_count("gpu_activities"), 0);
  EXPECT_EQ(reader.collectives().size(), 1u);  // the job's MPI_Allreduce, traced as usual
}
#endif
