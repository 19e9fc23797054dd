#pragma once
// Per-thread single-producer/single-consumer rings. The owning thread writes without locks, allocation or system
// calls; the writer thread drains. A full ring drops the event and counts it: the job is never blocked.
#include <atomic>
#include <cstdint>
#include <string>

#include "core/event.hpp"

namespace collscope::tracer {

// Asks the writer thread to drain now (a futex wake at most; called once per eighth of a ring).
void wake_writer();

// Events per thread's ring: COLLSCOPE_RING_EVENTS (a power of two, 1024 to 1048576), else kDefaultRingEvents.
// 16384 events (2 MiB per thread, its pages touched only as the ring fills) hold a whole OSU message size
// (10 000 timed calls after 1 000 warm-up ones) even if the writer got no CPU meanwhile.
inline constexpr std::uint64_t kDefaultRingEvents = 16384;
std::uint64_t ring_events();

class ThreadBuffer {
 public:
  ThreadBuffer(std::uint32_t index, std::int64_t tid, std::string name);

  // Producer side (owning thread only). Returns the slot to fill, or nullptr when full (counted as dropped,
  // unless a benchmark that waits for room says otherwise).
  Event* reserve(bool count_drop = true) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ >= capacity_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ >= capacity_) {
        if (count_drop) dropped_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    return &events_[head & (capacity_ - 1)];
  }
  void publish() {
    const std::uint64_t next = head_.load(std::memory_order_relaxed) + 1;
    head_.store(next, std::memory_order_release);
    // An eighth of the ring filled since the last wake-up: ask the writer to drain early, long before it is full.
    if ((next & (capacity_ / 8 - 1)) == 0) wake_writer();
  }

  // Consumer side (writer thread only): calls fn(const Event&) for every published event, then frees them.
  template <typename Fn>
  std::uint64_t drain(Fn&& fn) {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t n = head - tail;
    for (; tail != head; ++tail) fn(events_[tail & (capacity_ - 1)]);
    tail_.store(tail, std::memory_order_release);
    return n;
  }
  std::uint64_t capacity() const { return capacity_; }

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
  // An event lost before it reached the ring (a full table of pending requests): counted like a ring drop.
  void count_dropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

  ThreadBuffer* next = nullptr;  // registry list, written once before publication

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t tail_cache_ = 0;
  std::uint64_t capacity_;  // events, a power of two (ring_events() when the thread registered)
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
  alignas(64) std::atomic<std::uint64_t> since_{0};  // the call in flight (see enter_call)
  std::atomic<std::uint64_t> call_[6] = {};
  int call_depth_ = 0;
  std::uint32_t index_;
  std::int64_t tid_;
  std::string name_;
  Event* events_;
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
// Head of the registry list (newest first); the list only grows.
ThreadBuffer* thread_buffers();
std::uint32_t thread_buffer_count();

// Hot-path helper: fill one event on the calling thread's ring.
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
