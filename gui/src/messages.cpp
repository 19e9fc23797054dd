// The viewer's index over run/'s matched messages and their wait states (see messages.hpp).
#include <collscope/gui/messages.hpp>

#include <algorithm>
#include <limits>
#include <numeric>

namespace collscope::gui {

MessageIndex::MessageIndex(std::shared_ptr<const run::Run> run, const run::ClockAlignment& clocks,
                           std::vector<std::size_t> first_call)
    : run_(std::move(run)), first_call_(std::move(first_call)) {
  matched_ = run::match_messages(*run_);
  waits_ = run::measure_point_to_point_waits(*run_, clocks, matched_);
  build(clocks);
}

MessageIndex::MessageIndex(std::shared_ptr<const run::Run> run, const run::ClockAlignment& clocks,
                           std::vector<std::size_t> first_call, run::MatchedMessages matched,
                           run::PointToPointWaits waits, std::vector<MatrixCell> whole_run_matrix)
    : run_(std::move(run)),
      first_call_(std::move(first_call)),
      matched_(std::move(matched)),
      waits_(std::move(waits)),
      matrix_(std::move(whole_run_matrix)) {
  build(clocks, false);
}

void MessageIndex::build(const run::ClockAlignment& clocks, bool with_matrix) {
  const auto& ranks = run_->ranks;
  shift_.resize(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) shift_[r] = clocks.offset_ns[r] - clocks.origin_ns;
  std::sort(waits_.waits.begin(), waits_.waits.end(),
            [](const run::MessageWait& a, const run::MessageWait& b) { return a.message < b.message; });
  const std::size_t n = matched_.messages.size();
  // Lines by their earlier end, with the prefix maximum of the later one.
  std::vector<std::pair<std::int64_t, std::int64_t>> ends(n);
  for (std::size_t m = 0; m < n; ++m) {
    const Message msg = message(static_cast<std::uint32_t>(m));
    ends[m] = std::minmax(msg.send_ns, msg.recv_ns);
  }
  line_order_.resize(n);
  std::iota(line_order_.begin(), line_order_.end(), 0u);
  std::stable_sort(line_order_.begin(), line_order_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return ends[a].first < ends[b].first; });
  line_start_.resize(n);
  line_end_.resize(n);
  line_max_end_.resize(n);
  std::int64_t max_end = std::numeric_limits<std::int64_t>::min();
  for (std::size_t p = 0; p < n; ++p) {
    const auto& [a, b] = ends[line_order_[p]];
    line_start_[p] = a;
    line_end_[p] = b;
    line_max_end_[p] = max_end = std::max(max_end, b);
  }

  by_send_.resize(n);
  std::iota(by_send_.begin(), by_send_.end(), 0u);
  by_recv_ = by_send_;
  const auto& msgs = matched_.messages;
  std::stable_sort(by_send_.begin(), by_send_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return send_id(msgs[a]) < send_id(msgs[b]); });
  std::stable_sort(by_recv_.begin(), by_recv_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return recv_id(msgs[a]) < recv_id(msgs[b]); });

  // The matrix: one cell per (sender, receiver) pair that exchanged messages.
  if (!with_matrix) return;
  std::vector<std::uint32_t> by_pair(n);
  std::iota(by_pair.begin(), by_pair.end(), 0u);
  auto pair_of = [&](std::uint32_t m) {
    return std::pair{ranks[msgs[m].send_rank].world_rank, ranks[msgs[m].recv_rank].world_rank};
  };
  std::stable_sort(by_pair.begin(), by_pair.end(), [&](std::uint32_t a, std::uint32_t b) { return pair_of(a) < pair_of(b); });
  for (const std::uint32_t m : by_pair) {
    const auto [s, r] = pair_of(m);
    if (matrix_.empty() || matrix_.back().sender != s || matrix_.back().receiver != r)
      matrix_.push_back({.sender = s, .receiver = r});
    auto& cell = matrix_.back();
    const Message msg = message(m);
    ++cell.messages;
    cell.bytes += msg.bytes;
    cell.time_ns += std::max<std::int64_t>(0, msg.recv_ns - msg.send_ns);
    if (msg.wait) cell.wait_ns += msg.wait->wait_ns;
  }
}

Message MessageIndex::message(std::uint32_t m) const {
  const auto& mm = matched_.messages[m];
  const auto& s = run_->ranks[mm.send_rank].point_to_point[mm.send_call];
  const auto& r = run_->ranks[mm.recv_rank].point_to_point[mm.recv_call];
  Message out;
  out.send = send_id(mm);
  out.recv = recv_id(mm);
  out.send_rank = mm.send_rank;
  out.recv_rank = mm.recv_rank;
  out.send_ns = s.start_ns + shift_[mm.send_rank];
  out.recv_ns = r.end_ns + shift_[mm.recv_rank];
  out.bytes = s.send_bytes;
  out.tag = s.send_tag;
  out.comm = s.comm;
  out.wait = wait_of(m);
  return out;
}

const run::MessageWait* MessageIndex::wait_of(std::uint32_t m) const {
  const auto& w = waits_.waits;
  auto it = std::lower_bound(w.begin(), w.end(), m, [](const run::MessageWait& a, std::uint32_t v) {
    return static_cast<std::uint32_t>(a.message) < v;
  });
  return it != w.end() && static_cast<std::uint32_t>(it->message) == m ? &*it : nullptr;
}

std::pair<std::uint32_t, std::uint32_t> MessageIndex::lines_in(std::int64_t t0, std::int64_t t1) const {
  const auto first = std::lower_bound(line_max_end_.begin(), line_max_end_.end(), t0) - line_max_end_.begin();
  const auto last = std::upper_bound(line_start_.begin(), line_start_.end(), t1) - line_start_.begin();
  return {static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(std::max(first, last))};
}

std::vector<std::uint32_t> MessageIndex::messages_of_call(std::uint32_t call) const {
  std::vector<std::uint32_t> out;
  const auto& msgs = matched_.messages;
  // by_send_ and by_recv_ hold message indices ordered by the id of their send and receive call.
  auto lower = [&](const std::vector<std::uint32_t>& by, auto id_of) {
    auto lo = std::partition_point(by.begin(), by.end(), [&](std::uint32_t m) { return id_of(msgs[m]) < call; });
    for (; lo != by.end() && id_of(msgs[*lo]) == call; ++lo) out.push_back(*lo);
  };
  lower(by_send_, [&](const run::MatchedMessage& m) { return send_id(m); });
  lower(by_recv_, [&](const run::MatchedMessage& m) { return recv_id(m); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint32_t> MessageIndex::messages_between(std::int32_t sender, std::int32_t receiver) const {
  std::vector<std::uint32_t> out;
  const int s = run_->rank_index(sender), r = run_->rank_index(receiver);
  if (s < 0 || r < 0) return out;
  const auto& msgs = matched_.messages;
  for (std::uint32_t m = 0; m < msgs.size(); ++m)
    if (msgs[m].send_rank == s && msgs[m].recv_rank == r) out.push_back(m);
  return out;
}

const MatrixCell* MessageIndex::cell(std::int32_t sender, std::int32_t receiver) const {
  auto it = std::lower_bound(matrix_.begin(), matrix_.end(), std::pair{sender, receiver},
                             [](const MatrixCell& c, const std::pair<std::int32_t, std::int32_t>& v) {
                               return std::pair{c.sender, c.receiver} < v;
                             });
  return it != matrix_.end() && it->sender == sender && it->receiver == receiver ? &*it : nullptr;
}

std::size_t MessageIndex::memory_bytes() const {
  return matched_.messages.capacity() * sizeof(run::MatchedMessage) + waits_.waits.capacity() * sizeof(run::MessageWait) +
         line_order_.capacity() * sizeof(std::uint32_t) +
         (line_start_.capacity() + line_end_.capacity() + line_max_end_.capacity()) * sizeof(std::int64_t) +
         (by_send_.capacity() + by_recv_.capacity()) * sizeof(std::uint32_t) + matrix_.capacity() * sizeof(MatrixCell);
}

}  // namespace collscope::gui
