// Matching point-to-point sends with their receives across ranks, in MPI's non-overtaking order.
#include <collscope/run/matching.hpp>

#include <algorithm>
#include <map>
#include <tuple>

namespace collscope::run {

bool is_message_receive(store::Op op) {
  using store::Op;
  return op != Op::Probe && op != Op::Iprobe && op != Op::Mprobe && op != Op::Improbe;
}

MatchedMessages match_messages(const Run& run) {
  MatchedMessages out;
  // (communicator, sender world rank, receiver world rank, tag) → (posting order, rank index, call index)
  using Channel = std::tuple<std::int32_t, std::int32_t, std::int32_t, std::int32_t>;
  using Posted = std::tuple<std::int32_t, std::int32_t, std::int32_t>;
  std::map<Channel, std::pair<std::vector<Posted>, std::vector<Posted>>> channels;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& rank = run.ranks[r];
    for (std::size_t j = 0; j < rank.point_to_point.size(); ++j) {
      const auto& c = rank.point_to_point[j];
      const Posted posted{c.seq, static_cast<std::int32_t>(r), static_cast<std::int32_t>(j)};
      if (c.sends() && c.send_peer >= 0)
        channels[{c.comm, rank.world_rank, c.send_peer, c.send_tag}].first.push_back(posted);
      if (c.receives() && is_message_receive(c.op)) {
        if (c.recv_peer == store::kPeerUnknown) ++out.unknown_source;
        else if (c.recv_peer >= 0) channels[{c.comm, c.recv_peer, rank.world_rank, c.recv_tag}].second.push_back(posted);
      }
    }
  }
  for (auto& [channel, sides] : channels) {
    auto& [sends, receives] = sides;
    std::sort(sends.begin(), sends.end());
    std::sort(receives.begin(), receives.end());
    const std::size_t n = std::min(sends.size(), receives.size());
    for (std::size_t k = 0; k < n; ++k)
      out.messages.push_back({std::get<1>(sends[k]), std::get<2>(sends[k]), std::get<1>(receives[k]), std::get<2>(receives[k])});
    out.unmatched_sends += static_cast<std::int64_t>(sends.size() - n);
    out.unmatched_receives += static_cast<std::int64_t>(receives.size() - n);
  }
  return out;
}

}  // namespace collscope::run
