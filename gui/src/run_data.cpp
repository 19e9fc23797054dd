#include <collscope/gui/run_data.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace collscope::gui {

std::size_t RunData::memory_bytes() const {
  std::size_t bytes = sizeof(*this);
  bytes += collectives.capacity() * sizeof(CollectiveEvent) + collectives_max_end.capacity() * sizeof(std::int64_t);
  bytes += nvtx.capacity() * sizeof(SpanEvent) + nvtx_max_end.capacity() * sizeof(std::int64_t);
  bytes += gpu.capacity() * sizeof(SpanEvent) + gpu_max_end.capacity() * sizeof(std::int64_t);
  bytes += instances.capacity() * sizeof(CollectiveInstance) + instance_members.capacity() * sizeof(std::uint32_t);
  bytes += lanes.capacity() * sizeof(Lane) + steps.capacity() * sizeof(Step);
  for (const auto& n : names) bytes += sizeof(n) + n.capacity();
  for (const auto& l : lanes) bytes += l.label.capacity();
  return bytes;
}

std::uint32_t RunData::first_ending_after(const Lane& lane, std::int64_t t) const {
  return first_ending_after(lane, t, lane.begin, lane.end);
}

std::uint32_t RunData::first_ending_after(const Lane& lane, std::int64_t t, std::uint32_t from, std::uint32_t to) const {
  const auto& ends = max_end(lane.kind);
  from = std::max(from, lane.begin);
  to = std::min(to, lane.end);
  if (from >= to) return to;
  auto it = std::upper_bound(ends.begin() + from, ends.begin() + to, t);
  return static_cast<std::uint32_t>(it - ends.begin());
}

std::uint32_t RunData::first_starting_at(const Lane& lane, std::int64_t t) const {
  std::uint32_t lo = lane.begin, hi = lane.end;
  while (lo < hi) {
    std::uint32_t mid = lo + (hi - lo) / 2;
    if (start_of(lane.kind, mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

std::uint32_t RunData::first_starting_at_from(const Lane& lane, std::int64_t t, std::uint32_t from) const {
  std::uint32_t lo = std::max(from, lane.begin);
  if (lo >= lane.end || start_of(lane.kind, lo) >= t) return lo;
  std::uint32_t step = 1, hi = lo + 1;  // invariant: start(lo) < t
  while (hi < lane.end && start_of(lane.kind, hi) < t) {
    lo = hi;
    step *= 2;
    hi = lo + step > lane.end ? lane.end : lo + step;
  }
  ++lo;  // first candidate
  while (lo < hi) {
    std::uint32_t mid = lo + (hi - lo) / 2;
    if (start_of(lane.kind, mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

std::uint32_t RunData::member_on_rank(const CollectiveInstance& inst, int rank_index) const {
  for (std::uint32_t m = 0; m < inst.member_count; ++m) {
    std::uint32_t e = instance_members[inst.members_begin + m];
    if (collectives[e].rank_index == rank_index) return e;
  }
  return kNoInstance;
}

int RunData::rank_index_of_world(int world_rank) const {
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].world_rank == world_rank) return static_cast<int>(i);
  return -1;
}

}  // namespace collscope::gui
