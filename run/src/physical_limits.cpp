// Physical limits of a rank file's values: the anchors, then each row against them.
#include <collscope/run/physical_limits.hpp>

#include <fmt/format.h>

namespace collscope::run {
namespace {

using L = PhysicalLimits;

bool in_range(std::optional<std::int64_t> v, std::int64_t lo, std::int64_t hi) { return v && *v >= lo && *v <= hi; }

// A value from the file, quoted in a one-line warning: control characters as '?', at most 40 bytes.
std::string excerpt(std::string text) {
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

}  // namespace

RankAnchors read_anchors(const store::TraceReader& reader, std::vector<std::string>& warnings) {
  namespace key = store::meta_key;
  const std::string& path = reader.path();
  auto integer = [&](std::string_view name) {
    auto v = reader.meta_int(name);
    if (!v)
      if (auto text = reader.meta_value(name))
        warnings.push_back(fmt::format("{}: meta {} = '{}' is not an integer; not used", path, name, excerpt(*text)));
    return v;
  };
  const auto monotonic_start_ns = integer(key::kMonotonicStart);
  const auto monotonic_end_ns = integer(key::kMonotonicEnd);
  const auto realtime_start_ns = integer(key::kRealtimeStart);
  const auto realtime_end_ns = integer(key::kRealtimeEnd);
  RankAnchors a;
  auto drop = [&](std::string_view key, std::int64_t value, std::string_view why) {
    warnings.push_back(fmt::format("{}: meta {} = {}: {}; not used", path, key, value, why));
  };
  if (monotonic_start_ns) {
    if (in_range(monotonic_start_ns, 0, L::kMaxMonotonicNs)) a.monotonic_start_ns = monotonic_start_ns;
    else drop("clock_monotonic_start_ns", *monotonic_start_ns, "outside CLOCK_MONOTONIC's range (0 to 2^60 ns)");
  }
  if (monotonic_end_ns) {
    if (!in_range(monotonic_end_ns, 0, L::kMaxMonotonicNs))
      drop("clock_monotonic_end_ns", *monotonic_end_ns, "outside CLOCK_MONOTONIC's range (0 to 2^60 ns)");
    else if (a.monotonic_start_ns && *monotonic_end_ns < *a.monotonic_start_ns)
      drop("clock_monotonic_end_ns", *monotonic_end_ns, "before clock_monotonic_start_ns");
    else if (a.monotonic_start_ns && *monotonic_end_ns - *a.monotonic_start_ns > L::kMaxSpanNs)
      drop("clock_monotonic_end_ns", *monotonic_end_ns, "more than 52 days after clock_monotonic_start_ns");
    else
      a.monotonic_end_ns = monotonic_end_ns;
  }
  // 0 is how files without a realtime anchor say so (imports); anything else must be a time since 1970.
  if (realtime_start_ns && *realtime_start_ns != 0) {
    if (in_range(realtime_start_ns, 1, L::kMaxRealtimeNs)) a.realtime_start_ns = realtime_start_ns;
    else drop("clock_realtime_start_ns", *realtime_start_ns, "outside CLOCK_REALTIME's range (1970 to 2116)");
  }
  if (realtime_end_ns && *realtime_end_ns != 0) {
    if (in_range(realtime_end_ns, 1, L::kMaxRealtimeNs)) a.realtime_end_ns = realtime_end_ns;
    else drop("clock_realtime_end_ns", *realtime_end_ns, "outside CLOCK_REALTIME's range (1970 to 2116)");
  }
  return a;
}

RowScreen::RowScreen(std::string path, const RankAnchors& anchors) : path_(std::move(path)) {
  if (anchors.monotonic_start_ns) {
    lo_ns_ = std::max<std::int64_t>(0, *anchors.monotonic_start_ns - L::kAnchorSlackNs);
    hi_ns_ = std::min(L::kMaxMonotonicNs, *anchors.monotonic_start_ns + L::kMaxSpanNs);
  }
  if (anchors.monotonic_end_ns) hi_ns_ = std::min(L::kMaxMonotonicNs, *anchors.monotonic_end_ns + L::kAnchorSlackNs);
}

bool RowScreen::span(std::string_view table, std::int64_t row, std::int64_t start_ns, std::int64_t& end_ns) {
  if (start_ns < lo_ns_ || start_ns > hi_ns_) {
    reject(table, row, fmt::format("start_ns {} is outside the file's trace ({} to {} ns)", start_ns, lo_ns_, hi_ns_));
    return false;
  }
  if (end_ns < start_ns - L::kJitterNs) {
    reject(table, row, fmt::format("end_ns {} is before start_ns {}", end_ns, start_ns));
    return false;
  }
  if (end_ns > hi_ns_) {
    reject(table, row, fmt::format("end_ns {} is after the file's trace ended ({} ns)", end_ns, hi_ns_));
    return false;
  }
  if (end_ns < start_ns) end_ns = start_ns;
  if (end_ns - start_ns > L::kMaxSpanNs) {
    reject(table, row, fmt::format("lasts {} ns, longer than any trace (2^52 ns)", end_ns - start_ns));
    return false;
  }
  return true;
}

bool RowScreen::within(std::string_view table, std::int64_t row, std::string_view column, std::int64_t value,
                       std::int64_t max) {
  if (value >= 0 && value <= max) return true;
  reject(table, row, fmt::format("{} {} is outside 0 to {}", column, value, max));
  return false;
}

void RowScreen::reject(std::string_view table, std::int64_t row, std::string why) {
  auto it = rejects_.find(table);
  if (it == rejects_.end()) it = rejects_.emplace(std::string(table), TableRejects{}).first;
  if (it->second.count++ == 0) it->second.first = fmt::format("row {}: {}", row, why);
}

std::int64_t RowScreen::rejected() const {
  std::int64_t n = 0;
  for (const auto& [table, r] : rejects_) n += r.count;
  return n;
}

std::vector<std::string> RowScreen::warnings() const {
  std::vector<std::string> out;
  for (const auto& [table, r] : rejects_)
    out.push_back(fmt::format("{}: {} {}; out of physical range, left out of the figures ({} row{} of {})", path_, table,
                              r.first, r.count, r.count == 1 ? "" : "s", table));
  return out;
}

}  // namespace collscope::run
