// A point-to-point call and its messages in words (see point_to_point_text.hpp).
#include "point_to_point_text.hpp"

#include <collscope/run/format.hpp>
#include <collscope/run/wait_states.hpp>

#include <fmt/format.h>

namespace collscope::gui {
namespace {

std::string comm_name(const TimelineModel& m, std::int32_t comm) {
  const auto& c = m.run().communicators[comm];
  return c.shown_name().empty() ? std::string("an unnamed communicator") : c.shown_name();
}

std::string peer_name(std::int32_t peer) {
  if (peer == store::kPeerProcNull) return "MPI_PROC_NULL";
  if (peer == store::kPeerUnknown) return "an unknown source";
  return fmt::format("rank {}", peer);
}

// "rank 1 waited 20 ms for rank 2 (late sender)"
std::string wait_words(const run::MessageWait& w) {
  return fmt::format("rank {} waited {} for rank {} ({}{})", w.waiting_rank, run::format_duration(double(w.wait_ns)),
                     w.waited_for, run::wait_state_name(w.state), w.propagated ? ", passed on" : "");
}

}  // namespace

std::string point_to_point_summary(const TimelineModel& m, std::uint32_t call) {
  const auto& c = m.point_to_point(call);
  const int r = m.rank_of_point_to_point(call);
  std::string text(store::op_name(c.op));
  if (c.sends()) text += fmt::format(" {} to {} (tag {})", run::format_bytes(double(c.send_bytes)), peer_name(c.send_peer), c.send_tag);
  if (c.receives())
    text += fmt::format("{} {} from {} (tag {})", c.sends() ? "," : "", run::format_bytes(double(c.recv_bytes)),
                        peer_name(c.recv_peer), c.recv_tag);
  text += fmt::format(" on {}\nrank {}: {} in MPI", comm_name(m, c.comm), m.run().ranks[r].world_rank,
                      run::format_duration(double(run::spans_in_mpi(c).total_ns())));
  const auto& messages = m.messages();
  for (const auto msg : messages.messages_of_call(call))
    if (const auto* w = messages.wait_of(msg)) text += "\n" + wait_words(*w);
  return text;
}

std::vector<DetailField> point_to_point_fields(const TimelineModel& m, std::uint32_t call) {
  const auto& c = m.point_to_point(call);
  const int r = m.rank_of_point_to_point(call);
  const auto& rank = m.run().ranks[r];
  std::vector<DetailField> out;
  auto add = [&](std::string name, std::string value, std::string meaning = {}) {
    out.push_back({std::move(name), std::move(value), std::move(meaning)});
  };
  const auto start = m.point_to_point_start(call), end = m.point_to_point_end(call);
  const auto spans = run::spans_in_mpi(c);
  add("op", std::string(store::op_name(c.op)));
  add("rank", std::to_string(rank.world_rank));
  add("host", rank.host);
  add("start", run::format_duration(double(start)), fmt::format("{} ns of run time (since the earliest tracer start)", start));
  add("duration", run::format_duration(double(end - start)),
      spans.nonblocking ? "from posting the request to its completion" : "from entry to exit");
  add("in MPI", run::format_duration(double(spans.total_ns())),
      "time inside MPI (run/wait_states.hpp): a blocking call's span; a non-blocking call's posting call and its "
      "completion calls, the rest of its span overlapped the rank's own work");
  add("communicator", comm_name(m, c.comm));
  add("seq", std::to_string(c.seq), "posting order of the rank's point-to-point calls on the communicator");
  if (c.status != 0) add("status", std::to_string(c.status), "the MPI error code (-1: freed before completion)");
  const auto& messages = m.messages();
  const auto mine = messages.messages_of_call(call);
  const bool both = c.sends() && c.receives();
  auto describe = [&](bool sent, const Message* msg) {
    const std::string prefix = both ? (sent ? "sent " : "received ") : "";
    const std::int32_t peer = sent ? c.send_peer : c.recv_peer;
    add(prefix + "peer", peer_name(peer), sent ? "the receiver" : "the sender (for a wildcard receive, its status's)");
    add(prefix + "tag", std::to_string(sent ? c.send_tag : c.recv_tag));
    add(prefix + "bytes", run::format_bytes(double(sent ? c.send_bytes : c.recv_bytes)),
        fmt::format("{} bytes", sent ? c.send_bytes : c.recv_bytes));
    if (!msg) {
      add(prefix + "message", peer < 0 ? "none" : "unmatched",
          "no matching call in the run: the peer's file is missing or was cut short, or the source was unknown");
      return;
    }
    add(prefix + "message time", run::format_duration(double(msg->recv_ns - msg->send_ns)),
        "from the send's posting to the receive's completion (the message line's ends)");
    if (!msg->wait) {
      add(prefix + "wait", "none", "neither side waited for the other (run/wait_states.hpp)");
      add(prefix + "late side", "neither");
      return;
    }
    const auto& w = *msg->wait;
    add(prefix + "wait", run::format_duration(double(w.wait_ns)),
        fmt::format("rank {} waited for rank {}: its share of the rank's waiting from {} to {} of run time",
                    w.waiting_rank, w.waited_for, run::format_duration(double(m.run_time(w.start_ns))),
                    run::format_duration(double(m.run_time(w.end_ns)))));
    add(prefix + "late side",
        fmt::format("{} (rank {})", w.state == run::WaitState::LateSender ? "sender" : "receiver", w.waited_for),
        w.state == run::WaitState::LateSender
            ? "late sender: the receive was waiting before the send was posted"
            : "late receiver: the send waited for its receive to be posted (synchronous or rendezvous)");
    if (w.propagated)
      add(prefix + "wait passed on", "yes", "the late rank was itself waiting for another before it sent");
  };
  for (bool sent : {true, false}) {
    if (sent ? !c.sends() : !c.receives()) continue;
    const Message* found = nullptr;
    Message msg;
    for (const auto id : mine) {
      msg = messages.message(id);
      if ((sent ? msg.send : msg.recv) == call) {
        found = &msg;
        break;
      }
    }
    describe(sent, found);
  }
  return out;
}

}  // namespace collscope::gui
