// The table of pending MPI requests (tracer/src/preload/mpi/requests.cpp) under concurrency: threads post and
// complete requests (reusing handle values, as MPI does) while another thread scans the table as the writer does.
// Every copy the scan keeps must be one event whole, never a mix of two; every completion gets its own event back.
// Built with -fsanitize=thread this is also the check that the seqlock is free of data races.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "mpi/requests.hpp"

using namespace collscope::tracer;

namespace {

// An event whose every numeric field says `v`: a torn copy mixes two values.
Event event_of(std::int64_t v) {
  Event e{};
  e.kind = EventKind::Collective;
  e.t0 = e.t1 = static_cast<std::uint64_t>(v);
  e.comm_slot = static_cast<std::uint32_t>(v);
  e.seq = e.count = e.bytes = v;
  e.sendbuf = e.recvbuf = static_cast<std::uint64_t>(v);
  e.datatype = e.reduce_op = static_cast<std::uint32_t>(v);
  for (auto& a : e.a) a = static_cast<std::uint64_t>(v);
  return e;
}

bool whole(const Event& e) {
  const auto v = e.seq;
  return e.kind == EventKind::Collective && e.t0 == static_cast<std::uint64_t>(v) &&
         e.comm_slot == static_cast<std::uint32_t>(v) && e.count == v && e.bytes == v &&
         e.sendbuf == static_cast<std::uint64_t>(v) && e.recvbuf == static_cast<std::uint64_t>(v) &&
         e.datatype == static_cast<std::uint32_t>(v) && e.a[4] == static_cast<std::uint64_t>(v);
}

}  // namespace

TEST(PendingRequests, ScansNeverSeeATornEventWhileRequestsComeAndGo) {
  constexpr int kThreads = 3, kRounds = 40000;
  std::atomic<bool> done{false};
  std::atomic<long> scanned{0}, torn{0};
  std::thread scanner([&] {
    while (!done.load()) {
      mpi::scan_pending_collectives([&](const Event& e) {
        scanned.fetch_add(1, std::memory_order_relaxed);
        if (!whole(e)) torn.fetch_add(1, std::memory_order_relaxed);
      });
    }
  });
  std::vector<std::thread> posters;
  std::atomic<long> wrong{0};
  for (int t = 0; t < kThreads; ++t)
    posters.emplace_back([&, t] {
      // At least kRounds, and on until the scanner has kept enough copies to have raced with the posting.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      for (int i = 0; i < kRounds || (scanned.load() < 2000 && std::chrono::steady_clock::now() < deadline); ++i) {
        // Four handle values per thread, reused round after round.
        const mpi::RequestKey request = static_cast<mpi::RequestKey>(0x1000 * (t + 1) + 16 * (i % 4));
        const std::int64_t v = static_cast<std::int64_t>(t) * (std::int64_t{1} << 40) + i + 1;
        if (!mpi::pending_add(request, event_of(v))) continue;
        mpi::pending_waited(request, 5);
        Event back;
        if (!mpi::pending_take(request, back) || back.seq != v || back.mpi.wait_calls < 1) wrong.fetch_add(1);
      }
    });
  for (auto& p : posters) p.join();
  done.store(true);
  scanner.join();
  EXPECT_GE(scanned.load(), 2000);
  EXPECT_EQ(torn.load(), 0) << "of " << scanned.load() << " copies";
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_FALSE(mpi::any_pending());
}

TEST(PendingRequests, PersistentRequestsAreFoundUntilFreed) {
  mpi::persistent_add(0x77770, event_of(7));
  Event e;
  ASSERT_TRUE(mpi::persistent_find(0x77770, e));
  EXPECT_EQ(e.seq, 7);
  mpi::persistent_remove(0x77770);
  EXPECT_FALSE(mpi::persistent_find(0x77770, e));
}

TEST(PendingRequests, EveryCallFoundWhereverItWasPlacedAndNoneThatWasNot) {
  using namespace collscope::tracer::mpi;
  // 2 000 calls pending at once (half the table: many are placed away from their bucket), with handle values spaced
  // as allocator addresses are. Each is found, with the waits of the completion calls that did not complete it;
  // values never posted (MPI_REQUEST_NULL, a request already completed) are found nowhere, however far others went.
  constexpr std::uint64_t kBase = 0x7f3a12000040, kStride = 176;
  constexpr int kCalls = 2000;
  int placed = 0;
  for (int i = 0; i < kCalls; ++i) placed += pending_add(kBase + kStride * i, event_of(i + 1));
  ASSERT_EQ(placed, kCalls);
  for (int i = 0; i < kCalls; i += 2) pending_waited(kBase + kStride * i, 5);
  for (int i = 0; i < 100; ++i) {
    Event e;
    EXPECT_FALSE(pending_take(kBase + kStride * kCalls + 16 * i, e));  // never posted
  }
  for (int i = kCalls - 1; i >= 0; --i) {
    Event e;
    ASSERT_TRUE(pending_take(kBase + kStride * i, e)) << i;
    EXPECT_TRUE(whole(e));
    EXPECT_EQ(e.seq, i + 1);
    const Event posted = event_of(i + 1);  // its words already hold wait counts: the table adds to them
    EXPECT_EQ(e.mpi.wait_calls, posted.mpi.wait_calls + (i % 2 ? 0u : 1u));
    EXPECT_EQ(e.mpi.wait_ticks, posted.mpi.wait_ticks + (i % 2 ? 0u : 5u));
    EXPECT_FALSE(pending_take(kBase + kStride * i, e));  // completed: gone
  }
  EXPECT_FALSE(any_pending());
}
