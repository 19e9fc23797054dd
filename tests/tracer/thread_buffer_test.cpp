// The per-thread chunked buffer and its call-in-flight seqlock (tracer/src/preload/core/thread_buffer.hpp) under
// concurrency: the owning thread records while another thread drains and reads the call in flight, as the writer
// thread does. Every event recorded must be drained, once, whole and in order (nothing is dropped), emptied chunks
// must be reused, and every snapshot of the call in flight must be one call whole. Built with -fsanitize=thread (scripts/sanitize.sh)
// this is also the check that the ring and the seqlock are free of data races.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/thread_buffer.hpp"

using namespace collscope::tracer;

namespace {

void fill(Event& e, std::int64_t v) {
  e = Event{};
  e.kind = EventKind::Collective;
  e.t0 = e.t1 = static_cast<std::uint64_t>(v);
  e.seq = e.count = e.bytes = v;
  e.sendbuf = e.recvbuf = static_cast<std::uint64_t>(v);
  for (auto& a : e.a) a = static_cast<std::uint64_t>(v);
}

bool whole(const Event& e) {
  const auto v = e.seq;
  return e.kind == EventKind::Collective && e.t0 == static_cast<std::uint64_t>(v) && e.count == v && e.bytes == v &&
         e.recvbuf == static_cast<std::uint64_t>(v) && e.a[4] == static_cast<std::uint64_t>(v);
}

}  // namespace

TEST(ThreadBuffer, DrainSeesEveryRecordedEventWholeAndInOrder) {
  constexpr std::int64_t kEvents = 400000;
  ThreadBuffer ring(1, 1, "producer");
  std::atomic<bool> done{false};
  std::int64_t drained = 0, last = 0, torn = 0, out_of_order = 0;
  std::atomic<std::int64_t> drained_count{0};
  std::thread writer([&] {
    auto take = [&](const Event& e) {
      ++drained;
      drained_count.fetch_add(1, std::memory_order_relaxed);
      if (!whole(e)) ++torn;
      if (e.seq <= last) ++out_of_order;
      last = e.seq;
    };
    while (!done.load(std::memory_order_acquire)) {
      ring.drain(take);
      std::this_thread::yield();
    }
    ring.drain(take);
  });
  // At least kEvents, and on until the writer has drained many chunks while the thread recorded (on a busy machine
  // it may not run at first): chunks then pass from the writer back to the thread while both run.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  constexpr std::int64_t kChunks = 64;
  std::int64_t recorded = 0;
  for (std::int64_t v = 1;
       v <= kEvents || (drained_count.load() < kChunks * kChunkEvents && std::chrono::steady_clock::now() < deadline);
       ++v) {
    ++recorded;
    Event* slot = ring.reserve();
    ASSERT_NE(slot, nullptr) << "event " << v;
    fill(*slot, v);
    ring.publish();
  }
  done.store(true, std::memory_order_release);
  writer.join();
  EXPECT_EQ(torn, 0);
  EXPECT_EQ(out_of_order, 0);
  EXPECT_EQ(ring.dropped(), 0u);
  EXPECT_EQ(drained, recorded);
  EXPECT_GE(drained, kChunks * kChunkEvents);  // the writer drained while the thread recorded
  EXPECT_TRUE(ring.empty());
}

TEST(ThreadBuffer, EmptiedChunksAreReusedNotAllocatedAgain) {
  // Three chunks' worth of events, drained, three times over: the first round takes three chunks; later rounds
  // reuse the emptied ones and need one more (the last chunk of a round stays the thread's current one until it
  // moves on), never more.
  ThreadBuffer buffer(1, 1, "rounds");
  std::int64_t v = 0, drained = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::uint32_t i = 0; i < 3 * kChunkEvents; ++i) {
      Event* slot = buffer.reserve();
      ASSERT_NE(slot, nullptr);
      fill(*slot, ++v);
      buffer.publish();
    }
    drained += static_cast<std::int64_t>(buffer.drain([&](const Event& e) { EXPECT_TRUE(whole(e)); }));
    EXPECT_EQ(buffer.chunks(), round == 0 ? 3u : 4u) << "round " << round;
  }
  EXPECT_EQ(drained, v);
  EXPECT_TRUE(buffer.empty());
}

TEST(ThreadBuffer, AnExitedThreadsChunksGoToTheNextThread) {
  // A thread records two chunks' worth and exits (retire(), as its pthread key's destructor does) while the
  // consumer drains; once all is drained its chunks are reclaimed, and the next thread records as much without
  // a chunk more from the process. Not before: a live thread's or an undrained buffer's chunks are never taken.
  const auto record = [](ThreadBuffer& buffer, std::int64_t events) {
    for (std::int64_t v = 1; v <= events; ++v) {
      Event* slot = buffer.reserve();
      ASSERT_NE(slot, nullptr);
      fill(*slot, v);
      buffer.publish();
    }
  };
  constexpr std::int64_t kEvents = 2 * kChunkEvents - 7;
  ThreadBuffer first(1, 1, "first");
  std::atomic<bool> exited{false};
  std::int64_t drained = 0;
  std::thread job([&] {
    record(first, kEvents);
    first.retire();
    exited.store(true, std::memory_order_release);
  });
  while (!exited.load(std::memory_order_acquire)) {
    drained += static_cast<std::int64_t>(first.drain([](const Event& e) { EXPECT_TRUE(whole(e)); }));
    std::this_thread::yield();
  }
  job.join();
  EXPECT_EQ(first.chunks(), 2u);
  if (drained < kEvents) {
    EXPECT_FALSE(first.reclaim_if_retired());  // events still to drain
    drained += static_cast<std::int64_t>(first.drain([](const Event& e) { EXPECT_TRUE(whole(e)); }));
  }
  EXPECT_EQ(drained, kEvents);
  EXPECT_TRUE(first.reclaim_if_retired());
  EXPECT_FALSE(first.reclaim_if_retired());  // once
  EXPECT_EQ(first.chunks(), 0u);

  const std::uint64_t allocated = buffer_bytes_allocated();
  ThreadBuffer second(2, 2, "second");
  std::thread([&] { record(second, kEvents); }).join();
  EXPECT_EQ(second.chunks(), 2u);
  EXPECT_EQ(buffer_bytes_allocated(), allocated);  // both came from the first thread
  EXPECT_EQ(second.drain([](const Event& e) { EXPECT_TRUE(whole(e)); }), std::uint64_t(kEvents));
  EXPECT_FALSE(second.reclaim_if_retired());  // not retired
}

TEST(ThreadBuffer, ThreadsThatComeAndGoTakeTheRecordsOfThoseGone) {
  // 300 threads one after the other, as in a job that starts a thread per task: each registered by its first event
  // and retired at exit by its pthread key, drained, reclaimed and released between them as the writer does. The
  // registry grows by the threads alive at once, not by every thread ever started (each record, ~0.5 KiB, is
  // visited by every writer pass); every thread gets an index of its own, and its events carry it.
  const auto records = [] {
    std::size_t n = 0;
    for (ThreadBuffer* tb = thread_buffers(); tb; tb = tb->next) ++n;
    return n;
  };
  const std::size_t before = records();
  std::int64_t drained = 0;
  const auto writer_pass = [&] {
    std::vector<ThreadBuffer*> reclaimed;
    for (ThreadBuffer* tb = thread_buffers(); tb; tb = tb->next) {
      if (!tb->live()) continue;
      drained += static_cast<std::int64_t>(tb->drain([&](const Event& e) {
        EXPECT_TRUE(whole(e));
        EXPECT_EQ(e.thread, tb->index());
      }));
      if (tb->reclaim_if_retired()) reclaimed.push_back(tb);
    }
    for (ThreadBuffer* tb : reclaimed) release_for_reuse(tb);
  };
  constexpr int kThreads = 300, kEvents = 40;
  // A thread that records kEvents events and exits; its index.
  const auto one_thread = [] {
    std::uint32_t index = 0;
    std::thread([&] {
      ThreadBuffer& tb = this_thread_buffer();
      index = tb.index();
      for (std::int64_t v = 1; v <= kEvents; ++v) {
        Event* slot = tb.reserve();
        ASSERT_NE(slot, nullptr);
        fill(*slot, v);
        slot->thread = tb.index();
        tb.publish();
      }
    }).join();
    return index;
  };
  std::set<std::uint32_t> indices;
  for (int k = 0; k < kThreads; ++k) {
    const std::uint32_t index = one_thread();
    EXPECT_TRUE(indices.insert(index).second) << index;
    writer_pass();
  }
  EXPECT_EQ(drained, std::int64_t{kThreads} * kEvents);
  EXPECT_LE(records(), before + 1);

  // The same with the writer's passes on a thread of their own, as in a job: a new thread takes a record while a
  // pass may be walking the list (it skips a record that is not live). ThreadSanitizer checks the hand-over (CI).
  std::mutex drain_lock;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done.load(std::memory_order_acquire)) {
      {
        std::lock_guard lock(drain_lock);
        writer_pass();
      }
      std::this_thread::yield();
    }
  });
  for (int k = 0; k < kThreads; ++k) one_thread();
  done.store(true, std::memory_order_release);
  writer.join();
  writer_pass();
  EXPECT_EQ(drained, 2 * std::int64_t{kThreads} * kEvents);  // every event once, under its own thread's index
}

TEST(ThreadBuffer, CallInFlightSnapshotIsOneCallWhole) {
  ThreadBuffer ring(1, 1, "caller");
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> seen{0}, torn{0};
  std::thread writer([&] {
    while (!done.load(std::memory_order_acquire)) {
      ThreadBuffer::CallSnapshot c;
      if (!ring.call_in_flight(c)) continue;
      seen.fetch_add(1, std::memory_order_relaxed);
      // Every word of call i says i (since = i + 1): a torn snapshot mixes two calls.
      const auto i = static_cast<std::int64_t>(c.since) - 1;
      if (c.seq != i || c.count != i || c.bytes != 2 * i || c.comm_slot != static_cast<std::uint32_t>(i % 1000) ||
          c.datatype != static_cast<std::uint32_t>(i % 7) || c.root != static_cast<std::int32_t>(i % 5))
        torn.fetch_add(1, std::memory_order_relaxed);
    }
  });
  // The writer sees a call in flight only when it runs while the caller is inside one: on a loaded 2-core host
  // the two threads can share one CPU for seconds, so the loop goes on until 2000 snapshots were taken, with a
  // deadline (60 s) that only a writer never scheduled at all reaches.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (std::int64_t i = 1; i <= 200000 || (seen.load() < 2000 && std::chrono::steady_clock::now() < deadline); ++i) {
    ring.enter_call(static_cast<std::uint64_t>(i + 1), static_cast<std::uint32_t>(i % 1000), 1,
                    static_cast<std::int32_t>(i % 5), i, i, 2 * i, static_cast<std::uint32_t>(i % 7), 0);
    ring.enter_call(0, 0, 0, 0, 0, 0, 0, 0, 0);  // a nested traced call keeps the outermost
    ring.leave_call();
    ring.leave_call();
  }
  done.store(true, std::memory_order_release);
  writer.join();
  EXPECT_GE(seen.load(), 2000);
  EXPECT_EQ(torn.load(), 0) << "of " << seen.load() << " snapshots";
  ThreadBuffer::CallSnapshot c;
  EXPECT_FALSE(ring.call_in_flight(c));
}
