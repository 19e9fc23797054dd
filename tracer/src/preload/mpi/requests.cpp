#include "mpi/requests.hpp"

#include <atomic>
#include <cstring>
#include <mutex>

#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer::mpi {
namespace {

constexpr std::size_t kTableSize = 4096;  // power of two
constexpr std::size_t kProbe = 64;
constexpr RequestKey kFree = 0;
constexpr RequestKey kClaimed = ~RequestKey{0};
constexpr std::size_t kWords = sizeof(Event) / sizeof(std::uint64_t);

std::size_t bucket(RequestKey r) { return (r >> 4 ^ r >> 13 ^ r) & (kTableSize - 1); }

// A pending call. The slot is claimed by CAS of `request` (kFree -> kClaimed), filled, then published by storing
// the handle; the thread that completes the request frees it by storing kFree. The event is a seqlock over
// atomic words: the claimer makes `version` odd, stores the words, makes it even, then publishes. The writer
// thread's scan reads version, request, the words, version and request again, and keeps the copy only when
// neither changed: a slot freed and claimed again meanwhile (even for the same handle value, which MPI reuses)
// changed the version. Every shared word is an atomic, so the copy is a race in no memory model, and the words are
// stored with release and loaded with acquire instead of fences (which ThreadSanitizer cannot follow): a reader
// that sees a word of a new event then sees that event's odd version. On x86 all of these are plain moves.
struct PendingSlot {
  std::atomic<RequestKey> request{kFree};
  std::atomic<std::uint32_t> version{0};
  std::atomic<std::uint64_t> words[kWords] = {};
  std::atomic<std::uint64_t> wait_ticks{0};  // added by completion calls that do not complete it
  std::atomic<std::uint32_t> wait_calls{0};
};
PendingSlot g_pending[kTableSize];
std::atomic<int> g_pending_count{0};
// The farthest from its bucket any call was ever placed (never decreases): a lookup probes no further. A request
// that is not pending (completed earlier, posted before the trace, a persistent one not started) used to probe all
// kProbe slots, 64 of these 160-byte slots, in every Test of a polling loop: HPCC's RandomAccess spent 4 % of its
// CPU time there. Read relaxed: a call is placed before the handle reaches whoever looks it up.
std::atomic<std::size_t> g_farthest{0};

void store_words(PendingSlot& s, const Event& e) {
  std::uint64_t w[kWords];
  std::memcpy(w, &e, sizeof e);
  for (std::size_t i = 0; i < kWords; ++i) s.words[i].store(w[i], std::memory_order_release);
}

void load_words(const PendingSlot& s, Event& e) {
  std::uint64_t w[kWords];
  for (std::size_t i = 0; i < kWords; ++i) w[i] = s.words[i].load(std::memory_order_acquire);
  std::memcpy(&e, w, sizeof e);
}

PendingSlot* find(RequestKey r) {
  if (r == kFree || r == kClaimed) return nullptr;
  const std::size_t probes = g_farthest.load(std::memory_order_relaxed) + 1;
  for (std::size_t i = bucket(r), n = 0; n < probes; i = (i + 1) & (kTableSize - 1), ++n)
    if (g_pending[i].request.load(std::memory_order_acquire) == r) return &g_pending[i];
  return nullptr;
}

// Persistent requests: written under a lock (init and free are rare), read without one by MPI_Start. A slot's
// call is written before its key is published (release) and read after the key is seen (acquire).
struct PersistentSlot {
  std::atomic<RequestKey> request{kFree};
  Event call;
};
constexpr RequestKey kTombstone = kClaimed;
PersistentSlot g_persistent[kTableSize];
std::atomic<int> g_persistent_count{0};
std::mutex g_persistent_mutex;

PersistentSlot* find_persistent(RequestKey r) {
  if (r == kFree || r == kTombstone) return nullptr;
  for (std::size_t i = bucket(r), n = 0; n < kTableSize; i = (i + 1) & (kTableSize - 1), ++n) {
    const RequestKey k = g_persistent[i].request.load(std::memory_order_acquire);
    if (k == r) return &g_persistent[i];
    if (k == kFree) return nullptr;
  }
  return nullptr;
}

}  // namespace

bool pending_add(RequestKey r, const Event& e) {
  if (r == kFree || r == kClaimed) return false;
  for (std::size_t i = bucket(r), n = 0; n < kProbe; i = (i + 1) & (kTableSize - 1), ++n) {
    PendingSlot& s = g_pending[i];
    RequestKey expected = kFree;
    if (s.request.load(std::memory_order_relaxed) != kFree ||
        !s.request.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire))
      continue;
    Event copy = e;
    copy.thread = this_thread_buffer().index();
    const std::uint32_t v = s.version.load(std::memory_order_relaxed);
    s.version.store(v + 1, std::memory_order_relaxed);  // odd: being written
    store_words(s, copy);
    s.wait_ticks.store(0, std::memory_order_relaxed);
    s.wait_calls.store(0, std::memory_order_relaxed);
    s.version.store(v + 2, std::memory_order_release);
    for (std::size_t far = g_farthest.load(std::memory_order_relaxed);
         n > far && !g_farthest.compare_exchange_weak(far, n, std::memory_order_relaxed);) {
    }
    s.request.store(r, std::memory_order_release);
    g_pending_count.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  warn_once("too many outstanding non-blocking MPI calls: some are not traced (counted as dropped)");
  this_thread_buffer().count_dropped();
  return false;
}

bool pending_take(RequestKey r, Event& out) {
  PendingSlot* s = find(r);
  if (!s) return false;
  load_words(*s, out);
  out.mpi.wait_ticks += s->wait_ticks.load(std::memory_order_relaxed);
  out.mpi.wait_calls += s->wait_calls.load(std::memory_order_relaxed);
  s->request.store(kFree, std::memory_order_release);
  g_pending_count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void pending_waited(RequestKey r, std::uint64_t ticks) {
  // One thread at a time completes or tests a request (MPI makes two at once erroneous), so a plain load and store
  // suffice: no locked add in every Test of a polling loop. The writer's scan only reads them.
  if (PendingSlot* s = find(r)) {
    s->wait_ticks.store(s->wait_ticks.load(std::memory_order_relaxed) + ticks, std::memory_order_relaxed);
    s->wait_calls.store(s->wait_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

bool pending_collective(RequestKey r, Event& out) {
  PendingSlot* s = find(r);
  if (!s) return false;
  load_words(*s, out);
  return out.kind == EventKind::Collective;
}

bool any_pending() { return g_pending_count.load(std::memory_order_relaxed) > 0; }

void scan_pending_collectives(const std::function<void(const Event&)>& fn) {
  if (!any_pending()) return;
  for (const PendingSlot& s : g_pending) {
    const std::uint32_t v1 = s.version.load(std::memory_order_acquire);
    const RequestKey r1 = s.request.load(std::memory_order_acquire);
    if (r1 == kFree || r1 == kClaimed || (v1 & 1)) continue;
    Event copy;
    load_words(s, copy);
    if (s.version.load(std::memory_order_relaxed) != v1 || s.request.load(std::memory_order_relaxed) != r1) continue;
    if (copy.kind == EventKind::Collective) fn(copy);
  }
}

void persistent_add(RequestKey r, const Event& call) {
  if (r == kFree || r == kTombstone) return;
  std::lock_guard lock(g_persistent_mutex);
  PersistentSlot* target = find_persistent(r);
  for (std::size_t i = bucket(r), n = 0; !target && n < kTableSize; i = (i + 1) & (kTableSize - 1), ++n) {
    const RequestKey k = g_persistent[i].request.load(std::memory_order_relaxed);
    if (k == kFree || k == kTombstone) target = &g_persistent[i];
  }
  if (!target) {
    warn_once("too many persistent MPI requests: the starts of some are not traced");
    return;
  }
  target->call = call;
  if (target->request.load(std::memory_order_relaxed) != r) g_persistent_count.fetch_add(1, std::memory_order_relaxed);
  target->request.store(r, std::memory_order_release);
}

bool persistent_find(RequestKey r, Event& out) {
  const PersistentSlot* s = find_persistent(r);
  if (!s) return false;
  out = s->call;
  return true;
}

void persistent_remove(RequestKey r) {
  std::lock_guard lock(g_persistent_mutex);
  if (PersistentSlot* s = find_persistent(r)) {
    s->request.store(kTombstone, std::memory_order_release);
    g_persistent_count.fetch_sub(1, std::memory_order_relaxed);
  }
}

bool any_persistent() { return g_persistent_count.load(std::memory_order_relaxed) > 0; }

}  // namespace collscope::tracer::mpi
