// The writer converts ticks to CLOCK_MONOTONIC ns through the segment it used last (events come in time order):
// a conversion must not depend on what was converted before it, and must stay on the clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "core/clock.hpp"

using namespace collscope::tracer;

TEST(TickConverter, EachTickUsesItsOwnSegmentWhateverCameBefore) {
  // Segments of very different slopes, so that using a neighbour's shows.
  const bool saved = g_use_tsc;
  g_use_tsc = true;
  TickConverter clock;
  const std::vector<std::pair<std::uint64_t, std::int64_t>> pairs = {
      {1'000'000, 1'000'000}, {2'000'000, 3'000'000}, {3'000'000, 4'200'000}, {4'000'000, 7'000'000}, {5'000'000, 8'500'000}};
  for (const auto& [t, ns] : pairs) clock.add_pair(t, ns);
  // The line through the two pairs around t (the first or last segment outside them).
  auto expected = [&](std::uint64_t t) {
    std::size_t i = 1;
    while (i + 1 < pairs.size() && t >= pairs[i].first) ++i;
    const auto& [t0, n0] = pairs[i - 1];
    const auto& [t1, n1] = pairs[i];
    return n0 + std::int64_t((double(t) - double(t0)) * double(n1 - n0) / double(t1 - t0));
  };
  std::vector<std::uint64_t> ts;
  for (std::uint64_t t = 0; t <= 6'000'000; t += 250'000) ts.push_back(t);
  std::mt19937 rng(11);
  for (int round = 0; round < 10; ++round) {
    std::shuffle(ts.begin(), ts.end(), rng);
    for (std::uint64_t t : ts) ASSERT_EQ(clock.to_ns(t), expected(t)) << "t = " << t << ", round " << round;
  }
  // A new pair changes the last segment: conversions follow at once.
  clock.add_pair(6'000'000, 12'500'000);
  EXPECT_EQ(clock.to_ns(5'500'000), 8'500'000 + 2'000'000);
  g_use_tsc = saved;
}

TEST(TickConverter, SameAnswerInAnyOrderAndOnTheClock) {
  if (!g_use_tsc) GTEST_SKIP() << "no invariant TSC here: ticks are CLOCK_MONOTONIC ns already";
  TickConverter clock;
  struct Sample {
    std::uint64_t ticks;
    std::int64_t ns;
    std::uint64_t bracket = 0;  // ticks between the reads around the clock read: its own uncertainty
  };
  std::vector<Sample> samples;
  for (int i = 0; i < 12; ++i) {  // calibration pairs ~2 ms apart, samples between them
    clock.calibrate();
    for (int k = 0; k < 5; ++k) {
      const std::uint64_t a = ticks();
      const std::int64_t ns = monotonic_ns();
      const std::uint64_t b = ticks();
      samples.push_back({a + (b - a) / 2, ns, b - a});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  clock.calibrate();
  // Outside the calibrated range too: extrapolated with the nearest segment.
  samples.push_back({samples.front().ticks / 2, 0});
  samples.push_back({samples.back().ticks * 2, 0});

  std::vector<std::int64_t> in_order;
  for (const Sample& s : samples) in_order.push_back(clock.to_ns(s.ticks));
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::size_t> order(samples.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) ASSERT_EQ(clock.to_ns(samples[i].ticks), in_order[i]) << "sample " << i;
  }
  // Within 20 us, beyond what the sample's own read was preempted for (its bracket, at most 1 ns a tick on any
  // clock this runs on). A preempted anchor moved every sample after it by its error (20.5 us at load 5) before
  // calibrate() replaced it.
  for (std::size_t i = 0; i + 2 < samples.size(); ++i)
    EXPECT_NEAR(double(in_order[i]), double(samples[i].ns), 20'000.0 + double(samples[i].bracket)) << "sample " << i;
}

// A first calibration read preempted for 40 us (its midpoint 20 us off) anchors the conversion until a clean read
// shows it was wide: then the clean one replaces it, and times convert on the clock again. A wide read after that
// is skipped.
TEST(TickConverter, PreemptedFirstReadIsReplacedByTheNextCleanOne) {
  const bool saved = g_use_tsc;
  g_use_tsc = true;
  TickConverter clock;  // 1 tick = 1 ns below, the clean reads 50 ticks wide
  clock.add_read(1'000'000, 1'000'000 - 20'000, 40'000);    // preempted: its ns read 20 us before the midpoint
  clock.add_read(3'000'000, 3'000'000, 50);                 // clean: the anchor is replaced
  clock.add_read(5'000'000, 5'000'000, 50);
  clock.add_read(7'000'000, 7'000'000 + 30'000, 60'000);   // preempted again: skipped
  clock.add_read(9'000'000, 9'000'000, 50);
  for (std::uint64_t t : {1'000'000ull, 2'000'000ull, 4'000'000ull, 7'000'000ull, 8'500'000ull})
    EXPECT_EQ(clock.to_ns(t), static_cast<std::int64_t>(t)) << "t = " << t;
  g_use_tsc = saved;
}
