#pragma once
// Runs fn(0 .. n-1) on up to `threads` threads (0 = one per core), this thread included. Items are handed out
// one at a time, so uneven items (rank files of different sizes) balance. fn must not throw.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace collscope::run {

template <typename Fn>
void parallel_for(std::size_t n, Fn&& fn, int threads = 0) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;) fn(i);
  };
  const std::size_t wanted = threads > 0 ? static_cast<std::size_t>(threads) : std::thread::hardware_concurrency();
  const std::size_t count = std::clamp<std::size_t>(wanted, 1, std::max<std::size_t>(n, 1));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace collscope::run
