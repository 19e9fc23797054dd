#include "core/runtime.hpp"

#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/comm_registry.hpp"
#include "core/cpu_sampling.hpp"
#include "core/job_metadata.hpp"
#include "core/event_rows.hpp"
#include "core/string_pool.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer {

std::atomic<int> g_phase{kIdle};

namespace {

// The writer thread's scheduling (COLLSCOPE_WRITER_CLASS): low = the normal class at nice 19 (the default), idle =
// SCHED_IDLE, normal = as the job's threads.
enum class WriterClass { Low, Idle, Normal };

class Writer {
 public:
  std::mutex mutex;
  std::condition_variable wake;
  std::atomic<bool> stop{false};
  std::atomic<bool> kick{false};
  // One drain at a time: the writer thread's, the final one at exit, or a job thread's tracer flush. Everything
  // below that the drain uses (the file, the batch builders, the aggregates) is guarded by it.
  std::mutex drain_mutex;
  // COLLSCOPE_WRITER_HOLD=1: the writer thread never drains (a stand-in for one that gets no CPU); job threads then
  // flush when the cap is reached, and the final drain at exit writes the rest. For tests.
  bool hold = false;
  std::vector<store::TracerFlushRow> flushes;  // written at the next drain (guarded by drain_mutex)
  std::uint64_t flush_count = 0;
  std::int64_t flush_ns = 0;  // job time spent in tracer flushes, all threads
  std::unique_ptr<store::TraceWriter> file;
  std::thread* thread = nullptr;  // never destroyed: a joinable std::thread destroyed at exit would terminate
  TickConverter clock;
  bool failed = false;
  std::vector<std::pair<std::string, std::string>> pending_meta;  // guarded by mutex
  std::vector<DrainHook> drain_hooks;
  std::vector<CollectiveHook> collective_hooks;
  PendingScan pending_scan = nullptr;
  std::array<EventHandler, 32> handlers;
  std::vector<std::int64_t> string_ids;  // pool id -> strings.id (-1: not written yet); pool ids are small
  std::set<std::uint32_t> threads_written;
  struct BufferAggregate {
    store::BufferRecord row;  // the buffers row so far
    bool dirty = false;
  };
  std::unordered_map<std::uint64_t, BufferAggregate> buffers;  // node-based: pointers stay valid
  std::vector<BufferAggregate*> dirty_buffers;
  BufferAggregate* last_buffer = nullptr;  // consecutive collectives mostly reuse one (fusion) buffer

  BufferAggregate& buffer(std::uint64_t address, std::int64_t ns) {
    if (last_buffer && last_buffer->row.address == address) return *last_buffer;
    auto [it, fresh] = buffers.try_emplace(address);
    if (fresh) {
      it->second.row.address = address;
      it->second.row.bytes_min = std::numeric_limits<std::int64_t>::max();
      it->second.row.first_ns = ns;
    }
    last_buffer = &it->second;
    return it->second;
  }
  void touch(BufferAggregate& b) {
    if (!b.dirty) {
      b.dirty = true;
      dirty_buffers.push_back(&b);
    }
  }
  std::uint64_t events_written = 0;
  std::uint64_t events_dropped = 0;
  std::int64_t cpu_ns = 0;  // CPU time the writer thread and the final drain took
  int world_rank = 0;
  int flush_ms = 50;
  std::int64_t hang_ns = 1'000'000'000;  // a call in flight this long gets a calls_in_flight row (COLLSCOPE_HANG_MS)
  struct CallInFlightWritten {
    std::uint64_t since = 0;     // start tick of the call the row describes
    std::int64_t written_ns = 0; // when its row was last written
  };
  std::unordered_map<std::uint32_t, CallInFlightWritten> calls_in_flight;  // thread index -> its row
  // The writer thread's scheduling (COLLSCOPE_WRITER_CLASS, see run()); the thread itself once it has set it, and
  // whether it left its class for the normal one for now (see follow_calls_in_flight).
  WriterClass writer_class = WriterClass::Low;
  std::optional<pthread_t> low_thread;
  pid_t low_tid = 0;  // its thread id, for its nice value
  int job_nice = 0;   // the nice value the writer thread started with, the job's own: what "normal" goes back to
  bool left_low_class = false;
  void follow_calls_in_flight();
  bool set_class(pthread_t thread, pid_t tid, WriterClass c) const;

  // COLLSCOPE_EVENT_BATCHES=0: one SQLite row per event while the job runs (the 0.x writer; the benchmark's
  // baseline). Otherwise every record (collectives of MPI and NCCL, point-to-point calls, NVTX ranges, GPU
  // activities, buffer totals, GPU times found later) is saved in event_batches rows, one per drain and kind
  // (~10x less CPU per event, ~10-25 bytes per event on disk). Readers decode them; `collscope sql` turns them
  // into plain rows for people who query with SQL, outside the job.
  bool use_batches = true;
  // COLLSCOPE_EXPAND_BATCHES_AT_EXIT=1: expand the batches into rows at exit, as 1.3-1.4 writers did (the job's exit
  // then waits ~1 us per event).
  bool expand_at_exit = false;
  // The records of one kind saved so far for its next batch (event_batch.hpp): collectives and point-to-point calls
  // of the thread whose buffer is being drained; the other kinds of the whole drain.
  template <typename Record>
  struct EventBatchBuilder {
    static constexpr store::BatchKind kind = store::BatchRecordTraits<Record>::kind;
    std::vector<std::uint8_t> bytes;  // grows to the largest batch seen, never shrinks
    std::size_t used = 0;
    std::int64_t count = 0;
    store::BatchEncoder<Record> encoder;
    void append(const Record& r) {
      if (used + store::kMaxRecordBytes > bytes.size()) bytes.resize(std::max<std::size_t>(bytes.size() * 2, 64 * 1024));
      used = static_cast<std::size_t>(encoder.encode(r, bytes.data() + used) - bytes.data());
      ++count;
    }
  };
  EventBatchBuilder<store::CollectiveRecord> collective_batch;
  EventBatchBuilder<store::PointToPointRecord> point_to_point_batch;
  EventBatchBuilder<store::NvtxRangeRecord> nvtx_batch;
  EventBatchBuilder<store::GpuActivityRecord> gpu_activity_batch;
  EventBatchBuilder<store::BufferRecord> buffer_batch;
  EventBatchBuilder<store::CollectiveGpuTimesRecord> gpu_times_batch;
  std::int64_t batch_thread = 0;  // threads.id of the buffer being drained

  // The one way a record reaches the file: into its kind's batch while batches are on, else as the row it stands
  // for (store::row_of). Returns the row's id (kinds with ids), known before the batch is saved: its batch takes
  // the table's next ids in order.
  // At most this many records per batch (~1.5 MiB at ~22 bytes each): a drain at the memory cap can hold millions
  // of one thread's events, and one blob of them would cost the writer and every reader its size in memory at once
  // (30 M events flushed in two drains measured 0.5 GiB above the cap in one 156 MB blob each).
  static constexpr std::int64_t kMaxBatchRecords = 65536;

  template <typename Record>
  std::int64_t save(EventBatchBuilder<Record>& batch, const Record& r, std::int64_t thread = 0) {
    if (use_batches) {
      if (batch.count >= kMaxBatchRecords) {
        constexpr bool per_thread = std::is_same_v<Record, store::CollectiveRecord> ||
                                    std::is_same_v<Record, store::PointToPointRecord>;
        flush_batch(batch, per_thread ? batch_thread : 0);  // per-thread kinds carry the drained thread
      }
      const std::int64_t id = file->next_id(batch.kind) + batch.count;
      batch.append(r);
      return id;
    }
    file->add(store::row_of(r, 0, thread));
    return file->last_id();
  }
  std::int64_t events_expanded = 0;
  std::int64_t exit_cpu_ns = 0;  // expanding the batches and closing the file, at exit

  void run();
  void drain();         // takes drain_mutex; the writer thread's pass: it yields its CPU between pieces
  // The caller holds drain_mutex. final_drain: runtime_stop's drain after the writer thread ended (WriterContext).
  void drain_locked(bool final_drain = false, bool yield_between_pieces = false);
  void handle(const Event& e, WriterContext& ctx);
  template <typename Record>
  void flush_batch(EventBatchBuilder<Record>& batch, std::int64_t thread);
  void write_collective(const Event& e, WriterContext& ctx);
  void write_calls_in_flight(WriterContext& ctx);
};

Writer& writer() {
  static Writer* w = new Writer();  // never destroyed: used from atexit
  return *w;
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::mutex g_warn_mutex;

// Set while this thread drains: an event it records meanwhile (a CUPTI buffer completed during a flush of CUPTI's
// own) must not start a nested drain.
__attribute__((tls_model("initial-exec"))) constinit thread_local bool t_in_drain = false;

class DrainScope {
 public:
  DrainScope() { t_in_drain = true; }
  ~DrainScope() { t_in_drain = false; }
  DrainScope(const DrainScope&) = delete;
  DrainScope& operator=(const DrainScope&) = delete;
};

// How far the writer drains one thread's buffer before it yields (events): ~130 us of its work at ~125 ns each.
constexpr std::uint64_t kDrainPieceEvents = 1024;

WriterClass writer_class_from_env() {
  const char* v = std::getenv("COLLSCOPE_WRITER_CLASS");
  if (!v || !*v || !std::strcmp(v, "low")) return WriterClass::Low;
  if (!std::strcmp(v, "idle")) return WriterClass::Idle;
  if (!std::strcmp(v, "normal")) return WriterClass::Normal;
  warn_once(fmt::format("COLLSCOPE_WRITER_CLASS={} is not low, idle or normal: low is used", v));
  return WriterClass::Low;
}

void at_fork_child() {
  // The child has no writer thread and must not touch the parent's file: it records nothing, ever.
  g_phase.store(kDisabled, std::memory_order_relaxed);
}


}  // namespace

std::int64_t WriterContext::store_string(std::uint32_t pool_id) {
  if (pool_id == 0) return 0;
  auto& ids = ::collscope::tracer::writer().string_ids;
  if (pool_id < ids.size() && ids[pool_id] >= 0) return ids[pool_id];
  if (pool_id >= ids.size()) ids.resize(std::size_t{pool_id} + 1, -1);
  return ids[pool_id] = writer.intern(pool_string(pool_id));
}

void warn_once(std::string_view what) {
  static std::set<std::string>* seen = new std::set<std::string>();
  std::lock_guard lock(g_warn_mutex);
  // Warnings are keyed by their text up to the first ':' so that one class of problem is reported once.
  std::string key(what.substr(0, what.find(':')));
  if (!seen->insert(key).second) return;
  std::string line = fmt::format("collscope: {}\n", what);
  [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

void add_drain_hook(DrainHook hook) { writer().drain_hooks.push_back(std::move(hook)); }
void set_pending_scan(PendingScan scan) { writer().pending_scan = scan; }
void set_event_handler(EventKind kind, EventHandler handler) {
  writer().handlers[static_cast<std::size_t>(kind) & 31] = std::move(handler);
}
void add_collective_hook(CollectiveHook hook) { writer().collective_hooks.push_back(std::move(hook)); }

void runtime_set_meta(std::string key, std::string value) {
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  w.pending_meta.emplace_back(std::move(key), std::move(value));
}

std::int64_t WriterContext::add(const store::NvtxRangeRecord& r) {
  Writer& w = ::collscope::tracer::writer();
  return w.save(w.nvtx_batch, r);
}

std::int64_t WriterContext::add(const store::GpuActivityRecord& r) {
  Writer& w = ::collscope::tracer::writer();
  return w.save(w.gpu_activity_batch, r);
}

void WriterContext::set_collective_gpu_times(std::int64_t row_id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns) {
  Writer& w = ::collscope::tracer::writer();
  if (w.use_batches) w.gpu_times_batch.append({.gpu_start_ns = gpu_start_ns, .gpu_end_ns = gpu_end_ns, .collective = row_id});
  else writer.set_collective_gpu_times(row_id, gpu_start_ns, gpu_end_ns);
}

void Writer::write_collective(const Event& e, WriterContext& ctx) {
  const std::int64_t start_ns = clock.to_ns(e.t0);
  const std::int64_t row_id = save(collective_batch, collective_record(e, start_ns, ctx), e.thread);
  // NCCL's extensions (CUPTI, the profiler plugin) tie what they learn later to the row by its id.
  for (auto& hook : collective_hooks) hook(e, row_id, ctx);

  // Buffers that collectives read: one address reused with many sizes is a fusion buffer.
  const std::uint64_t address = (e.flags & kFlagInPlace) || e.sendbuf == 0 ? e.recvbuf : e.sendbuf;
  if (address == 0 || e.bytes == 0) return;
  BufferAggregate& agg = buffer(address, start_ns);
  store::BufferRecord& b = agg.row;
  b.bytes_max = std::max(b.bytes_max, e.bytes);
  b.bytes_min = std::min(b.bytes_min, e.bytes);
  b.bytes_total += e.bytes;
  b.uses += 1;
  b.last_ns = start_ns;
  touch(agg);
}

template <typename Record>
void Writer::flush_batch(EventBatchBuilder<Record>& batch, std::int64_t thread) {
  if (batch.count == 0) return;
  file->add_event_batch(batch.kind, thread, batch.count, batch.bytes.data(), batch.used);
  batch.count = 0;
  batch.used = 0;
  batch.encoder.reset();
}

// Threads inside a blocking collective for longer than hang_ns: one row each, its seen_ns refreshed about once a
// second, removed when the call returns. A thread inside no call but with a non-blocking collective pending that
// long (it polls with MPI_Test, or went on without waiting) gets a row for its oldest one. A job killed while hung
// keeps the rows of its last commit.
void Writer::write_calls_in_flight(WriterContext& ctx) {
  const std::int64_t now = monotonic_ns();
  std::unordered_map<std::uint32_t, Event> oldest_pending;  // thread index -> its oldest pending collective
  if (pending_scan)
    pending_scan([&](const Event& e) {
      auto [it, added] = oldest_pending.try_emplace(e.thread, e);
      if (!added && e.t0 < it->second.t0) it->second = e;
    });
  // One thread index: the blocking call it is inside (`inside`, from its record), else its oldest pending request.
  const auto follow = [&](std::uint32_t index, bool inside, ThreadBuffer::CallSnapshot c) {
    auto it = calls_in_flight.find(index);
    if (!inside) {
      if (auto p = oldest_pending.find(index); p != oldest_pending.end()) {
        const Event& e = p->second;
        c.since = e.t0, c.comm_slot = e.comm_slot, c.op = e.op, c.root = e.root, c.seq = e.seq, c.count = e.count;
        c.bytes = e.bytes, c.datatype = e.datatype, c.reduce_op = e.reduce_op;
        inside = true;
      }
    }
    const std::int64_t start = inside ? clock.to_ns(c.since) : now;
    if (now - start >= hang_ns) {
      if (it != calls_in_flight.end() && it->second.since == c.since && now - it->second.written_ns < 1'000'000'000)
        return;
      store::CallInFlightRow row;
      row.thread = index;
      row.comm = c.comm_slot;
      row.seq = c.seq;
      row.op = static_cast<store::Op>(c.op);
      row.count = c.count;
      row.datatype = ctx.store_string(c.datatype);
      row.bytes = c.bytes;
      row.reduce_op = ctx.store_string(c.reduce_op);
      if (c.root >= 0) row.root = c.root;
      row.start_ns = start;
      row.seen_ns = now;
      file->set_call_in_flight(row);
      calls_in_flight[index] = {c.since, now};
      return;
    }
    if (it != calls_in_flight.end()) {
      file->clear_call_in_flight(index);
      calls_in_flight.erase(it);
    }
  };
  std::unordered_set<std::uint32_t> live;
  for (ThreadBuffer* tb = thread_buffers(); tb; tb = tb->next) {
    if (!tb->live()) continue;
    live.insert(tb->index());
    ThreadBuffer::CallSnapshot c;
    const bool inside = tb->call_in_flight(c);
    follow(tb->index(), inside, c);
  }
  // Threads that have exited and whose records another thread has taken since: only their pending requests are
  // left of them; a row of theirs with none is cleared.
  std::vector<std::uint32_t> gone;
  for (const auto& [index, e] : oldest_pending)
    if (!live.count(index)) gone.push_back(index);
  for (const auto& [index, call] : calls_in_flight)
    if (!live.count(index) && !oldest_pending.count(index)) gone.push_back(index);
  for (const std::uint32_t index : gone) follow(index, false, {});
  follow_calls_in_flight();
}

// A call in flight past the threshold means ranks are waiting (a hang, or a rank far behind): its row is what says
// where, so the writer takes the normal class at the job's own nice value until no call is; a job that makes progress never has such
// a call. Leaving the low class needs RLIMIT_NICE headroom for an unprivileged process (sched(7)); without it the
// writer stays at nice 19, which still runs (the idle class, asked for, may not).
void Writer::follow_calls_in_flight() {
  if (!low_thread) return;
  const bool want_normal = !calls_in_flight.empty();
  if (want_normal == left_low_class) return;
  if (set_class(*low_thread, low_tid, want_normal ? WriterClass::Normal : writer_class)) left_low_class = want_normal;
}

// `tid` is `thread`'s kernel id: nice is per thread on Linux (setpriority), and drains that call this may run on a
// job thread (a flush at the cap, the last drain at exit).
bool Writer::set_class(pthread_t thread, pid_t tid, WriterClass c) const {
  sched_param param{};
  if (pthread_setschedparam(thread, c == WriterClass::Idle ? SCHED_IDLE : SCHED_OTHER, &param) != 0) return false;
  if (c != WriterClass::Idle && setpriority(PRIO_PROCESS, static_cast<id_t>(tid), c == WriterClass::Low ? 19 : job_nice) != 0)
    return c == WriterClass::Low;  // nice 19 could not be refused; going back to the job's can (RLIMIT_NICE)
  return true;
}

void Writer::handle(const Event& e, WriterContext& ctx) {
  switch (e.kind) {
    case EventKind::Collective:
      write_collective(e, ctx);
      break;
    case EventKind::PointToPoint:
      save(point_to_point_batch, point_to_point_record(e, ctx), e.thread);
      break;
    case EventKind::CommCreated: {
      const CommSlot& s = comm_slot(e.comm_slot);
      store::CommunicatorRow row;
      row.id = e.comm_slot;
      row.key = s.key;
      row.backend = s.backend;
      row.size = s.size;
      row.rank = s.rank;
      row.parent = s.parent;
      row.color = s.color;
      row.members = s.members;
      row.created_ns = clock.to_ns(e.t0);
      row.name = s.name;
      row.seq_numbering = s.seq_numbering;
      file->add_communicator(row);
      break;
    }
    case EventKind::CommDestroyed:
      file->set_communicator_destroyed(e.comm_slot, clock.to_ns(e.t0));
      break;
    case EventKind::FusionPack: {
      // The pack precedes the collective that reads the buffer; count what went in.
      const std::int64_t ns = clock.to_ns(e.t0);
      BufferAggregate& agg = buffer(e.sendbuf, ns);
      if (agg.row.uses == 0) agg.row.last_ns = ns;
      agg.row.tensors_packed += 1;
      agg.row.bytes_packed += e.bytes;
      touch(agg);
      break;
    }
    default:
      if (auto& h = handlers[static_cast<std::size_t>(e.kind) & 31]) h(e, ctx);
      break;
  }
}

void Writer::drain() {
  std::lock_guard lock(drain_mutex);
  DrainScope scope;
  drain_locked(false, /*yield_between_pieces=*/true);
}

void Writer::drain_locked(bool final_drain, bool yield_between_pieces) {
  clock.calibrate();
  std::vector<std::pair<std::string, std::string>> meta;
  {
    std::lock_guard lock(mutex);
    meta.swap(pending_meta);
  }
  if (failed || !file) {
    // Keep emptying the buffers so that producers never run out of chunks; nothing is written.
    for (ThreadBuffer* tb = thread_buffers(); tb; tb = tb->next) {
      if (!tb->live()) continue;
      tb->drain([](const Event&) {});
      if (tb->reclaim_if_retired()) release_for_reuse(tb);
    }
    return;
  }
  // Records of exited threads whose chunks this pass reclaimed: reusable once the pass is done with them.
  std::vector<ThreadBuffer*> reclaimed;
  try {
    file->begin();
    WriterContext ctx{*file, clock, final_drain};
    for (auto& [k, v] : meta) file->set_meta(k, v);
    std::uint64_t dropped = 0;
    for (ThreadBuffer* tb = thread_buffers(); tb; tb = tb->next) {
      if (!tb->live()) {
        dropped += tb->dropped();  // a record's count is the process's: it stays with the record
        continue;
      }
      if (threads_written.insert(tb->index()).second) file->add_thread({tb->index(), tb->tid(), tb->name()});
      batch_thread = tb->index();
      // In pieces: between two, the writer thread yields its CPU, so that when it shares a core with a rank it
      // holds the core for one piece (~1024 x 125 ns) at a time, not for a whole scheduler slice (milliseconds).
      for (;;) {
        const std::uint64_t n = tb->drain([&](const Event& e) { handle(e, ctx); }, kDrainPieceEvents);
        events_written += n;
        if (n < kDrainPieceEvents) break;
        if (yield_between_pieces) sched_yield();
      }
      flush_batch(collective_batch, batch_thread);
      flush_batch(point_to_point_batch, batch_thread);
      dropped += tb->dropped();
      if (tb->reclaim_if_retired()) reclaimed.push_back(tb);  // an exited thread's chunks, for the threads to come
    }
    for (const store::TracerFlushRow& f : flushes) file->add(f);
    flushes.clear();
    for (auto& hook : drain_hooks) hook(ctx);
    write_calls_in_flight(ctx);
    for (BufferAggregate* b : dirty_buffers) {
      store::BufferRecord row = b->row;
      if (row.uses == 0) row.bytes_min = 0;  // packed into, not yet read by a collective
      save(buffer_batch, row);  // a row: replaces the address's row; a record: the address's last one is its row
      b->dirty = false;
    }
    dirty_buffers.clear();
    // The kinds gathered over the whole drain; their records say their thread where their rows have one.
    flush_batch(nvtx_batch, 0);
    flush_batch(gpu_activity_batch, 0);
    flush_batch(buffer_batch, 0);
    flush_batch(gpu_times_batch, 0);
    events_dropped = dropped;
    file->set_meta(store::meta_key::kEventsDropped, std::to_string(dropped));
    file->commit();
  } catch (const std::exception& ex) {
    failed = true;
    warn_once(fmt::format("cannot write trace (tracing stops, the job goes on): {}", ex.what()));
  }
  for (ThreadBuffer* tb : reclaimed) release_for_reuse(tb);
}

void Writer::run() {
  pthread_setname_np(pthread_self(), "collscope-wr");
  // Nice 19 in the normal class by default: against a rank that keeps its core busy the writer gets about 1.5 % of
  // it (CFS weights 15 against 1024), in pieces it yields between (drain_locked), and it still runs when no core
  // is ever idle. The idle class (SCHED_IDLE, COLLSCOPE_WRITER_CLASS=idle) never runs then: the buffers grow to the
  // cap and the ranks write them out themselves, the rows of a hung call are not written, a SIGKILL loses what was
  // not yet written, and on a virtual machine whose memory is backed on first touch every new page costs the
  // recording thread 5-7 us (docs/design.md, "The writer never takes the job's core"; docs/performance.md).
  errno = 0;
  if (const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); errno == 0) job_nice = nice;
  if (set_class(pthread_self(), gettid(), writer_class)) {
    if (writer_class != WriterClass::Normal) {
      std::lock_guard drain_lock(drain_mutex);  // low_thread is read by drains, also on job threads
      low_thread = pthread_self();
      low_tid = gettid();
    }
  } else {
    warn_once("cannot lower the trace writer's scheduling priority: it runs at normal priority");
  }
  std::unique_lock lock(mutex);
  while (!stop.load()) {
    wake.wait_for(lock, std::chrono::milliseconds(flush_ms), [&] { return stop.load() || kick.load(); });
    kick.store(false);
    lock.unlock();
    if (!hold) drain();
    lock.lock();
  }
  cpu_ns += thread_cpu_ns();
}

void wake_writer() {
  Writer& w = writer();
  if (w.kick.exchange(true, std::memory_order_relaxed)) return;  // already asked
  w.wake.notify_one();
}

bool flush_from_recording_thread(ThreadBuffer& tb) {
  Writer& w = writer();
  if (t_in_drain || g_phase.load(std::memory_order_relaxed) != kRunning) return false;
  const std::uint64_t t0 = ticks();
  std::lock_guard lock(w.drain_mutex);
  if (!w.file || w.failed) return false;
  DrainScope scope;
  const std::uint64_t before = w.events_written;
  w.drain_locked();
  tb.rewind_if_drained();
  const std::uint64_t t1 = ticks();
  store::TracerFlushRow row;
  row.thread = tb.index();
  row.start_ns = w.clock.to_ns(t0);
  row.end_ns = w.clock.to_ns(t1);
  row.events = static_cast<std::int64_t>(w.events_written - before);
  w.flushes.push_back(row);
  w.flush_count += 1;
  w.flush_ns += row.end_ns - row.start_ns;
  return true;
}

void runtime_start(const StartInfo& info) {
  int expected = kIdle;
  if (!g_phase.compare_exchange_strong(expected, kRunning)) return;
  init_cpu_sampling();
  static bool atfork_registered = false;
  if (!atfork_registered) {
    pthread_atfork(nullptr, nullptr, at_fork_child);
    atfork_registered = true;
  }
  Writer& w = writer();
  // A few drains a second: each moves whole chunks, so the writer wakes rarely (and earlier when the buffers pass
  // half their cap).
  w.flush_ms = std::max(1, env_int("COLLSCOPE_FLUSH_MS", 250));
  w.writer_class = writer_class_from_env();
  w.world_rank = info.world_rank;
  w.hang_ns = std::int64_t{std::max(1, env_int("COLLSCOPE_HANG_MS", 1000))} * 1'000'000;
  w.hold = env_int("COLLSCOPE_WRITER_HOLD", 0) != 0;
  w.use_batches = env_int("COLLSCOPE_EVENT_BATCHES", 1) != 0;
  w.expand_at_exit = env_int("COLLSCOPE_EXPAND_BATCHES_AT_EXIT", 0) != 0;
  w.clock.calibrate();
  const char* dir_env = std::getenv("COLLSCOPE_RUN_DIR");
  const std::string run_dir = dir_env && *dir_env ? dir_env : "collscope-run";
  const std::string path = (std::filesystem::path(run_dir) / store::rank_file_name(info.world_rank)).string();
  try {
    std::error_code ec;
    std::filesystem::create_directories(run_dir, ec);
    w.file = std::make_unique<store::TraceWriter>(path);
    auto& f = *w.file;
    f.begin();
    write_job_metadata(f, info.world_rank, info.world_size, info.meta);
    f.commit();
  } catch (const std::exception& ex) {
    w.file.reset();
    g_phase.store(kDisabled);
    warn_once(fmt::format("cannot write trace {} (the job runs untraced): {}", path, ex.what()));
    return;
  }
  w.thread = new std::thread([&w] { w.run(); });
  std::atexit([] { runtime_stop(); });
}

void runtime_stop() {
  int expected = kRunning;
  if (!g_phase.compare_exchange_strong(expected, kStopped)) return;
  Writer& w = writer();
  {
    std::lock_guard lock(w.mutex);
    w.stop.store(true);
  }
  w.wake.notify_one();
  if (w.thread && w.thread->joinable()) w.thread->join();
  // Under the drain lock to the end: a job thread's tracer flush may be under way, and none may start on a closed file.
  std::unique_lock drain_lock(w.drain_mutex);
  DrainScope scope;
  const std::int64_t cpu0 = thread_cpu_ns();
  w.drain_locked(/*final_drain=*/true);  // whatever arrived after the writer's last pass
  const std::int64_t cpu1 = thread_cpu_ns();
  w.cpu_ns += cpu1 - cpu0;
  if (w.file && !w.failed) {
    try {
      // Only on request (see expand_at_exit): readers decode batches, and `collscope sql` expands them later.
      if (w.expand_at_exit) w.events_expanded = w.file->expand_event_batches();
    } catch (const std::exception& ex) {
      warn_once(fmt::format("cannot expand the trace's event batches (readers decode them): {}", ex.what()));
    }
    try {
      w.file->begin();
      w.file->set_meta(store::meta_key::kMonotonicEnd, std::to_string(monotonic_ns()));
      w.file->set_meta(store::meta_key::kRealtimeEnd, std::to_string(realtime_ns()));
      w.file->set_meta(store::meta_key::kTraceBufferBytes, std::to_string(buffer_bytes_allocated()));
      w.file->commit();
    } catch (const std::exception& ex) {
      warn_once(fmt::format("cannot finish trace: {}", ex.what()));
    }
  }
  w.file.reset();  // closes the database: the WAL is folded into the main file, which leaves WAL mode
  w.exit_cpu_ns = thread_cpu_ns() - cpu1;
  drain_lock.unlock();
  if (w.events_dropped > 0) {
    // Once per rank, at exit: the trace is incomplete, and why.
    const std::string line = fmt::format(
        "collscope: rank {} dropped {} events (no memory for trace buffers: {} MiB allocated of a {} MiB cap)\n",
        w.world_rank, w.events_dropped, buffer_bytes_allocated() >> 20, buffer_cap_bytes() >> 20);
    [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
  }
  if (w.flush_count > 0) {
    // The job waited for the tracer: say how long, and the knob that avoids it.
    const std::string line = fmt::format(
        "collscope: rank {} waited {:.1f} ms in {} trace flushes (its trace buffers were full; COLLSCOPE_BUFFER_MB={} "
        "gives them more memory than the {} MiB now)\n",
        w.world_rank, double(w.flush_ns) / 1e6, w.flush_count, (buffer_cap_bytes() >> 20) * 4, buffer_cap_bytes() >> 20);
    [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
  }
}

WriterStats writer_stats() {
  const Writer& w = writer();
  return {w.events_written, w.events_dropped, w.cpu_ns, w.events_expanded, w.exit_cpu_ns, w.flush_count, w.flush_ns};
}

}  // namespace collscope::tracer
