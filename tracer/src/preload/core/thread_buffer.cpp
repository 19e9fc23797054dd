#include "core/thread_buffer.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "core/job_metadata.hpp"
#include "core/runtime.hpp"

namespace collscope::tracer {
namespace {
std::atomic<ThreadBuffer*> g_head{nullptr};
std::atomic<std::uint32_t> g_count{0};
std::atomic<std::uint64_t> g_allocated{0};  // bytes of chunks allocated, all threads

constexpr std::size_t kMiB = 1024 * 1024;

// Ranks sharing this node, from the launcher (Open MPI, MPICH/Hydra, Slurm, torchrun); 1 when unknown.
std::uint64_t local_ranks() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE"})
    if (int n = env_int(v, 0); n > 0) return static_cast<std::uint64_t>(n);
  return 1;
}

// Chunks are carved from 4 MiB slabs mapped with MAP_POPULATE: while the writer gets no CPU and no chunk comes back,
// each new chunk's memory would otherwise be touched first by the recording thread, faulting a 4 KiB page in every
// 32 events (~1 us each, the largest part of recording into fresh memory: +80 ns per event in a tight loop). One
// mmap fills the slab's 1 024 pages in the kernel at once (~0.3 ms per 32 000 events). Transparent huge pages
// (MADV_HUGEPAGE) were tried and rejected: with the kernel's default defrag policy a fault may stall in direct
// compaction, and tight loops measured 160-290 ns per event in one run of two. The lock is taken once per chunk
// (512 events), never per event; a forked child records nothing, so it never waits on a lock held at fork.
constexpr std::size_t kSlabBytes = 4 * kMiB;
constexpr std::size_t kChunkStride = (sizeof(EventChunk) + alignof(EventChunk) - 1) / alignof(EventChunk) * alignof(EventChunk);
std::mutex g_slab_mutex;
char* g_slab_next = nullptr;
char* g_slab_end = nullptr;
// Chunks of exited threads (ThreadBuffer::reclaim_if_retired), linked by free_next, under g_slab_mutex: already
// counted in g_allocated, handed to the next thread that needs one before any slab is carved.
EventChunk* g_recycled = nullptr;
// Their records (release_for_reuse), linked by reuse_next, under g_slab_mutex: the next new thread takes one.
ThreadBuffer* g_reusable = nullptr;

EventChunk* take_recycled() {
  std::lock_guard lock(g_slab_mutex);
  EventChunk* c = g_recycled;
  if (c) g_recycled = c->free_next;
  return c;
}

void* carve_chunk() {
  std::lock_guard lock(g_slab_mutex);
  if (static_cast<std::size_t>(g_slab_end - g_slab_next) < kChunkStride) {
    void* p = ::mmap(nullptr, kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    g_slab_next = static_cast<char*>(p);
    g_slab_end = g_slab_next + kSlabBytes;
  }
  void* c = g_slab_next;
  g_slab_next += kChunkStride;
  return c;
}

// A chunk, counted against the cap unless `over_cap` (a flush cannot run now: better to exceed the cap by a chunk
// than to lose events). Its pages are not touched until events are written into them.
EventChunk* allocate_chunk(bool over_cap) {
  if (EventChunk* c = take_recycled()) return c;
  const std::uint64_t bytes = sizeof(EventChunk);
  std::uint64_t now = g_allocated.load(std::memory_order_relaxed);
  do {
    if (!over_cap && now + bytes > buffer_cap_bytes()) return nullptr;
  } while (!g_allocated.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  void* p = carve_chunk();
  if (!p) {
    g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  // Past half the cap, wake the writer early (once per chunk allocated, so rarely) rather than wait for its timer.
  if (now + bytes > buffer_cap_bytes() / 2) wake_writer();
  return new (p) EventChunk;  // default-initialised: the events are written before they are read
}

}  // namespace

__attribute__((tls_model("initial-exec"))) constinit thread_local ThreadBuffer* t_thread_buffer = nullptr;

namespace {
// A thread's buffer is retired when the thread exits: a pthread key's destructor, set when the buffer is
// registered (once per thread). A traced call from a later destructor registers a new buffer, which is retired in
// the key's next round (glibc runs them up to PTHREAD_DESTRUCTOR_ITERATIONS times).
pthread_key_t g_retire_key;
bool g_retire_key_made = false;

void retire_at_thread_exit(void*) {
  ThreadBuffer* tb = t_thread_buffer;
  t_thread_buffer = nullptr;  // first: nothing this thread still records may go to a retired buffer
  if (tb) tb->retire();
}
}  // namespace

ThreadBuffer* register_this_thread() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] { g_retire_key_made = pthread_key_create(&g_retire_key, retire_at_thread_exit) == 0; });
  if (g_retire_key_made) pthread_setspecific(g_retire_key, &g_retire_key);  // any non-null value
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  const auto tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
  const std::uint32_t index = g_count.fetch_add(1) + 1;  // a new index even in a reused record: a new threads row
  ThreadBuffer* reusable = nullptr;
  {
    std::lock_guard lock(g_slab_mutex);
    if ((reusable = g_reusable)) g_reusable = reusable->reuse_next;
  }
  if (reusable) {
    reusable->reuse(index, tid, name);
    return reusable;
  }
  auto* tb = new ThreadBuffer(index, tid, name);
  ThreadBuffer* head = g_head.load(std::memory_order_relaxed);
  do {
    tb->next = head;
  } while (!g_head.compare_exchange_weak(head, tb, std::memory_order_release, std::memory_order_relaxed));
  return tb;
}

std::uint64_t buffer_cap_bytes() {
  static const std::uint64_t cap = [] {
    if (const char* v = std::getenv("COLLSCOPE_BUFFER_MB"); v && *v) {
      char* end = nullptr;
      const unsigned long long mb = std::strtoull(v, &end, 10);
      if (*end == '\0' && mb >= 1 && mb <= (1u << 20)) return static_cast<std::uint64_t>(mb) * kMiB;
      warn_once(fmt::format("COLLSCOPE_BUFFER_MB={} ignored: not a whole number of MiB from 1 to 1048576", v));
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const std::uint64_t node = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 4096 * kMiB;
    return std::clamp<std::uint64_t>(node / 16 / local_ranks(), 16 * kMiB, 4096 * kMiB);
  }();
  return cap;
}

std::uint64_t buffer_bytes_allocated() { return g_allocated.load(std::memory_order_relaxed); }

ThreadBuffer::ThreadBuffer(std::uint32_t index, std::int64_t tid, std::string name)
    : index_(index), tid_(tid), name_(std::move(name)) {}

EventChunk* ThreadBuffer::take_free() {
  if (!private_free_) private_free_ = free_.exchange(nullptr, std::memory_order_acquire);
  EventChunk* c = private_free_;
  if (c) private_free_ = c->free_next;
  return c;
}

void ThreadBuffer::give_back(EventChunk* c) {
  // Only the consumer pushes and only the producer takes (all at once): no ABA.
  EventChunk* head = free_.load(std::memory_order_relaxed);
  do {
    c->free_next = head;
  } while (!free_.compare_exchange_weak(head, c, std::memory_order_release, std::memory_order_relaxed));
}

bool ThreadBuffer::next_chunk() {
  EventChunk* c = take_free();
  bool fresh = false;
  if (!c && (c = allocate_chunk(false))) fresh = true;
  // At the cap: write out synchronously, which also hands exited threads' chunks to the pool (a thread's first
  // chunk then comes from there, not from past the cap).
  if (!c && flush_from_recording_thread(*this)) {
    if (write_chunk_ && write_index_ == 0) return true;  // everything was written out: the current chunk is reused
    c = take_free();
  }
  if (!c && (c = allocate_chunk(true))) fresh = true;
  if (!c) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (fresh) chunks_.fetch_add(1, std::memory_order_relaxed);
  c->published.store(0, std::memory_order_relaxed);
  c->next.store(nullptr, std::memory_order_relaxed);
  if (write_chunk_) write_chunk_->next.store(c, std::memory_order_release);
  else first_chunk_.store(c, std::memory_order_release);
  write_chunk_ = c;
  write_index_ = 0;
  return true;
}

void ThreadBuffer::rewind_if_drained() {
  if (!write_chunk_ || read_chunk_ != write_chunk_ || read_index_ != write_index_) return;
  write_chunk_->published.store(0, std::memory_order_relaxed);
  read_index_ = 0;
  write_index_ = 0;
}

bool ThreadBuffer::empty() const {
  const EventChunk* c = read_chunk_ ? read_chunk_ : first_chunk_.load(std::memory_order_acquire);
  if (!c) return true;
  const std::uint32_t at = read_chunk_ ? read_index_ : 0;
  return at == c->published.load(std::memory_order_acquire) && c->next.load(std::memory_order_acquire) == nullptr;
}

bool ThreadBuffer::reclaim_if_retired() {
  if (reclaimed_ || !retired_.load(std::memory_order_acquire) || !empty()) return false;
  // The producer has exited: its fields are ours now (the acquire above saw its last publish).
  std::vector<EventChunk*> chunks;
  if (EventChunk* last = read_chunk_ ? read_chunk_ : first_chunk_.load(std::memory_order_relaxed)) chunks.push_back(last);
  for (EventChunk* c = free_.exchange(nullptr, std::memory_order_acquire); c; c = c->free_next) chunks.push_back(c);
  for (EventChunk* c = private_free_; c; c = c->free_next) chunks.push_back(c);
  {
    std::lock_guard lock(g_slab_mutex);
    for (EventChunk* c : chunks) {
      c->free_next = g_recycled;
      g_recycled = c;
    }
  }
  read_chunk_ = write_chunk_ = private_free_ = nullptr;
  read_index_ = 0;
  write_index_ = kChunkEvents;
  first_chunk_.store(nullptr, std::memory_order_relaxed);
  chunks_.store(0, std::memory_order_relaxed);
  reclaimed_ = true;
  return true;
}

void ThreadBuffer::reuse(std::uint32_t index, std::int64_t tid, std::string name) {
  // Ours alone: consumers skip a record that is not live, and its old thread has exited.
  index_ = index;
  tid_ = tid;
  name_ = std::move(name);
  call_depth_ = 0;
  since_.store(0, std::memory_order_relaxed);
  retired_.store(false, std::memory_order_relaxed);
  reclaimed_ = false;
  reuse_next = nullptr;
  state_.store(kLive, std::memory_order_release);
}

void release_for_reuse(ThreadBuffer* tb) {
  tb->state_.store(ThreadBuffer::kReusable, std::memory_order_relaxed);  // consumers: the drain lock orders it
  std::lock_guard lock(g_slab_mutex);
  tb->reuse_next = g_reusable;
  g_reusable = tb;
}

ThreadBuffer* thread_buffers() { return g_head.load(std::memory_order_acquire); }
std::uint32_t thread_buffer_count() { return g_count.load(std::memory_order_relaxed); }

}  // namespace collscope::tracer
