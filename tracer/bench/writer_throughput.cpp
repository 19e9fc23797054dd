// Writer cost: CPU time of the tracer's writer thread per collective event while the job runs, through the real
// pipeline (2 producer threads -> per-thread rings -> writer thread -> SQLite file), for the two ways it can save
// events, each in a child process of this run, alternated: event batches (the default: one blob row per drain of a
// ring) against one SQLite row per event (COLLSCOPE_EVENT_BATCHES=0, the baseline); the ratio of the two; and what
// the batches cost at exit (expanding them into rows, closing the file). Also SQLite alone inserting the same rows
// one per INSERT statement (what the 0.1 writer did per event), the events per second and the bytes on disk.
//   writer_throughput [--events-per-thread N] [--rounds R]
#include <collscope/store/schema.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <fmt/format.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/comm_registry.hpp"
#include "core/runtime.hpp"
#include "core/string_pool.hpp"
#include "core/thread_buffer.hpp"
#include "thread_cpu_time.hpp"

namespace fs = std::filesystem;
using namespace collscope::tracer;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The baseline: the collectives rows the pipeline writes, one INSERT statement each, committed every 4096 rows.
// Returns CPU ns per row.
static double single_row_insert_cpu_ns(const fs::path& path, long rows) {
  using namespace collscope::store;
  fs::remove(path);
  sqlite::Database db(path.string(), sqlite::OpenMode::Create);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA page_size=8192;"
          "CREATE TABLE collectives(id INTEGER PRIMARY KEY, comm INTEGER NOT NULL, seq INTEGER NOT NULL,"
          " op INTEGER NOT NULL, count INTEGER NOT NULL, datatype INTEGER NOT NULL, bytes INTEGER NOT NULL,"
          " reduce_op INTEGER NOT NULL, root INTEGER, peer INTEGER, sendbuf INTEGER NOT NULL, recvbuf INTEGER NOT NULL,"
          " stream INTEGER, thread INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
          " gpu_start_ns INTEGER, gpu_end_ns INTEGER, correlation INTEGER, grp INTEGER, status INTEGER NOT NULL)");
  auto insert = db.prepare_persistent(
      "INSERT INTO collectives VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
      "?18, ?19, ?20, ?21)");
  const std::int64_t cpu0 = thread_cpu_ns();
  db.exec("BEGIN");
  for (long i = 0; i < rows; ++i) {
    const std::int64_t count = 1000 + (i % 4096) * 64, start = 5657174085210LL + i * 20000;
    insert.bind_null(1).bind(2, 1).bind(3, std::int64_t{i}).bind(4, 1).bind(5, count).bind(6, 1).bind(7, 4 * count);
    insert.bind(8, 2).bind_null(9).bind_null(10).bind(11, std::int64_t{0x7f3a2c000000LL}).bind(12, std::int64_t{0x7f3a2c000000LL});
    insert.bind_null(13).bind(14, 1).bind(15, start).bind(16, start + 15000);
    insert.bind_null(17).bind_null(18).bind_null(19).bind_null(20).bind(21, 0);
    insert.run();
    if (i % 4096 == 4095) db.exec("COMMIT; BEGIN");
  }
  db.exec("COMMIT");
  return double(thread_cpu_ns() - cpu0) / rows;
}

// What one traced run (one child process) measured.
struct PathResult {
  double running_ns = 0;   // writer CPU per event while the job runs
  double exit_ns = 0;      // CPU per event at exit: expanding batches (if any) and closing the file
  double exit_s = 0;       // the same, in seconds for this run's events
  double events_per_s = 0;
  double bytes_per_event = 0;
  std::int64_t events = 0, expanded = 0;
};

// The pipeline, in this (child) process: runtime_start, 2 producers, runtime_stop.
static PathResult traced_run(const fs::path& dir, long per_thread) {
  setenv("COLLSCOPE_RUN_DIR", dir.c_str(), 1);
  static int fake_comm;
  const std::uint32_t slot = comm_register(&fake_comm, {0x1234, collscope::store::Backend::Mpi, 2, 0, {}, {}, {0, 1}, "bench", false, {}});
  const std::uint32_t float_name = pool_intern("MPI_FLOAT");
  const std::uint32_t sum_name = pool_intern("MPI_SUM");
  runtime_start({0, 2, {}});
  const auto t0 = Clock::now();
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      ThreadBuffer& tb = this_thread_buffer();
      std::uint64_t t = ticks();
      for (long i = 0; i < per_thread; ++i) {
        Event* e;
        e = tb.reserve();
        *e = Event{};
        e->kind = EventKind::Collective;
        e->op = static_cast<std::uint8_t>(collscope::store::Op::Allreduce);
        e->comm_slot = slot;
        e->seq = i;
        e->count = 1000 + (i % 4096) * 64;  // a fusion buffer's many sizes
        e->bytes = e->count * 4;
        e->datatype = float_name;
        e->reduce_op = sum_name;
        e->root = e->peer = -1;
        e->sendbuf = 0x7f3a2c000000ULL + p * 0x100000;
        e->recvbuf = e->sendbuf;
        e->flags = kFlagInPlace;
        e->t0 = t;
        t += 20000 + (i % 7) * 300;
        e->t1 = t;
        e->thread = tb.index();
        tb.publish();
      }
    });
  }
  for (auto& th : producers) th.join();
  runtime_stop();
  const double dt = seconds_since(t0);
  const WriterStats stats = writer_stats();
  PathResult r;
  r.events = static_cast<std::int64_t>(stats.events_written);
  r.expanded = stats.events_expanded;
  r.running_ns = double(stats.cpu_ns) / double(stats.events_written);
  r.exit_ns = double(stats.exit_cpu_ns) / double(stats.events_written);
  r.exit_s = double(stats.exit_cpu_ns) / 1e9;
  r.events_per_s = double(stats.events_written) / dt;
  r.bytes_per_event = double(fs::file_size(dir / collscope::store::rank_file_name(0))) / double(stats.events_written);
  return r;
}

// Runs traced_run in a child process (the runtime starts once per process) with COLLSCOPE_EVENT_BATCHES=batches.
// fork without exec, not the launcher (collscope/process): the child runs traced_run, nothing is started.
static PathResult in_child(const fs::path& dir, long per_thread, bool batches) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    setenv("COLLSCOPE_EVENT_BATCHES", batches ? "1" : "0", 1);
    fs::create_directories(dir);
    const PathResult r = traced_run(dir, per_thread);
    [[maybe_unused]] auto n = write(fds[1], &r, sizeof r);
    _exit(0);
  }
  close(fds[1]);
  PathResult r;
  const bool got = read(fds[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fmt::print(stderr, "writer_throughput: the traced child failed\n");
    std::exit(1);
  }
  fs::remove_all(dir);
  return r;
}

int main(int argc, char** argv) {
  long per_thread = 1'000'000;
  int rounds = 2;
  std::string only;  // "batches" or "rows": that path alone, in this process (for profilers)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    if (!std::strcmp(argv[i], "--events-per-thread") && i + 1 < argc) per_thread = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("collscope-writer-bench-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);

  if (!only.empty()) {
    setenv("COLLSCOPE_EVENT_BATCHES", only == "rows" ? "0" : "1", 1);
    const PathResult r = traced_run(dir, per_thread);
    fmt::print("writer_throughput: {}: {:.0f} ns CPU per event while running, at exit {:.0f} ns per event\n", only,
               r.running_ns, r.exit_ns);
    fs::remove_all(dir);
    return 0;
  }
  double load[3] = {};
  if (getloadavg(load, 3) == 3) fmt::print("writer_throughput: load average {:.2f} {:.2f} {:.2f}\n", load[0], load[1], load[2]);
  const double sqlite_ns = single_row_insert_cpu_ns(dir / "baseline.sqlite", 2 * per_thread);
  fmt::print("writer_throughput: SQLite alone, one collectives row per INSERT: {:.0f} ns CPU per row\n", sqlite_ns);

  std::vector<double> batch_ns, row_ns;
  for (int round = 0; round < rounds; ++round) {
    // Alternated, so that a change in the machine's load hits both.
    for (bool batches : {round % 2 == 0, round % 2 != 0}) {
      const PathResult r = in_child(dir / fmt::format("run-{}-{}", round, batches), per_thread, batches);
      (batches ? batch_ns : row_ns).push_back(r.running_ns);
      fmt::print("writer_throughput: round {}, {}: {:.0f} ns CPU per event while running ({} events, {:.3f} M "
                 "events/s, exit included); at exit {:.0f} ns per event = {:.3f} s ({} rows expanded); {:.1f} bytes per event on disk\n",
                 round + 1, batches ? "event batches" : "row per event (baseline)", r.running_ns, r.events,
                 r.events_per_s / 1e6, r.exit_ns, r.exit_s, r.expanded, r.bytes_per_event);
    }
  }
  std::sort(batch_ns.begin(), batch_ns.end());
  std::sort(row_ns.begin(), row_ns.end());
  const double best_batch = batch_ns.front(), best_row = row_ns.front();
  fmt::print("writer_throughput: best of {}: event batches {:.0f} ns, row per event {:.0f} ns CPU per event while "
             "running: ratio batches/rows = {:.3f} (target <= 300 ns per event)\n",
             rounds, best_batch, best_row, best_batch / best_row);
  fs::remove_all(dir);
  return best_batch <= 300 ? 0 : 1;
}
