// The preload tracer on real Open MPI runs of mpi_probe (a program with a known set of calls).
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <regex>
#include <set>

#include "../common/hung_job.hpp"
#include "../common/run_process.hpp"
#include "../common/run_queue.hpp"
#include "../common/sanitized.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::mpirun;
using collscope::testing::run_process;
using collscope::testing::run_until_every_rank_hangs;

namespace {

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");
const std::string kCollscope = kBin + "/collscope";
const std::string kProbe = kBin + "/mpi_probe";

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-preload-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::vector<std::string> cmd(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::set<std::string> rank_files(const fs::path& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".sqlite") out.insert(e.path().filename().string());
  return out;
}

struct RankView {
  std::vector<std::string> strings;
  std::vector<CommunicatorRow> comms;
  std::vector<CollectiveRow> colls;
  std::map<std::string, std::string> meta;
  const CommunicatorRow& comm_named(const std::string& prefix) const {
    for (auto& c : comms)
      if (c.name.rfind(prefix, 0) == 0) return c;
    throw std::runtime_error("no communicator " + prefix);
  }
  std::vector<CollectiveRow> on(std::int64_t comm) const {
    std::vector<CollectiveRow> out;
    for (auto& c : colls)
      if (c.comm == comm) out.push_back(c);
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    return out;
  }
};

RankView load(const fs::path& file) {
  TraceReader r(file.string());
  return {r.strings(), r.communicators(), r.collectives(), r.meta()};
}

// Starts `argv` with one extra environment variable, its stdout readable line by line while it runs (for tests
// that act in the middle of a job). The caller reads `out` to the end or closes it, then waits for `job`.
struct RunningJob {
  collscope::process::Process job;
  FILE* out = nullptr;
};
RunningJob start_job(std::vector<std::string> argv, const char* env_name, const char* env_value,
                     std::vector<std::pair<std::string, std::string>> more_env = {}) {
  collscope::process::Command command(std::move(argv));
  command.set_env(env_name, env_value);
  for (auto& [k, v] : more_env) command.set_env(k, v);
  command.out = collscope::process::Redirect::pipe();
  auto job = collscope::process::Process::start(command);
  FILE* out = fdopen(job.take_stdout(), "r");
  return {std::move(job), out};
}

}  // namespace

TEST(Preload, ThreeRanksRecordExactlyTheCallsMade) {
  const auto dir = fresh_dir("probe3");
  auto r = run_process(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                           cmd(mpirun(3), {kProbe, "--iterations", "10"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The launcher (mpirun, orted) had the preload too but never called MPI: it wrote nothing.
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite", "rank-00002.sqlite"}));

  std::vector<RankView> ranks;
  for (int i = 0; i < 3; ++i) ranks.push_back(load(dir / rank_file_name(i)));

  const std::vector<std::pair<std::string, int>> world_ops_per_iteration = {
      {"allreduce", 1}, {"bcast", 1}, {"iallreduce", 1}, {"barrier", 1}};
  for (int rank = 0; rank < 3; ++rank) {
    const RankView& v = ranks[rank];
    EXPECT_EQ(v.meta.at("world_rank"), std::to_string(rank));
    EXPECT_EQ(v.meta.at("world_size"), "3");
    const auto& world = v.comm_named("MPI_COMM_WORLD");
    EXPECT_EQ(world.members, (std::vector<std::int32_t>{0, 1, 2}));
    EXPECT_EQ(world.key, ranks[0].comm_named("MPI_COMM_WORLD").key);
    // Split by rank % 2: {0, 2} and {1}; the same key on members, another key elsewhere.
    const auto& split = v.comm_named("split");
    EXPECT_EQ(split.color, rank % 2);
    EXPECT_EQ(split.parent, world.key);
    if (rank % 2 == 0) {
      EXPECT_EQ(split.members, (std::vector<std::int32_t>{0, 2}));
      EXPECT_EQ(split.rank, rank / 2);
    } else {
      EXPECT_EQ(split.members, (std::vector<std::int32_t>{1}));
    }
    EXPECT_EQ(split.key == ranks[0].comm_named("split").key, rank % 2 == 0);
    EXPECT_TRUE(split.destroyed_ns.has_value());
    const auto& dup = v.comm_named("dup");
    EXPECT_EQ(dup.key, ranks[0].comm_named("dup").key);
    EXPECT_TRUE(dup.destroyed_ns.has_value());

    // World: 10 iterations of 4 calls, then reduce, gather, scatter, alltoall, reduce_scatter_block.
    auto on_world = v.on(world.id);
    ASSERT_EQ(on_world.size(), 45u);
    for (std::size_t i = 0; i < on_world.size(); ++i) {
      EXPECT_EQ(on_world[i].seq, static_cast<std::int64_t>(i));  // sequence numbers without a gap
      // The k-th call of a communicator is the same collective on every rank.
      EXPECT_EQ(on_world[i].op, ranks[0].on(ranks[0].comm_named("MPI_COMM_WORLD").id)[i].op);
      EXPECT_EQ(on_world[i].status, 0);
      EXPECT_LE(on_world[i].start_ns, on_world[i].end_ns);
    }
    std::map<std::string, int> counts;
    for (auto& c : on_world) counts[std::string(op_name(c.op))]++;
    EXPECT_EQ(counts, (std::map<std::string, int>{{"allreduce", 10}, {"bcast", 10}, {"iallreduce", 10}, {"barrier", 10},
                                                   {"reduce", 1}, {"gather", 1}, {"scatter", 1}, {"alltoall", 1},
                                                   {"reduce_scatter_block", 1}}));
    for (auto& c : on_world) {
      const std::string op(op_name(c.op));
      if (op == "allreduce") {
        EXPECT_EQ(c.bytes, 4096);
        EXPECT_EQ(c.count, 1024);
        EXPECT_EQ(v.strings.at(c.datatype), "MPI_FLOAT");
        EXPECT_EQ(v.strings.at(c.reduce_op), "MPI_SUM");
      } else if (op == "bcast") {
        EXPECT_EQ(c.bytes, 1024);
        EXPECT_EQ(c.root, 0);
        EXPECT_EQ(v.strings.at(c.datatype), "MPI_INT");
      } else if (op == "iallreduce") {
        EXPECT_EQ(c.bytes, 256);
        EXPECT_EQ(c.sendbuf, 0u);  // MPI_IN_PLACE
      } else if (op == "alltoall") {
        EXPECT_EQ(c.bytes, 4 * 3);
      } else if (op == "reduce_scatter_block") {
        EXPECT_EQ(c.bytes, 8 * 4 * 3);
      }
    }
    auto on_split = v.on(split.id);
    ASSERT_EQ(on_split.size(), 10u);
    EXPECT_EQ(on_split[9].seq, 9);
    EXPECT_EQ(on_split[0].bytes, 80);
    EXPECT_EQ(v.strings.at(on_split[0].reduce_op), "MPI_MAX");
    auto on_dup = v.on(dup.id);
    ASSERT_EQ(on_dup.size(), 1u);
    EXPECT_EQ(on_dup[0].op, Op::Allgather);
    EXPECT_EQ(on_dup[0].bytes, 4 * 4 * 3);

    // Durations agree with the program's own timing of each world allreduce: the tracer's window lies inside the
    // program's, and within 5 % plus 2 us of clock reads of it. With 3 ranks on 2 cores a rank is now and then
    // preempted between the two clock reads of one call (seen: 1 run in 15, one call 170 us longer), so 8 of
    // the 10 calls must agree, or the gaps of those that do not must lie within the time the rank's threads
    // waited for a CPU (its cpu_samples' run-queue delay): a systematic error would fail them all on a quiet host.
    std::smatch m;
    const std::regex line("mpi_probe rank " + std::to_string(rank) + ": iterations 10 .*allreduce_world_ns ([0-9,]+)");
    ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
    std::vector<double> own;
    std::stringstream list(m[1].str());
    for (std::string item; std::getline(list, item, ',');) own.push_back(std::stod(item));
    std::vector<double> traced;
    for (auto& c : on_world)
      if (c.op == Op::Allreduce) traced.push_back(static_cast<double>(c.end_ns - c.start_ns));
    ASSERT_EQ(traced.size(), own.size());
    int agreeing = 0;
    double worst_ns = 0, disagreeing_gaps_ns = 0;
    for (std::size_t i = 0; i < own.size(); ++i) {
      EXPECT_LE(traced[i], own[i]) << "rank " << rank << " call " << i;  // inside the program's window
      const bool agrees = std::abs(traced[i] - own[i]) <= own[i] * 0.05 + 2000;
      agreeing += agrees;
      if (!agrees) disagreeing_gaps_ns += own[i] - traced[i];
      worst_ns = std::max(worst_ns, own[i] - traced[i]);
    }
    const auto runq_ns = double(collscope::testing::run_queue_ns(TraceReader((dir / rank_file_name(rank)).string())));
    std::printf("rank %d: %d of %zu allreduces within 5 %% + 2 us of the program's timing; largest gap %.0f ns; "
                "run-queue delay %.0f ns\n", rank, agreeing, own.size(), worst_ns, runq_ns);
    // A checking build's instrumentation between the program's clock reads and the tracer's makes the gap uneven
    // (seen: 7 of 10 under ASan); there only the window containment above is asserted.
    if (!kSanitizedBuild) {
      EXPECT_TRUE(agreeing >= 8 || disagreeing_gaps_ns <= runq_ns)
          << "rank " << rank << ": " << agreeing << " of 10 agree; the others' gaps " << disagreeing_gaps_ns
          << " ns, run-queue delay " << runq_ns << " ns";
    }
  }
}

// Instructions retired (schema 1.8): the tracer counts them wherever this machine's perf events do, and says why
// not where they do not (this project's VMs: no virtual PMU, ENOENT). The test asks the kernel itself the same way
// and holds the trace to the answer: every sample with a count, each thread's counts rising, or every one NULL and
// the reason in meta cpu_sampling.
TEST(Preload, InstructionsRetiredWherePerfEventsCountThem) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  const std::string why_not = fd >= 0 ? "" : std::strerror(errno);
  if (fd >= 0) ::close(fd);
  const auto dir = fresh_dir("instructions");
  // A sample at nearly every call (the default is at most one a millisecond per thread; the probe takes about one).
  auto r = run_process(cmd({"env", "COLLSCOPE_CPU_SAMPLE_US=1", kCollscope, "trace", "-o", dir.string(), "--"},
                           cmd(mpirun(2), {kProbe, "--iterations", "50"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const TraceReader reader((dir / rank_file_name(rank)).string());
    const std::string meta = reader.meta_value("cpu_sampling").value_or("");
    std::map<std::int64_t, std::int64_t> last;  // thread -> its last count
    int samples = 0, counted = 0;
    for (const auto& row : reader.rows<CpuSampleRow>()) {
      ++samples;
      if (!row.instructions) continue;
      ++counted;
      auto [it, fresh] = last.try_emplace(row.thread, *row.instructions);
      if (!fresh) EXPECT_GE(*row.instructions, it->second) << "rank " << rank << " thread " << row.thread;
      it->second = *row.instructions;
    }
    ASSERT_GT(samples, 2) << meta;
    std::printf("rank %d: %d of %d samples with instructions; cpu_sampling: %s\n", rank, counted, samples, meta.c_str());
    if (why_not.empty()) {
      EXPECT_EQ(counted, samples) << meta;
      EXPECT_NE(meta.find("instructions retired (perf events, user space)"), std::string::npos) << meta;
      std::int64_t most = 0;
      for (const auto& [thread, count] : last) most = std::max(most, count);
      EXPECT_GT(most, 0);
    } else {
      EXPECT_EQ(counted, 0);
      EXPECT_NE(meta.find("no instructions (perf_event_open: " + why_not + ")"), std::string::npos) << meta;
    }
  }
}

TEST(Preload, ExitCodeAndOutputPassThrough) {
  const auto dir = fresh_dir("exit");
  auto r = run_process(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                           cmd(mpirun(2), {kProbe, "--iterations", "2", "--exit-code", "3"})));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("mpi_probe rank 1: iterations 2"), std::string::npos);
  EXPECT_EQ(rank_files(dir).size(), 2u);
}

TEST(Preload, UnwritableRunDirectoryWarnsOnceAndTheJobCompletes) {
  // A path under a regular file can never be created, even by root.
  const auto dir = fresh_dir("blocked");
  fs::create_directories(dir);
  { std::ofstream(dir / "file") << "x"; }
  const auto run_dir = dir / "file" / "run";
  auto r = run_process(cmd({kCollscope, "trace", "-o", run_dir.string(), "--"},
                           cmd(mpirun(2), {kProbe, "--iterations", "3"})));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mpi_probe rank 0: iterations 3"), std::string::npos);
  EXPECT_NE(r.out.find("mpi_probe rank 1: iterations 3"), std::string::npos);
  // One line per process, naming the file, and nothing else from collscope.
  int warnings = 0;
  std::istringstream err(r.err);
  for (std::string l; std::getline(err, l);) {
    if (l.find("collscope:") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(l.find("cannot write trace"), std::string::npos) << l;
    EXPECT_NE(l.find("rank-0000"), std::string::npos) << l;
  }
  EXPECT_EQ(warnings, 2) << r.err;
}

TEST(Preload, ForkedChildrenWriteNothing) {
  const auto dir = fresh_dir("fork");
  auto r = run_process(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                           cmd(mpirun(2), {kProbe, "--iterations", "3", "--fork-child", "--fork-after-init"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite"}));
  for (int rank = 0; rank < 2; ++rank) {
    auto v = load(dir / rank_file_name(rank));
    EXPECT_EQ(v.on(v.comm_named("MPI_COMM_WORLD").id).size(), 3u * 4 + 5);
    EXPECT_TRUE(v.meta.count("clock_monotonic_end_ns"));  // the parent finished its file
  }
}

TEST(Preload, ProcessWithoutMpiWritesNothing) {
  const auto dir = fresh_dir("nompi");
  auto r = run_process({kCollscope, "trace", "-o", dir.string(), "--", "/bin/sh", "-c", "echo hello; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_TRUE(rank_files(dir).empty());
}

TEST(Preload, SigkillKeepsEverythingUpToTheLastBatch) {
  const auto dir = fresh_dir("kill");
  auto [job, in] = start_job(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                                 cmd(mpirun(1), {kProbe, "--iterations", "100000", "--sleep-ms-after-each", "5", "--progress"})),
                             "COLLSCOPE_FLUSH_MS", "50",
                             // What a kill keeps is what the writer committed, every 50 ms here. At its default
                             // nice 19 it gets little CPU while other processes keep both cores busy (in the idle
                             // class it got none: ctest -j2 lost 26+ iterations once), so this test, about the kill
                             // and not the class, runs it in the normal class.
                             {{"COLLSCOPE_WRITER_CLASS", "normal"}});
  ASSERT_TRUE(in);
  char line[512];
  int probe_pid = 0, done = 0;
  while (done < 60 && fgets(line, sizeof line, in)) std::sscanf(line, "mpi_probe rank 0 pid %d: iteration %d done", &probe_pid, &done);
  ASSERT_EQ(done, 60);
  ASSERT_GT(probe_pid, 0);
  ASSERT_EQ(kill(probe_pid, SIGKILL), 0);  // the traced rank itself, mid-run: no exit handler runs
  // The probe ran on while its line 60 came through mpirun's forwarding and this test got a CPU to read it and
  // kill (on a loaded machine that takes longer than the 5 iterations this bound once allowed). The lines it
  // printed before the kill are still in the pipes: the last one says how far it really got.
  int printed = done;
  while (fgets(line, sizeof line, in)) {
    int pid = 0, it = 0;
    if (std::sscanf(line, "mpi_probe rank 0 pid %d: iteration %d done", &pid, &it) == 2) printed = std::max(printed, it);
  }
  job.wait();
  fclose(in);
  // The file opens, and holds every iteration up to the last committed batch (50 ms = 10 iterations here). Lower
  // bound: each iteration sleeps 5 ms by the clock, so iteration 35 ended at least 125 ms before line 60 was
  // printed, time for two commits of a writer in the normal class. Upper bound: at most the iterations the probe
  // printed, plus the one it may have finished calling but not printed when the kill came.
  auto v = load(dir / rank_file_name(0));
  auto on_world = v.on(v.comm_named("MPI_COMM_WORLD").id);
  const int iterations = static_cast<int>(on_world.size() / 4);
  EXPECT_GE(iterations, 60 - 25) << "a kill lost more than the last batches";
  EXPECT_LE(iterations, printed + 1) << "the file holds iterations the probe never made";
  for (std::size_t i = 0; i < on_world.size(); ++i) EXPECT_EQ(on_world[i].seq, static_cast<std::int64_t>(i));
  // Those calls were in event batches (schema 1.3), never expanded: the reader decoded them, and the analyzer reads
  // the run.
  EXPECT_GT(TraceReader((dir / rank_file_name(0)).string()).row_count("event_batches"), 0);
  const auto a = run_process({kCollscope, "analyze", dir.string()});
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
}

TEST(Preload, HungCallsStayInTheFileWhenTheJobIsKilled) {
  // Rank 1 waits in a barrier the others never call while they wait in the world allreduce: a deadlock that
  // `timeout` ends with SIGTERM (no exit handler runs in the ranks). Each rank's file keeps the call it hung in.
  const auto dir = fresh_dir("hang");
  const auto r = run_until_every_rank_hangs(
      cmd({kCollscope, "trace", "-o", dir.string(), "--"},
          cmd(mpirun(3), {kProbe, "--iterations", "6", "--hang-rank", "1", "--hang-iteration", "3"})),
      {{"COLLSCOPE_HANG_MS", "200"}}, dir, 3, collscope::testing::at_mpi_probe_hang);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  for (int rank : {0, 1, 2}) {
    TraceReader reader((dir / rank_file_name(rank)).string());
    const auto v = load(dir / rank_file_name(rank));
    const auto in_flight = reader.calls_in_flight();
    ASSERT_EQ(in_flight.size(), 1u) << "rank " << rank;
    const auto& c = in_flight[0];
    EXPECT_GE(c.seen_ns - c.start_ns, 200'000'000) << "rank " << rank;
    if (rank == 1) {
      EXPECT_EQ(c.op, Op::Barrier);
      EXPECT_EQ(c.comm, v.comm_named("dup(MPI_COMM_WORLD").id);
      EXPECT_EQ(c.seq, 0);
    } else {
      // Iterations 0-2 made 4 world calls each (allreduce, bcast, iallreduce, barrier): this is the 13th.
      EXPECT_EQ(c.op, Op::Allreduce);
      EXPECT_EQ(c.comm, v.comm_named("MPI_COMM_WORLD").id);
      EXPECT_EQ(c.seq, 12);
      EXPECT_EQ(c.count, 1024);
      EXPECT_EQ(c.bytes, 4096);
      EXPECT_EQ(v.strings.at(c.datatype), "MPI_FLOAT");
      EXPECT_EQ(v.on(c.comm).size(), 12u);  // every call before it returned and is there
    }
  }
}

namespace {

// The deadlock of HungCallsStayInTheFileWhenTheJobIsKilled with a non-blocking world allreduce on ranks 0 and 2
// (mpi_probe --hang-nonblocking, plus `extra`): their call in flight must be that Iallreduce, rank 1's the barrier.
// Returns ranks 0 and 2's rows with their traces and how long their threads waited for a CPU (ns).
struct HungRank {
  CallInFlightRow row;
  RankView view;
  std::int64_t run_queue_ns = 0;
};
std::vector<HungRank> nonblocking_deadlock(const std::string& name, std::vector<std::string> extra) {
  const auto dir = fresh_dir(name);
  std::vector<std::string> probe = {kProbe, "--iterations", "6", "--hang-rank", "1", "--hang-iteration", "3",
                                    "--hang-nonblocking"};
  probe.insert(probe.end(), extra.begin(), extra.end());
  const auto r = run_until_every_rank_hangs(cmd({kCollscope, "trace", "-o", dir.string(), "--"}, cmd(mpirun(3), probe)),
                                            {{"COLLSCOPE_HANG_MS", "200"}}, dir, 3, collscope::testing::at_mpi_probe_hang);
  EXPECT_FALSE(r.timed_out);
  std::vector<HungRank> out;
  for (int rank : {0, 2}) {
    const auto v = load(dir / rank_file_name(rank));
    const TraceReader reader((dir / rank_file_name(rank)).string());
    const auto in_flight = reader.calls_in_flight();
    EXPECT_EQ(in_flight.size(), 1u) << "rank " << rank;
    if (in_flight.size() != 1) continue;
    EXPECT_EQ(in_flight[0].op, Op::Iallreduce);
    EXPECT_EQ(in_flight[0].comm, v.comm_named("MPI_COMM_WORLD").id);
    EXPECT_EQ(in_flight[0].seq, 12);
    EXPECT_EQ(in_flight[0].bytes, 4096);
    out.push_back({in_flight[0], v, collscope::testing::run_queue_ns(reader)});
  }
  const auto rank1 = TraceReader((dir / rank_file_name(1)).string()).calls_in_flight();
  EXPECT_TRUE(!rank1.empty() && rank1[0].op == Op::Barrier);
  return out;
}

}  // namespace

TEST(Preload, WaitingForANonBlockingCollectiveIsItsCallInFlight) {
  // Ranks 0 and 2 start the world allreduce with MPI_Iallreduce and hang in MPI_Wait.
  EXPECT_EQ(nonblocking_deadlock("hang-nonblocking", {}).size(), 2u);
}

TEST(Preload, PollingForANonBlockingCollectiveKeepsItInFlight) {
  // Ranks 0 and 2 poll for their Iallreduce with MPI_Test and sleep in between, inside no MPI call most of the
  // time. The pending collective is still their call in flight, from when it started.
  const auto rows = nonblocking_deadlock("hang-polling", {"--polling"});
  EXPECT_EQ(rows.size(), 2u);
  for (const auto& [row, v, run_queue_ns] : rows) {
    // From the Iallreduce itself: the previous call (iteration 2's barrier) ended just before it, the probe's own
    // code between them taking microseconds; on a loaded host the rank may wait for a CPU in between, at most as
    // long as its threads waited in all.
    std::int64_t last_end = 0;
    for (const auto& c : v.colls) last_end = std::max(last_end, c.end_ns);
    EXPECT_GE(row.start_ns, last_end);
    EXPECT_LT(row.start_ns - last_end, 100'000'000 + run_queue_ns);
    EXPECT_GE(row.seen_ns - row.start_ns, 200'000'000);
  }
}

TEST(Preload, ConcurrentPollingThreadsAreTracedWhileTheWriterScansTheirRequests) {
  // 4 threads per rank start Iallreduces on their own communicators and spin on MPI_Test, while the writer scans
  // the pending table at every drain (a 1 ms threshold makes every pending collective a call in flight). Every
  // collective must arrive whole (its own communicator and seq), and nothing may stay in flight at the end.
  const auto dir = fresh_dir("polling-threads");
  const int threads = 4, iterations = 1500;
  const auto r = run_process(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                                 cmd(mpirun(2), {kProbe, "--polling-threads", std::to_string(threads), "--iterations",
                                                 std::to_string(iterations)})),
                             {{"COLLSCOPE_HANG_MS", "1"}, {"COLLSCOPE_FLUSH_MS", "5"}}, 120);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank : {0, 1}) {
    TraceReader reader((dir / rank_file_name(rank)).string());
    const auto v = load(dir / rank_file_name(rank));
    const std::int64_t dropped = std::stoll(v.meta.at("events_dropped"));
    std::map<std::int64_t, std::set<std::int64_t>> seqs;  // dup communicator -> seqs seen
    std::int64_t rows = 0;
    for (const auto& c : v.colls) {
      if (c.op != Op::Iallreduce) continue;
      ++rows;
      EXPECT_EQ(c.bytes, 256);
      EXPECT_GE(c.end_ns, c.start_ns);
      seqs[c.comm].insert(c.seq);
    }
    EXPECT_EQ(rows + dropped, threads * iterations) << "rank " << rank;
    EXPECT_EQ(seqs.size(), static_cast<std::size_t>(threads));
    for (const auto& [comm, s] : seqs) {
      EXPECT_GE(*s.begin(), 0);
      EXPECT_LT(*s.rbegin(), iterations);
    }
    EXPECT_TRUE(reader.calls_in_flight().empty()) << "rank " << rank;
  }
}

TEST(Preload, ThreadsThatComeAndGoLeaveNoDescriptorsOrBuffersBehind) {
  // 1 500 threads one after another, each one MPI call, as a job that starts a thread per task: each thread's
  // first call opens its scheduler counter (and its instruction counter where perf events count them), and the
  // tracer must close them when the thread exits, or the job reaches its descriptor limit (1 024 by default).
  // Each thread's first event also takes a 64 KiB chunk: an exited thread's chunks go to the threads after it,
  // or the buffers would grow by 1 500 chunks (94 MiB) past their cap. With a 16 MiB cap (256 chunks) they stay
  // within it however rarely the writer runs: at the cap a thread writes out itself, which frees the exited
  // threads' chunks.
  const auto dir = fresh_dir("thread-churn");
  const int threads = 1500;
  const auto r = run_process(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                                 cmd(mpirun(2), {kProbe, "--thread-churn", std::to_string(threads)})),
                             {{"COLLSCOPE_BUFFER_MB", "16"}}, 120);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Each rank prints how many more descriptors it holds after the threads than before them.
  std::size_t ranks = 0;
  for (std::size_t at = 0; (at = r.out.find("open descriptors ", at)) != std::string::npos; ++ranks) {
    at += std::strlen("open descriptors ");
    EXPECT_LE(std::stol(r.out.substr(at)), 4) << r.out;  // MPI's own, at most; not one per thread
  }
  EXPECT_EQ(ranks, 2u) << r.out;
  for (int rank : {0, 1}) {
    TraceReader reader((dir / rank_file_name(rank)).string());
    std::set<std::int64_t> sampled_threads;  // the samples were taken: the descriptors were really opened
    for (const auto& s : reader.rows<CpuSampleRow>()) sampled_threads.insert(s.thread);
    EXPECT_GT(sampled_threads.size(), std::size_t(threads) / 2) << "rank " << rank;
    // Every thread's barrier is there, and the chunks taken stay within the cap (a chunk or two past it at most).
    std::size_t barriers = 0;
    for (const auto& c : reader.collectives()) barriers += c.op == Op::Barrier;
    EXPECT_EQ(barriers, std::size_t(threads) + 1) << "rank " << rank;
    const auto meta = reader.meta();
    EXPECT_EQ(meta.at("events_dropped"), "0") << "rank " << rank;
    EXPECT_LE(std::stod(meta.at("trace_buffer_bytes")), 17.0 * 1024 * 1024) << "rank " << rank;
  }
}

TEST(Preload, CallsInFlightAreWrittenWhileLongAndClearedWhenTheyReturn) {
  // Rank 2 arrives 3 s late at one allreduce: ranks 0 and 1 are in flight past the 200 ms threshold (a row
  // appears while the job runs), then the call returns (the row goes) and the job ends normally.
  const auto dir = fresh_dir("late");
  auto [job, in] = start_job(cmd({kCollscope, "trace", "-o", dir.string(), "--"},
                                 cmd(mpirun(3), {kProbe, "--iterations", "3", "--late-rank", "2", "--late-ms", "3000"})),
                             "COLLSCOPE_HANG_MS", "200");
  ASSERT_TRUE(in);
  char line[512];
  bool late = false;
  while (!late && fgets(line, sizeof line, in)) late = std::strstr(line, "rank 2: late") != nullptr;
  ASSERT_TRUE(late);
  // Rank 0 goes from iteration 0's closing barrier (which rank 2 passed before saying "late") into this allreduce
  // and stays in it until rank 2 arrives, at least 3 s after the line by the clock. The file is read every 50 ms from here until a row
  // appears or those 3 s are over: one read at a fixed delay failed when the "late" line or the writer was held
  // up on a loaded machine. A row can only be there while the call is in flight (the writer deletes it when the
  // call returns, checked at the end).
  std::size_t rows_while_late = 0;
  const auto late_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3000);
  while (rows_while_late == 0 && std::chrono::steady_clock::now() < late_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    TraceReader reader((dir / rank_file_name(0)).string());  // read while the tracer writes (WAL)
    const auto rows = reader.calls_in_flight();
    rows_while_late = rows.size();
    if (!rows.empty()) {
      EXPECT_EQ(rows[0].op, Op::Allreduce);
      EXPECT_EQ(rows[0].seq, 4);  // the first call of iteration 1
    }
  }
  while (fgets(line, sizeof line, in)) {
  }
  fclose(in);
  const auto result = job.wait();
  ASSERT_TRUE(result.exited());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(rows_while_late, 1u);
  for (int rank : {0, 1, 2}) EXPECT_TRUE(TraceReader((dir / rank_file_name(rank)).string()).calls_in_flight().empty());
}

TEST(Cli, UsageErrorsAreOneLineAndExit2) {
  auto r = run_process({kCollscope, "trace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_process({kCollscope, "no-such-command"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_process({kCollscope, "trace", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--output"), std::string::npos);
}

TEST(Preload, TraceInsideTheLauncherPerRank) {
  // `mpirun -np 2 collscope trace -- ./app`: every rank runs collscope, none cleans the other's file.
  const auto dir = fresh_dir("per-rank");
  auto r = run_process(cmd(mpirun(2), {kCollscope, "trace", "-o", dir.string(), "--", kProbe, "--iterations", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(rank_files(dir), (std::set<std::string>{"rank-00000.sqlite", "rank-00001.sqlite"}));
  for (int rank = 0; rank < 2; ++rank) {
    auto v = load(dir / rank_file_name(rank));
    EXPECT_EQ(v.on(v.comm_named("MPI_COMM_WORLD").id).size(), 3u * 4 + 5);
  }
}
