#pragma once
// Per-thread single-producer/single-consumer rings. The owning thread writes without locks, allocation or system
// calls; the writer thread drains. A full ring drops the event and counts it: the job is never blocked.
#include <atomic>
#include <cstdint>
#include <string>

#include "event.hpp"

namespace collscope::tracer {

// Asks the writer thread to drain now (a futex wake at most; called once per half ring).
void wake_writer();

class ThreadBuffer {
 public:
  static constexpr std::uint64_t kCapacity = 4096;  // events (512 KiB per thread: stays in L2)

  ThreadBuffer(std::uint32_t index, std::int64_t tid, std::string name);

  // Producer side (owning thread only). Returns the slot to fill, or nullptr when full (counted as dropped).
  Event* reserve() {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ >= kCapacity) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ >= kCapacity) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    return &events_[head & (kCapacity - 1)];
  }
  void publish() {
    const std::uint64_t next = head_.load(std::memory_order_relaxed) + 1;
    head_.store(next, std::memory_order_release);
    // Half a ring filled since the last wake-up: ask the writer to drain early (once per 8192 events).
    if ((next & (kCapacity / 2 - 1)) == 0) wake_writer();
  }

  // Consumer side (writer thread only): calls fn(const Event&) for every published event, then frees them.
  template <typename Fn>
  std::uint64_t drain(Fn&& fn) {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t n = head - tail;
    for (; tail != head; ++tail) fn(events_[tail & (kCapacity - 1)]);
    tail_.store(tail, std::memory_order_release);
    return n;
  }

  std::uint32_t index() const { return index_; }
  std::int64_t tid() const { return tid_; }
  const std::string& name() const { return name_; }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

  ThreadBuffer* next = nullptr;  // registry list, written once before publication

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t tail_cache_ = 0;
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
  std::uint32_t index_;
  std::int64_t tid_;
  std::string name_;
  Event* events_;
};

// The calling thread's buffer, registered on first use (the only allocation, once per thread).
// initial-exec TLS: the preload is loaded at start-up, so reading the pointer is one instruction.
extern __attribute__((tls_model("initial-exec"))) thread_local ThreadBuffer* t_thread_buffer;
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
