#include "core/clock.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace collscope::tracer {

bool g_use_tsc = detect_invariant_tsc();

bool detect_invariant_tsc() {
#ifdef COLLSCOPE_HAVE_TSC
  if (const char* force = std::getenv("COLLSCOPE_CLOCK"); force && std::strcmp(force, "monotonic") == 0) return false;
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}

void TickConverter::calibrate() {
  if (!g_use_tsc) return;
  // Bracket the clock read with two tick reads and take the midpoint: removes most of the read's own cost. The
  // writer runs in the lowest scheduling class, so on a busy node it can be preempted between the reads, and
  // the midpoint of a bracket a timeslice wide is off by milliseconds: every event converted near that pair
  // would move by as much (a call's duration, its order against another rank's). So take the narrowest of a few
  // brackets, and keep it only when it is about as narrow as the narrowest seen (a clean read is ~30-60 ns).
  std::uint64_t best_mid = 0, best_width = ~std::uint64_t{0};
  std::int64_t best_ns = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const std::uint64_t a = ticks();
    const std::int64_t ns = monotonic_ns();
    const std::uint64_t b = ticks();
    if (b - a < best_width) best_width = b - a, best_mid = a + (b - a) / 2, best_ns = ns;
    if (best_width <= 2 * narrowest_bracket_ticks_) break;
  }
  add_read(best_mid, best_ns, best_width);
}

void TickConverter::add_read(std::uint64_t mid, std::int64_t ns, std::uint64_t bracket) {
  narrowest_bracket_ticks_ = std::min(narrowest_bracket_ticks_, bracket);
  // A bracket this wide (over ~5 us at 2-4 GHz, against tens of ns) was preempted: skip it; the next drain
  // calibrates again. The first pair anchors the conversion, so it is kept whatever its width: nothing narrower is
  // known yet. Once a later read shows the anchor was that wide, a clean pair replaces it while it is the only one
  // (a preempted anchor moved every time after it by its error: 20.5 us in a test run at load 5).
  const auto preempted = [&](std::uint64_t width) { return width > 8 * narrowest_bracket_ticks_ + 16'000; };
  if (!pairs_.empty() && preempted(bracket)) return;
  if (pairs_.size() == 1 && preempted(anchor_width_)) pairs_.clear(), segment_ = 0;
  if (pairs_.empty()) anchor_width_ = bracket;
  add_pair(mid, ns);
}

void TickConverter::add_pair(std::uint64_t ticks, std::int64_t ns) {
  const Pair p{ticks, ns};
  if (!pairs_.empty() && p.ticks <= pairs_.back().ticks) return;
  segment_ = 0;  // the pairs change
  // Keep pairs at least ~1 ms apart so the slope between neighbours is not dominated by read jitter.
  if (pairs_.size() >= 2 && p.ns - pairs_[pairs_.size() - 2].ns < 1'000'000) pairs_.back() = p;
  else pairs_.push_back(p);
  if (pairs_.size() >= 2)
    fallback_ns_per_tick_ = double(pairs_.back().ns - pairs_.front().ns) / double(pairs_.back().ticks - pairs_.front().ticks);
}

std::int64_t TickConverter::to_ns(std::uint64_t t) const {
  if (!g_use_tsc) return static_cast<std::int64_t>(t);
  if (pairs_.empty()) return monotonic_ns();
  if (pairs_.size() == 1)
    return pairs_[0].ns + static_cast<std::int64_t>((double(t) - double(pairs_[0].ticks)) * fallback_ns_per_tick_);
  // Segment [i-1, i] containing t; outside the calibrated range extrapolate with the nearest segment.
  if (segment_ == 0 || t < segment_from_ || t >= segment_to_) {
    auto it = std::upper_bound(pairs_.begin(), pairs_.end(), t, [](std::uint64_t v, const Pair& p) { return v < p.ticks; });
    std::size_t i = static_cast<std::size_t>(it - pairs_.begin());
    i = std::clamp<std::size_t>(i, 1, pairs_.size() - 1);
    segment_ = i;
    segment_from_ = i == 1 ? 0 : pairs_[i - 1].ticks;
    segment_to_ = i == pairs_.size() - 1 ? UINT64_MAX : pairs_[i].ticks;
    segment_slope_ = double(pairs_[i].ns - pairs_[i - 1].ns) / double(pairs_[i].ticks - pairs_[i - 1].ticks);
  }
  const Pair& lo = pairs_[segment_ - 1];
  return lo.ns + static_cast<std::int64_t>((double(t) - double(lo.ticks)) * segment_slope_);
}

}  // namespace collscope::tracer
