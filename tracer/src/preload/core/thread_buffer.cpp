#include "core/thread_buffer.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "core/runtime.hpp"

namespace collscope::tracer {
namespace {
std::atomic<ThreadBuffer*> g_head{nullptr};
std::atomic<std::uint32_t> g_count{0};

}  // namespace

__attribute__((tls_model("initial-exec"))) constinit thread_local ThreadBuffer* t_thread_buffer = nullptr;

ThreadBuffer* register_this_thread() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  const auto tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
  auto* tb = new ThreadBuffer(g_count.fetch_add(1) + 1, tid, name);
  ThreadBuffer* head = g_head.load(std::memory_order_relaxed);
  do {
    tb->next = head;
  } while (!g_head.compare_exchange_weak(head, tb, std::memory_order_release, std::memory_order_relaxed));
  return tb;
}

std::uint64_t ring_events() {
  static const std::uint64_t events = [] {
    const char* v = std::getenv("COLLSCOPE_RING_EVENTS");
    if (!v || !*v) return kDefaultRingEvents;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n < 1024 || n > (1u << 20) || (n & (n - 1)) != 0) {
      warn_once(fmt::format("COLLSCOPE_RING_EVENTS={} ignored: not a power of two from 1024 to 1048576; using {}", v,
                            kDefaultRingEvents));
      return kDefaultRingEvents;
    }
    return static_cast<std::uint64_t>(n);
  }();
  return events;
}

ThreadBuffer::ThreadBuffer(std::uint32_t index, std::int64_t tid, std::string name)
    : capacity_(ring_events()), index_(index), tid_(tid), name_(std::move(name)) {
  // calloc: zero pages are only touched when used, so idle threads cost no resident memory.
  events_ = static_cast<Event*>(std::calloc(capacity_, sizeof(Event)));
  if (!events_) head_.store(capacity_);  // no memory: the ring reads as full forever, every event is dropped
}

ThreadBuffer* thread_buffers() { return g_head.load(std::memory_order_acquire); }
std::uint32_t thread_buffer_count() { return g_count.load(std::memory_order_relaxed); }

}  // namespace collscope::tracer
