#pragma once
// Per-thread event buffers that never drop. Each thread appends to a chain of fixed-size chunks (64 KiB) with no
// lock, allocation or system call per event; the writer thread consumes the chain behind it and hands each chunk it
// has emptied back to that thread's free list. A thread that needs a chunk takes one from its free list, else
// allocates one while the process stays under its trace-buffer memory cap (COLLSCOPE_BUFFER_MB), else writes the
// buffered events out itself, synchronously (a "tracer flush", recorded in the trace so analysis can discount it),
// the way Score-P flushes a full location buffer. Nothing is lost unless memory itself runs out.
#include <atomic>
#include <cstdint>
#include <string>

#include "core/event.hpp"

namespace collscope::tracer {

// Asks the writer thread to drain now (a futex wake at most; called when the buffers pass half their cap).
void wake_writer();

// Events per chunk: 512 x 128 B = 64 KiB, so a chunk change (the only step off the hot path) comes once per 512
// events, and the writer moves whole pages.
inline constexpr std::uint32_t kChunkEvents = 512;

struct EventChunk {
  alignas(64) std::atomic<std::uint32_t> published{0};  // events [0, published) are complete (producer: release)
  std::atomic<EventChunk*> next{nullptr};               // set by the producer when it moves on (release)
  EventChunk* free_next = nullptr;                      // free-list link, while the chunk is free
  alignas(64) Event events[kChunkEvents];
};

// The process's cap on trace-buffer memory, bytes: COLLSCOPE_BUFFER_MB, else a sixteenth of the node's memory
// shared among the ranks on the node (the launcher's local size), within 16 MiB..4 GiB. Pages are touched only as
// chunks are first used, so an idle tracer costs nothing.
std::uint64_t buffer_cap_bytes();
// Bytes of chunks allocated so far (never returned to the system: chunks are recycled).
std::uint64_t buffer_bytes_allocated();

class ThreadBuffer;
// When a thread finds no free chunk and the cap is reached: drains every thread's buffers into the file on the
// calling thread, records the interval, and returns true; false when that cannot be done now (no file yet, or the
// calling thread is the one draining). Defined by the writer (writer.cpp).
bool flush_from_recording_thread(ThreadBuffer& tb);

class ThreadBuffer {
 public:
  ThreadBuffer(std::uint32_t index, std::int64_t tid, std::string name);

  // Producer side (owning thread only). Returns the slot to fill, or nullptr when no memory can be had at all
  // (counted as dropped).
  Event* reserve() {
    if (__builtin_expect(write_index_ == kChunkEvents, 0) && !next_chunk()) return nullptr;
    return &write_chunk_->events[write_index_];
  }
  void publish() { write_chunk_->published.store(++write_index_, std::memory_order_release); }

  // Consumer side (one thread at a time: the caller holds the writer's drain lock): calls fn(const Event&) for
  // every published event in order, at most `max_events` of them, and returns the chunks it emptied to this
  // thread's free list. Returns how many it consumed.
  template <typename Fn>
  std::uint64_t drain(Fn&& fn, std::uint64_t max_events = ~std::uint64_t{0}) {
    if (!read_chunk_) {
      read_chunk_ = first_chunk_.load(std::memory_order_acquire);
      if (!read_chunk_) return 0;
    }
    std::uint64_t n = 0;
    for (;;) {
      const std::uint32_t published = read_chunk_->published.load(std::memory_order_acquire);
      for (; read_index_ < published && n < max_events; ++read_index_, ++n) fn(read_chunk_->events[read_index_]);
      if (n == max_events) break;             // the rest at the next call
      if (read_index_ < kChunkEvents) break;  // the producer is still filling this chunk
      EventChunk* next = read_chunk_->next.load(std::memory_order_acquire);
      if (!next) break;  // full, and the producer has not moved on yet
      give_back(read_chunk_);
      read_chunk_ = next;
      read_index_ = 0;
    }
    return n;
  }
  // After a drain on the owning thread itself (a tracer flush): when everything was consumed, the current chunk
  // is reused from its start instead of asking for another.
  void rewind_if_drained();

  // The blocking collective this thread is inside, so that the writer can record a call that stays in flight
  // (a hang: the call never returns, so its event is never emitted). Owning thread: enter_call before the call,
  // leave_call after it; nested traced calls keep the outermost. A seqlock keyed by the start tick (unique per
  // call): `since_` is cleared before the words change and set after, and the writer re-reads it. The words are
  // stored with release and read with acquire rather than fenced (ThreadSanitizer follows these; on x86 they
  // are plain moves), so a reader that sees a new word also sees `since_` cleared.
  struct CallSnapshot {
    std::uint64_t since = 0;  // ticks at entry, 0 = none
    std::uint32_t comm_slot = 0;
    std::uint8_t op = 0;
    std::int32_t root = -1;
    std::int64_t seq = 0, count = 0, bytes = 0;
    std::uint32_t datatype = 0, reduce_op = 0;
  };
  void enter_call(std::uint64_t t0, std::uint32_t comm_slot, std::uint8_t op, std::int32_t root, std::int64_t seq,
                  std::int64_t count, std::int64_t bytes, std::uint32_t datatype, std::uint32_t reduce_op) {
    if (call_depth_++ != 0) return;
    since_.store(0, std::memory_order_relaxed);
    call_[0].store(std::uint64_t{comm_slot} | std::uint64_t{op} << 32, std::memory_order_release);
    call_[1].store(static_cast<std::uint64_t>(seq), std::memory_order_release);
    call_[2].store(static_cast<std::uint64_t>(count), std::memory_order_release);
    call_[3].store(static_cast<std::uint64_t>(bytes), std::memory_order_release);
    call_[4].store(std::uint64_t{datatype} | std::uint64_t{reduce_op} << 32, std::memory_order_release);
    call_[5].store(static_cast<std::uint64_t>(std::int64_t{root}), std::memory_order_release);
    since_.store(t0, std::memory_order_release);
  }
  void leave_call() {
    if (--call_depth_ == 0) since_.store(0, std::memory_order_release);
  }
  // Writer thread: the call in flight now, if any (false also when it changed while being read).
  bool call_in_flight(CallSnapshot& out) const {
    const std::uint64_t since = since_.load(std::memory_order_acquire);
    if (since == 0) return false;
    std::uint64_t w[6];
    for (int i = 0; i < 6; ++i) w[i] = call_[i].load(std::memory_order_acquire);
    if (since_.load(std::memory_order_relaxed) != since) return false;
    out.since = since;
    out.comm_slot = static_cast<std::uint32_t>(w[0]);
    out.op = static_cast<std::uint8_t>(w[0] >> 32);
    out.seq = static_cast<std::int64_t>(w[1]);
    out.count = static_cast<std::int64_t>(w[2]);
    out.bytes = static_cast<std::int64_t>(w[3]);
    out.datatype = static_cast<std::uint32_t>(w[4]);
    out.reduce_op = static_cast<std::uint32_t>(w[4] >> 32);
    out.root = static_cast<std::int32_t>(static_cast<std::int64_t>(w[5]));
    return true;
  }

  std::uint32_t index() const { return index_; }
  std::int64_t tid() const { return tid_; }
  const std::string& name() const { return name_; }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // An event lost before it reached the buffer (a full table of pending requests): counted as dropped.
  void count_dropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  // Whether everything published has been drained (the consumer's view; for tests).
  bool empty() const;
  // Owning thread, as it exits (a pthread key's destructor, thread_buffer.cpp): it publishes nothing more.
  void retire() { retired_.store(true, std::memory_order_release); }
  // Consumer side (under the drain lock), after a drain: when the thread has exited and everything it published
  // has been drained, its chunks go to the process's pool for threads yet to come, so that a job that starts a
  // thread per task holds the chunks of the threads alive, not of every thread it ever ran. True when it did.
  bool reclaim_if_retired();
  // Chunks this thread holds (in its chain or free), for tests and the exit report.
  std::uint64_t chunks() const { return chunks_.load(std::memory_order_relaxed); }
  // Whether the record belongs to a thread (running, or exited and not yet reclaimed). Consumers skip any other:
  // it waits on the reuse stack (release_for_reuse) or is being taken by a new thread, which writes its fields.
  bool live() const { return state_.load(std::memory_order_acquire) == kLive; }
  // A new thread's use of a reclaimed record (register_this_thread): its own index, tid and name, nothing in
  // flight; then live again (release: a consumer that sees it live sees these). Dropped counts stay: they are the
  // process's (the writer sums them over the records).
  void reuse(std::uint32_t index, std::int64_t tid, std::string name);

  ThreadBuffer* next = nullptr;        // registry list, written once before publication
  ThreadBuffer* reuse_next = nullptr;  // reuse stack (under the chunk pool's lock)

 private:
  friend void release_for_reuse(ThreadBuffer* tb);
  bool next_chunk();  // cold: the current chunk is full
  EventChunk* take_free();
  void give_back(EventChunk* c);

  // Producer-owned.
  EventChunk* write_chunk_ = nullptr;
  std::uint32_t write_index_ = kChunkEvents;  // "full" until the first chunk is taken
  EventChunk* private_free_ = nullptr;        // free chunks already taken over from free_
  // Consumer-owned (under the drain lock).
  EventChunk* read_chunk_ = nullptr;
  std::uint32_t read_index_ = 0;
  // Shared.
  std::atomic<EventChunk*> first_chunk_{nullptr};  // set by the producer when it takes its first chunk (cleared
                                                   // when an exited thread's chunks are reclaimed)
  alignas(64) std::atomic<EventChunk*> free_{nullptr};  // chunks the consumer emptied (consumer pushes, producer takes all)
  std::atomic<std::uint64_t> chunks_{0};
  std::atomic<bool> retired_{false};  // set by the owning thread as it exits (release)
  bool reclaimed_ = false;            // consumer-owned: its chunks went to the pool
  static constexpr std::uint8_t kLive = 0, kReusable = 1;
  std::atomic<std::uint8_t> state_{kLive};
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
  alignas(64) std::atomic<std::uint64_t> since_{0};  // the call in flight (see enter_call)
  std::atomic<std::uint64_t> call_[6] = {};
  int call_depth_ = 0;
  std::uint32_t index_;
  std::int64_t tid_;
  std::string name_;
};

// The calling thread's buffer, registered on first use (the only allocation, once per thread).
// initial-exec TLS: the preload is loaded at start-up, so reading the pointer is one instruction.
extern __attribute__((tls_model("initial-exec"))) constinit thread_local ThreadBuffer* t_thread_buffer;
ThreadBuffer* register_this_thread();
inline ThreadBuffer& this_thread_buffer() {
  ThreadBuffer* tb = t_thread_buffer;
  if (__builtin_expect(tb == nullptr, 0)) tb = t_thread_buffer = register_this_thread();
  return *tb;
}
// Head of the registry list (newest first); it grows by the most threads alive at once, not by every thread ever
// started: a reclaimed record is taken again by the next new thread.
ThreadBuffer* thread_buffers();
// Consumer (under the drain lock), after its last use of the records in this pass: a record whose chunks it
// reclaimed (reclaim_if_retired) goes on the stack register_this_thread takes from before it allocates one, so
// that a job that starts a thread per task holds a record (~0.5 KiB, and a writer's visit every pass) per thread
// alive, not per thread it ever ran. From then on consumers skip it until a new thread has made it live.
void release_for_reuse(ThreadBuffer* tb);
std::uint32_t thread_buffer_count();

// Hot-path helper: fill one event in the calling thread's buffer.
template <typename Fill>
inline void emit(Fill&& fill) {
  ThreadBuffer& tb = this_thread_buffer();
  if (Event* e = tb.reserve()) {
    fill(*e);
    e->thread = tb.index();
    tb.publish();
  }
}

}  // namespace collscope::tracer
