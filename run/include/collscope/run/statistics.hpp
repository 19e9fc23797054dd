#pragma once
// Robust statistics shared by every component that summarises a run (one definition of each).
#include <algorithm>
#include <vector>

namespace collscope::run {

// The median; the mean of the two middle values for an even count; T{} for none.
template <typename T>
T median_of(std::vector<T> v) {
  if (v.empty()) return T{};
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  auto lower = *std::max_element(v.begin(), mid);
  return static_cast<T>((lower + *mid) / 2);
}

// "Best seen" everywhere (reports, findings, compare): the 95th percentile of a sample (index ⌊0.95 n⌋ of the
// sorted values), the best it reaches without one outlier. T{} for none.
template <typename T>
T p95_of_sorted(const std::vector<T>& sorted) {
  return sorted.empty() ? T{} : sorted[sorted.size() * 95 / 100];
}

}  // namespace collscope::run
