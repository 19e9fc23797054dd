#include <collscope/run/palette.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace collscope::run::palette {

Rgb op_colour(store::Op op) {
  using store::Op;
  switch (op) {
    case Op::Allreduce: return 0x1f77b4;
    case Op::Iallreduce: return 0x17becf;
    case Op::Bcast: return 0xff7f0e;
    case Op::Reduce: return 0x8c564b;
    case Op::Allgather: case Op::Allgatherv: return 0x2ca02c;
    case Op::Gather: case Op::Gatherv: return 0xbcbd22;
    case Op::Scatter: case Op::Scatterv: return 0xe377c2;
    case Op::ReduceScatter: case Op::ReduceScatterBlock: return 0x9467bd;
    case Op::Alltoall: case Op::Alltoallv: return 0xd62728;
    case Op::Barrier: return 0x7f7f7f;
    case Op::Send: case Op::Recv: return 0x5555aa;
    default: return 0x999999;
  }
}

Rgb series_colour(std::size_t k) {
  static constexpr std::array<Rgb, 10> kSeries = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                                  0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  return kSeries[k % kSeries.size()];
}

namespace {

template <std::size_t N>
Rgb ramp(const std::array<Rgb, N>& stops, double fraction) {
  const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
  const double pos = f * double(stops.size() - 1);
  const std::size_t i = std::min(stops.size() - 2, static_cast<std::size_t>(pos));
  const double t = pos - double(i);
  auto channel = [&](int shift) {
    const double a = double((stops[i] >> shift) & 0xff), b = double((stops[i + 1] >> shift) & 0xff);
    return static_cast<Rgb>(std::lround(a + (b - a) * t)) << shift;
  };
  return channel(16) | channel(8) | channel(0);
}

}  // namespace

Rgb lateness_colour(double fraction) {
  // Stops of the ramp: white, pale yellow, orange, red, dark red (a "YlOrRd"-like scale that prints in grey too).
  return ramp(std::array<Rgb, 5>{0xffffff, 0xffeda0, 0xfd8d3c, 0xe31a1c, 0x800026}, fraction);
}

Rgb traffic_colour(double fraction) {
  // White, pale blue, mid blue, dark blue (a "Blues"-like scale): bytes moved, not a fault, so not the red of lateness.
  return ramp(std::array<Rgb, 4>{0xffffff, 0xc6dbef, 0x4292c6, 0x08306b}, fraction);
}

std::string hex(Rgb rgb) { return fmt::format("#{:06x}", rgb & 0xffffff); }

}  // namespace collscope::run::palette
