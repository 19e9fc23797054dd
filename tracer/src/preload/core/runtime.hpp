#pragma once
// The tracer's process-wide state: when it records, where it writes, and the writer thread that drains the
// per-thread buffers into this rank's trace file.
#include <collscope/store/trace_writer.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/event.hpp"

namespace collscope::tracer {

enum Phase : int {
  kIdle = 0,      // loaded, no file yet: events are buffered (NVTX before MPI_Init)
  kRunning = 1,   // file open, writer thread draining
  kStopped = 2,   // finalized: the file is complete
  kDisabled = 3,  // forked child, or the run directory was unwritable
};
extern std::atomic<int> g_phase;

// Hot-path check: record events?
inline bool recording() { return g_phase.load(std::memory_order_relaxed) <= kRunning; }

struct StartInfo {
  int world_rank = 0;
  int world_size = 1;
  std::vector<std::pair<std::string, std::string>> meta;
};

// Opens RUN_DIR/rank-NNNNN.sqlite and starts the writer. Idempotent; on failure warns once and disables.
void runtime_start(const StartInfo& info);
// Final drain, end clock anchors, close. Idempotent; also runs at exit.
void runtime_stop();
// Adds or replaces a meta entry; applied by the writer at its next drain (thread-safe).
void runtime_set_meta(std::string key, std::string value);
// One line on stderr, at most once per process for each distinct `what` class.
void warn_once(std::string_view what);

// What an extension (NCCL, CUPTI collectors) gets while the writer holds the open transaction.
struct WriterContext {
  store::TraceWriter& writer;
  const TickConverter& clock;
  // True only in the last drain, the one runtime_stop makes after the writer thread has ended: nothing is recorded
  // after it. Not the phase: runtime_stop sets kStopped before it joins the writer thread, whose drain under way
  // (a low-priority thread preempted mid-drain, for as long as the job ran on) would otherwise take itself for the
  // last one and close what was still open (NVTX ranges closed as never ended: 3 of 40 traced trainer runs at load 6-9).
  bool final_drain = false;
  std::int64_t store_string(std::uint32_t pool_id);  // runtime pool id -> strings.id in the file
  // Saves a record: into its kind's event batch while batches are on (the default), else as its row
  // (COLLSCOPE_EVENT_BATCHES=0). Returns the row's id, which is final at once either way.
  std::int64_t add(const store::NvtxRangeRecord& r);
  std::int64_t add(const store::GpuActivityRecord& r);
  // A collectives row's GPU span, learnt after the row was saved: a record joined to the row by id when batches
  // are on, else an update of the row.
  void set_collective_gpu_times(std::int64_t row_id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns);
};
using DrainHook = std::function<void(WriterContext&)>;
using EventHandler = std::function<void(const Event&, WriterContext&)>;
using CollectiveHook = std::function<void(const Event&, std::int64_t row_id, WriterContext&)>;

// Register before runtime_start (from static initialisers or the interposer's init).
void add_drain_hook(DrainHook hook);                   // runs at every drain and the final one
void set_event_handler(EventKind kind, EventHandler handler);  // for kinds the core writer does not know
void add_collective_hook(CollectiveHook hook);         // after each collectives row is inserted
// Non-blocking collectives started and not completed: the scan calls fn(event) for each (event.thread = the
// starting thread, event.t0 = its start). A thread that polls for one (MPI_Test loops) is inside no call, so this
// is how such a collective becomes the thread's call in flight.
using PendingScan = void (*)(const std::function<void(const Event&)>& fn);
void set_pending_scan(PendingScan scan);

// What the writer thread did, for benchmarks and the exit report: events written and dropped, and the CPU time
// it spent while the job ran (its own thread's clock, plus the final drain on the exiting thread); then, at exit,
// the rows expanded from event batches and the CPU time of that and of closing the file. Valid after
// runtime_stop().
struct WriterStats {
  std::uint64_t events_written = 0;
  std::uint64_t events_dropped = 0;
  std::int64_t cpu_ns = 0;
  std::int64_t events_expanded = 0;
  std::int64_t exit_cpu_ns = 0;
  std::uint64_t flushes = 0;  // tracer flushes on job threads (thread_buffer.hpp), and their total time
  std::int64_t flush_ns = 0;
};
WriterStats writer_stats();

}  // namespace collscope::tracer
