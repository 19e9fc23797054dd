// A run's point-to-point figures (definitions in run/point_to_point.hpp).
#include <collscope/run/point_to_point.hpp>

#include <algorithm>
#include <bit>
#include <map>

namespace collscope::run {
namespace {

// Length of the union of the spans (raw clock of one rank), ns.
std::int64_t union_ns(std::vector<MpiSpan> spans) {
  std::sort(spans.begin(), spans.end(), [](const MpiSpan& a, const MpiSpan& b) { return a.start_ns < b.start_ns; });
  std::int64_t total = 0, covered_until = INT64_MIN;
  for (const auto& s : spans) {
    if (s.end_ns <= s.start_ns) continue;
    const std::int64_t from = std::max(s.start_ns, covered_until);
    if (s.end_ns > from) total += s.end_ns - from;
    covered_until = std::max(covered_until, s.end_ns);
  }
  return total;
}

std::int64_t size_bucket(std::int64_t bytes) {
  return bytes <= 0 ? 0 : static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(bytes)));
}

}  // namespace

PointToPointSummary summarize_point_to_point(const Run& run, const PointToPointWaits& waits) {
  PointToPointSummary out;
  out.matched_messages = waits.messages;
  out.unmatched_sends = waits.unmatched_sends;
  out.unmatched_receives = waits.unmatched_receives;
  std::map<std::pair<int, int>, MessagePair> pairs;
  std::map<std::int64_t, MessageSizeBin> sizes;
  for (const auto& rank : run.ranks) {
    PointToPointRank r;
    r.world_rank = rank.world_rank;
    r.calls = static_cast<std::int64_t>(rank.point_to_point.size());
    std::vector<MpiSpan> spans;
    spans.reserve(2 * rank.point_to_point.size());
    for (const auto& c : rank.point_to_point) {
      const MpiSpans s = spans_in_mpi(c);
      spans.push_back(s.post);
      spans.push_back(s.completion);
      if (!c.sends() || c.send_peer < 0 || c.status != 0) continue;
      auto& p = pairs[{rank.world_rank, c.send_peer}];
      p.sender = rank.world_rank, p.receiver = c.send_peer;
      ++p.messages, p.bytes += c.send_bytes;
      auto& bin = sizes[size_bucket(c.send_bytes)];
      bin.min_bytes = bin.messages == 0 ? c.send_bytes : std::min(bin.min_bytes, c.send_bytes);
      bin.max_bytes = std::max(bin.max_bytes, c.send_bytes);
      ++bin.messages, bin.bytes += c.send_bytes;
    }
    r.time_ns = union_ns(std::move(spans));
    out.calls += r.calls;
    out.ranks.push_back(r);
  }
  for (const auto& w : waits.waits)
    if (const int k = run.rank_index(w.waiting_rank); k >= 0) out.ranks[static_cast<std::size_t>(k)].wait_ns += w.wait_ns;
  for (const auto& [key, p] : pairs) {
    out.pairs.push_back(p);
    out.messages += p.messages, out.bytes += p.bytes;
    if (const int k = run.rank_index(p.sender); k >= 0) {
      out.ranks[static_cast<std::size_t>(k)].messages_sent += p.messages;
      out.ranks[static_cast<std::size_t>(k)].bytes_sent += p.bytes;
    }
    if (const int k = run.rank_index(p.receiver); k >= 0) {
      out.ranks[static_cast<std::size_t>(k)].messages_received += p.messages;
      out.ranks[static_cast<std::size_t>(k)].bytes_received += p.bytes;
    }
  }
  for (auto& [lo, bin] : sizes) {
    bin.size_bucket_bytes = lo;
    out.sizes.push_back(bin);
  }
  if (!out.ranks.empty()) {
    for (const auto& r : out.ranks) out.mean_time_ns += double(r.time_ns), out.mean_wait_ns += double(r.wait_ns);
    out.mean_time_ns /= double(out.ranks.size());
    out.mean_wait_ns /= double(out.ranks.size());
  }
  return out;
}

}  // namespace collscope::run
