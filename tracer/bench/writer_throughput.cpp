// Writer throughput: collective events per second sustained from 2 producer threads through the real pipeline
// (per-thread rings -> writer thread -> SQLite), against a plain prepared-statement insert loop of a 7-integer row
// measured in the same run. Also prints the bytes on disk per collective event.
//   writer_throughput [--events-per-thread N]
#include <collscope/store/schema.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "comm_registry.hpp"
#include "runtime.hpp"
#include "string_pool.hpp"
#include "thread_buffer.hpp"

namespace fs = std::filesystem;
using namespace collscope::tracer;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The baseline: what SQLite does with the simplest possible row, under the same pragmas and batch size.
static double plain_insert_rows_per_s(const fs::path& path, long rows) {
  fs::remove(path);
  collscope::store::sqlite::Database db(path.string(), collscope::store::sqlite::OpenMode::Create);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA page_size=8192;"
          "CREATE TABLE t(a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER, f INTEGER, g INTEGER)");
  auto insert = db.prepare_persistent("INSERT INTO t VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  const auto t0 = Clock::now();
  db.exec("BEGIN");
  for (long i = 0; i < rows; ++i) {
    for (int c = 1; c <= 7; ++c) insert.bind(c, std::int64_t{5657174085210LL + i * 1000 + c});
    insert.run();
    if (i % 16384 == 16383) db.exec("COMMIT; BEGIN");
  }
  db.exec("COMMIT");
  return rows / seconds_since(t0);
}

int main(int argc, char** argv) {
  long per_thread = 1'000'000;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--events-per-thread") && i + 1 < argc) per_thread = std::atol(argv[++i]);
  const fs::path dir = fs::temp_directory_path() / fmt::format("collscope-writer-bench-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);

  const double baseline = plain_insert_rows_per_s(dir / "baseline.sqlite", 2 * per_thread);

  setenv("COLLSCOPE_RUN_DIR", dir.c_str(), 1);
  static int fake_comm;
  const std::uint32_t slot = comm_register(&fake_comm, {0x1234, collscope::store::Backend::Mpi, 2, 0, {}, {}, {0, 1}, "bench"});
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
        while (!(e = tb.reserve())) sched_yield();  // the benchmark waits instead of dropping: it measures the writer
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
  const double events = 2.0 * per_thread;
  const auto file = dir / collscope::store::rank_file_name(0);
  const auto file_bytes = fs::file_size(file);

  fmt::print("writer_throughput: baseline plain insert (7 integers/row): {:.3f} M rows/s\n", baseline / 1e6);
  fmt::print("writer_throughput: collscope pipeline, 2 producers: {:.3f} M collective events/s ({:.0f} events in {:.2f} s)\n",
             events / dt / 1e6, events, dt);
  fmt::print("writer_throughput: ratio collscope/baseline = {:.2f}\n", events / dt / baseline);
  fmt::print("writer_throughput: file {} bytes = {:.1f} bytes per collective event\n", file_bytes, file_bytes / events);
  fs::remove_all(dir);
  return 0;
}
