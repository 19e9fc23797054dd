#pragma once
// Point-to-point messages as the viewer shows them. The matching is run/'s (run::match_messages: MPI's
// non-overtaking order) and so are the wait states (run::measure_point_to_point_waits: late sender, late
// receiver); nothing is matched again here. What this adds is what drawing and the communication matrix need:
//   - the message lines, Vampir's: from the send's posting (its call's entry, on the sender's lane) to the
//     receive's completion (its call's exit, on the receiver's lane), indexed like a lane (sorted by the earlier
//     end, with the prefix maximum of the later end), so that the lines of a visible range are found by two
//     binary searches and a frame touches only them (28 bytes per message);
//   - the messages of a call (by its send side, by its receive side), for selecting a call;
//   - the matrix: per (sender, receiver) world-rank pair, messages, bytes, time and wait.
// Times are run time (ns since ClockAlignment::origin_ns, as the timeline's).
#include <collscope/gui/huge_page_allocator.hpp>
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace collscope::gui {

// One matched message, computed from the run on demand.
struct Message {
  std::uint32_t send = 0, recv = 0;       // point-to-point ids (TimelineModel) of the sending and the receiving call
  int send_rank = 0, recv_rank = 0;       // rank indices (into run::Run::ranks)
  std::int64_t send_ns = 0;               // run time: the send was posted (its call's entry): the line's start
  std::int64_t recv_ns = 0;               // run time: the receive completed (its call's exit): the line's end
  std::int64_t bytes = 0;                 // what the sender sent
  std::int32_t tag = 0, comm = 0;         // comm: index into run::Run::communicators
  const run::MessageWait* wait = nullptr;  // its late sender or late receiver; null when nobody waited for it
};

// Per (sender, receiver) world-rank pair, what the communication matrix shows.
struct MatrixCell {
  std::int32_t sender = 0, receiver = 0;  // world ranks
  std::int64_t messages = 0;
  std::int64_t bytes = 0;
  // ns: the messages' durations summed (send posted → receive completed, Vampir's message duration; a negative
  // one, possible where clocks disagree by more than the message took, counts as 0)
  std::int64_t time_ns = 0;
  std::int64_t wait_ns = 0;  // ns: late-sender and late-receiver waits of its messages (their shares, run/)
};

class MessageIndex {
 public:
  MessageIndex() = default;
  // `first_call[r]`: the point-to-point id of rank r's first call (TimelineModel's numbering), r = 0..ranks.
  MessageIndex(std::shared_ptr<const run::Run> run, const run::ClockAlignment& clocks,
               std::vector<std::size_t> first_call);
  // Over messages matched (and waits measured) on a whole run, given in `run`'s calls: a window of that run
  // (windowed_run.hpp), where matching its calls anew would pair the wrong ones. The matrix is the whole run's.
  MessageIndex(std::shared_ptr<const run::Run> run, const run::ClockAlignment& clocks,
               std::vector<std::size_t> first_call, run::MatchedMessages matched, run::PointToPointWaits waits,
               std::vector<MatrixCell> whole_run_matrix);

  std::size_t size() const { return matched_.messages.size(); }
  Message message(std::uint32_t m) const;
  const run::MatchedMessages& matched() const { return matched_; }
  const run::PointToPointWaits& waits() const { return waits_; }
  // The wait of message m (run::MessageWait), null when none: a message has at most one, since its sender and
  // its receiver cannot both have been first.
  const run::MessageWait* wait_of(std::uint32_t m) const;

  // Lines: positions [first, last) may cross [t0, t1] (run time); line_at(pos) is the message, line_start/end
  // its earlier and later end (run time). A superset: positions whose own line ends before t0 are skipped by
  // the caller (the prefix maximum of ends keeps the search a binary one).
  std::pair<std::uint32_t, std::uint32_t> lines_in(std::int64_t t0, std::int64_t t1) const;
  std::uint32_t line_at(std::uint32_t pos) const { return line_order_[pos]; }
  std::int64_t line_start(std::uint32_t pos) const { return line_start_[pos]; }
  std::int64_t line_end(std::uint32_t pos) const { return line_end_[pos]; }

  // The messages a call sent and received (a sendrecv has both), by point-to-point id.
  std::vector<std::uint32_t> messages_of_call(std::uint32_t call) const;
  // The messages from world rank `sender` to world rank `receiver`, in run order.
  std::vector<std::uint32_t> messages_between(std::int32_t sender, std::int32_t receiver) const;

  // Sorted by (sender, receiver); pairs without messages are absent.
  const std::vector<MatrixCell>& matrix() const { return matrix_; }
  const MatrixCell* cell(std::int32_t sender, std::int32_t receiver) const;

  std::size_t memory_bytes() const;

 private:
  // The lines, the call lookups and (unless given) the matrix over matched_ and waits_.
  void build(const run::ClockAlignment& clocks, bool with_matrix = true);
  std::uint32_t send_id(const run::MatchedMessage& m) const {
    return static_cast<std::uint32_t>(first_call_[m.send_rank] + m.send_call);
  }
  std::uint32_t recv_id(const run::MatchedMessage& m) const {
    return static_cast<std::uint32_t>(first_call_[m.recv_rank] + m.recv_call);
  }

  std::shared_ptr<const run::Run> run_;
  std::vector<std::int64_t> shift_;  // per rank: raw → run time
  std::vector<std::size_t> first_call_;
  run::MatchedMessages matched_;
  run::PointToPointWaits waits_;      // sorted by message
  EventVector<std::uint32_t> line_order_;
  EventVector<std::int64_t> line_start_, line_end_, line_max_end_;
  std::vector<std::uint32_t> by_send_, by_recv_;  // message indices by their send / receive call's id
  std::vector<MatrixCell> matrix_;
};

}  // namespace collscope::gui
