// Time inside MPI and point-to-point wait states (definitions in run/wait_states.hpp).
#include <collscope/run/wait_states.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace collscope::run {

MpiSpans spans_in_mpi(std::int64_t start_ns, std::int64_t end_ns, const NonblockingTimes* nonblocking) {
  MpiSpans s;
  if (!nonblocking || nonblocking->post_end_ns == 0) {
    s.post = {start_ns, end_ns};
    s.completion = {end_ns, end_ns};
    return s;
  }
  s.nonblocking = true;
  const std::int64_t post_end = std::clamp(nonblocking->post_end_ns, start_ns, end_ns);
  s.post = {start_ns, post_end};
  s.completion = {std::max(post_end, end_ns - nonblocking->wait_ns), end_ns};
  return s;
}

std::optional<MpiSpans> spans_in_mpi(const RankTrace& rank, std::size_t call) {
  const auto& c = rank.collectives[call];
  const NonblockingTimes* times = rank.nonblocking_times(call);
  if (!times && is_nonblocking(c.op)) return std::nullopt;
  return spans_in_mpi(c.start_ns, c.end_ns, times);
}

std::vector<MpiPiece> mpi_pieces(const RankTrace& rank, bool point_to_point) {
  std::vector<MpiPiece> out;
  out.reserve(rank.collectives.size() + (point_to_point ? rank.point_to_point.size() : 0));
  auto add = [&](const MpiSpans& s, std::int32_t call) {
    out.push_back({s.post, call, false});
    if (s.completion.length() > 0) out.push_back({s.completion, call, true});
  };
  for (std::size_t j = 0; j < rank.collectives.size(); ++j)
    if (auto s = spans_in_mpi(rank, j)) add(*s, static_cast<std::int32_t>(j));
  if (point_to_point)
    for (const auto& c : rank.point_to_point) add(spans_in_mpi(c), -1);
  std::stable_sort(out.begin(), out.end(), [](const MpiPiece& a, const MpiPiece& b) { return a.span.start_ns < b.span.start_ns; });
  return out;
}

MpiSpan blocking_span(const PointToPointCall& c) {
  const MpiSpans s = spans_in_mpi(c);
  return s.nonblocking ? s.completion : s.post;
}

std::string_view wait_state_name(WaitState s) {
  return s == WaitState::LateSender ? "late sender" : "late receiver";
}

namespace {

// Sends that wait for their receive when it is late (see the header): blocking standard and synchronous sends,
// the send side of a blocking MPI_Sendrecv (its wait is shared with its own receive's, see shares_of_union),
// non-blocking synchronous ones; not buffered (never wait), ready (the receive must be there already), nor
// MPI_Isend / MPI_Isendrecv, whose completion an MPI_Waitall shares with receives that have their own wait state
// (an eager send done long before would be blamed on its receiver).
bool can_wait_for_receiver(const PointToPointCall& c) {
  using store::Op;
  return c.op == Op::Send || c.op == Op::Ssend || c.op == Op::Issend || c.op == Op::SsendInit ||
         c.op == Op::Sendrecv || c.op == Op::SendrecvReplace;
}

// A wait before the waiting rank's union is shared out: [start, end) on the aligned clock.
struct RawWait {
  std::int64_t start_ns, end_ns;
  std::int32_t waiting_rank, waited_for;
  WaitState state;
  std::int64_t late_action_ns;  // when the rank waited for acted (posted its send or its receive)
  std::int32_t message;         // index into MatchedMessages::messages
};

// Each rank's raw waits → shares of its union: in each instant, the ranks it waited for share it equally.
std::vector<std::int64_t> shares_of_union(const std::vector<RawWait>& raw, const std::vector<std::size_t>& of_rank) {
  std::vector<std::tuple<std::int64_t, int, std::size_t>> events;  // (time, +1 start / −1 end, index into of_rank)
  for (std::size_t k = 0; k < of_rank.size(); ++k) {
    events.emplace_back(raw[of_rank[k]].start_ns, 1, k);
    events.emplace_back(raw[of_rank[k]].end_ns, -1, k);
  }
  std::sort(events.begin(), events.end());
  std::vector<double> share(of_rank.size(), 0);
  std::set<std::size_t> active;
  std::int64_t last = events.empty() ? 0 : std::get<0>(events.front());
  for (const auto& [t, kind, k] : events) {
    if (!active.empty() && t > last)
      for (std::size_t a : active) share[a] += double(t - last) / double(active.size());
    last = t;
    if (kind > 0) active.insert(k);
    else active.erase(k);
  }
  std::vector<std::int64_t> out(share.size());
  for (std::size_t k = 0; k < share.size(); ++k) out[k] = static_cast<std::int64_t>(share[k] + 0.5);
  return out;
}

}  // namespace

PointToPointWaits measure_point_to_point_waits(const Run& run, const ClockAlignment& clocks) {
  return measure_point_to_point_waits(run, clocks, match_messages(run));
}

PointToPointWaits measure_point_to_point_waits(const Run& run, const ClockAlignment& clocks,
                                               const MatchedMessages& matched) {
  PointToPointWaits out;
  out.messages = static_cast<std::int64_t>(matched.messages.size());
  out.unmatched_sends = matched.unmatched_sends;
  out.unmatched_receives = matched.unmatched_receives;
  out.unknown_source = matched.unknown_source;
  std::vector<RawWait> raw;
  // Per (acting rank, partner): the times it acted towards the partner (posted a send to it, a receive from it),
  // to find the previous action before each late one (propagation).
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::int64_t>> actions;
  for (std::size_t mi = 0; mi < matched.messages.size(); ++mi) {
    const auto& m = matched.messages[mi];
    const auto message = static_cast<std::int32_t>(mi);
    const auto& sender = run.ranks[m.send_rank];
    const auto& receiver = run.ranks[m.recv_rank];
    const auto& s = sender.point_to_point[m.send_call];
    const auto& r = receiver.point_to_point[m.recv_call];
    const std::int64_t send_post = clocks.aligned(m.send_rank, s.start_ns);
    const std::int64_t recv_post = clocks.aligned(m.recv_rank, r.start_ns);
    actions[{sender.world_rank, receiver.world_rank}].push_back(send_post);
    actions[{receiver.world_rank, sender.world_rank}].push_back(recv_post);
    if (s.status != 0 || r.status != 0) continue;
    const MpiSpan rb = blocking_span(r);
    const std::int64_t rb_start = clocks.aligned(m.recv_rank, rb.start_ns);
    if (rb.length() > 0 && send_post > rb_start)
      raw.push_back({rb_start, rb_start + std::min(send_post - rb_start, rb.length()), receiver.world_rank,
                     sender.world_rank, WaitState::LateSender, send_post, message});
    if (!can_wait_for_receiver(s)) continue;
    const MpiSpan sb = blocking_span(s);
    const std::int64_t sb_start = clocks.aligned(m.send_rank, sb.start_ns), sb_end = sb_start + sb.length();
    if (sb.length() > 0 && recv_post > sb_start && sb_end > recv_post)
      raw.push_back({sb_start, sb_start + std::min(recv_post - sb_start, sb.length()), sender.world_rank,
                     receiver.world_rank, WaitState::LateReceiver, recv_post, message});
  }
  for (auto& [key, times] : actions) std::sort(times.begin(), times.end());
  // Shares of each rank's union.
  std::map<std::int32_t, std::vector<std::size_t>> by_rank;
  for (std::size_t k = 0; k < raw.size(); ++k) by_rank[raw[k].waiting_rank].push_back(k);
  std::vector<std::int64_t> share(raw.size(), 0);
  for (const auto& [rank, list] : by_rank) {
    const auto s = shares_of_union(raw, list);
    for (std::size_t k = 0; k < list.size(); ++k) share[list[k]] = s[k];
  }
  // Per waiting rank: its waits by end, with prefix sums, to ask how long a rank waited in a window.
  std::map<std::int32_t, std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> waited;  // ends, prefix sums
  for (const auto& [rank, list] : by_rank) {
    std::vector<std::pair<std::int64_t, std::int64_t>> ends;
    for (std::size_t k : list) ends.emplace_back(raw[k].end_ns, share[k]);
    std::sort(ends.begin(), ends.end());
    auto& [e, sums] = waited[rank];
    sums.push_back(0);
    for (const auto& [t, w] : ends) e.push_back(t), sums.push_back(sums.back() + w);
  }
  auto waited_between = [&](std::int32_t rank, std::int64_t after, std::int64_t until) -> std::int64_t {
    auto it = waited.find(rank);
    if (it == waited.end()) return 0;
    const auto& [e, sums] = it->second;
    const auto lo = std::upper_bound(e.begin(), e.end(), after) - e.begin();
    const auto hi = std::upper_bound(e.begin(), e.end(), until) - e.begin();
    return hi > lo ? sums[hi] - sums[lo] : 0;
  };
  for (std::size_t k = 0; k < raw.size(); ++k) {
    if (share[k] <= 0) continue;
    const auto& w = raw[k];
    const auto& times = actions[{w.waited_for, w.waiting_rank}];
    const auto it = std::lower_bound(times.begin(), times.end(), w.late_action_ns);
    const std::int64_t previous = it == times.begin() ? INT64_MIN : *(it - 1);
    const bool propagated = 2 * waited_between(w.waited_for, previous, w.late_action_ns) >= share[k];
    out.waits.push_back({.state = w.state, .waiting_rank = w.waiting_rank, .waited_for = w.waited_for,
                         .message = w.message, .start_ns = w.start_ns, .end_ns = w.end_ns, .wait_ns = share[k],
                         .propagated = propagated});
  }
  std::sort(out.waits.begin(), out.waits.end(), [](const MessageWait& a, const MessageWait& b) {
    return std::tie(a.waiting_rank, a.end_ns) < std::tie(b.waiting_rank, b.end_ns);
  });
  return out;
}

}  // namespace collscope::run
