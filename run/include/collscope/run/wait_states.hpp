#pragma once
// Time inside MPI and point-to-point wait states: the one definition of each, used by step times, step inference,
// the analyzer's findings and reports (ns throughout; beside run/lateness.hpp, which defines lateness and wait at
// collectives).
//
//   time in MPI  of a blocking call: its span, entry to exit. Of a non-blocking or persistent call (schema 1.2):
//                its posting call, [start, post_end], plus its completion calls, wait_ns, placed as one span that
//                ends where the request completed: [max(post_end, end − wait_ns), end]. The rest of its span the
//                rank spent outside MPI: overlapped with its own work (a polling loop's MPI_Test calls are inside
//                MPI, the work between them is not). Files before 1.2 do not record it: a non-blocking call of
//                theirs has no known time in MPI (spans_in_mpi gives none; it counts neither as communication
//                nor as compute). A call a library's worker thread runs synchronously on the rank's behalf (gloo's
//                C++ calls: DDP's buckets, on a communicator numbered by gloo's tag) is inside the collective for
//                its whole span, as a blocking call on that thread: the run loader sets its post_end to its end.
//   blocking span of a point-to-point call: where it waits: a blocking call's span; a non-blocking call's
//                completion span as above (its posting call does not wait).
//   late sender  (Scalasca's name): a receive whose blocking span starts before the matching send was posted
//                (the sender's call entry): the receiver waited min(send start − its blocking start, its blocking
//                span's length).
//   late receiver: a send that waits for its receive (MPI_Send, MPI_Ssend, MPI_Issend / MPI_Ssend_init, the
//                send side of a blocking MPI_Sendrecv; not MPI_Isend, whose completion a Waitall shares with
//                receives, so that an eager send would be blamed on its receiver), whose blocking span starts
//                before the matching receive was posted and ends after it (it completed only once the receive
//                was there: synchronous mode or a rendezvous transfer; an eager send returns before):
//                the sender waited min(receive start − its blocking start, its blocking span's length).
//   Both on the aligned clock (ClockAlignment: one offset per host). Where one blocking span holds several waits
//   (an MPI_Waitall for two late neighbours), the rank's waiting time is their union, shared among the ranks it
//   waited for in each instant, so that a rank never waits more than the time it spent in MPI.
//   propagated   a wait caused by a sender that was itself waiting: between its previous send to the same receiver
//                and this one it spent at least half as long waiting for others. The root of a chain of waits
//                is the rank whose lateness is its own (imbalance in its computation). Only waits in point-to-point
//                calls count here (not waits at collectives).
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace collscope::run {

struct MpiSpan {
  std::int64_t start_ns = 0, end_ns = 0;  // the rank's raw clock
  std::int64_t length() const { return end_ns - start_ns; }
};

// Where a call was inside MPI: one span (blocking) or two (posting and completion; the second may be empty).
struct MpiSpans {
  MpiSpan post, completion;  // blocking: `post` is the whole call, `completion` empty
  bool nonblocking = false;
  std::int64_t total_ns() const { return post.length() + completion.length(); }
};

MpiSpans spans_in_mpi(std::int64_t start_ns, std::int64_t end_ns, const NonblockingTimes* nonblocking);
// Of collectives[call]; nullopt for a non-blocking call whose times the file does not record (before 1.2).
std::optional<MpiSpans> spans_in_mpi(const RankTrace& rank, std::size_t call);
inline MpiSpans spans_in_mpi(const PointToPointCall& c) {
  return spans_in_mpi(c.start_ns, c.end_ns, c.nonblocking_call() ? &c.nonblocking : nullptr);
}

// One rank's time inside MPI as pieces, sorted by start (raw clock): every collective (non-blocking ones by
// their posting and completion spans) and, with `point_to_point`, every point-to-point call. `call` is the index
// into RankTrace::collectives, or −1 for point-to-point.
struct MpiPiece {
  MpiSpan span;
  std::int32_t call = -1;
  bool completion = false;  // the completion span of a non-blocking call
};
std::vector<MpiPiece> mpi_pieces(const RankTrace& rank, bool point_to_point = true);

// The blocking span of a point-to-point call (see above); empty for a non-blocking call that never waited.
MpiSpan blocking_span(const PointToPointCall& c);

enum class WaitState : std::uint8_t { LateSender, LateReceiver };
std::string_view wait_state_name(WaitState s);  // "late sender", "late receiver"

// One message's wait state: who waited, for whom, how long (its share of the waiting rank's union, see above).
struct MessageWait {
  WaitState state = WaitState::LateSender;
  std::int32_t waiting_rank = 0;  // world rank that waited (the receiver of a late sender, the sender of a late receiver)
  std::int32_t waited_for = 0;    // world rank it waited for
  std::int32_t message = 0;       // index into the MatchedMessages::messages it was measured on
  std::int64_t start_ns = 0;      // aligned: when the wait began (the waiting call's blocking span started)
  std::int64_t end_ns = 0;        // aligned: when the wait ended
  std::int64_t wait_ns = 0;       // its share of the waiting rank's union (≤ end_ns − start_ns)
  bool propagated = false;        // the rank waited for was itself waiting (see above)
};

struct PointToPointWaits {
  std::vector<MessageWait> waits;  // wait_ns > 0 only, by waiting rank then end
  std::int64_t messages = 0;       // matched messages
  std::int64_t unmatched_sends = 0, unmatched_receives = 0, unknown_source = 0;  // see MatchedMessages
};

PointToPointWaits measure_point_to_point_waits(const Run& run, const ClockAlignment& clocks);
// The same on messages already matched (match_messages(run)): MessageWait::message indexes `matched`.
PointToPointWaits measure_point_to_point_waits(const Run& run, const ClockAlignment& clocks,
                                               const MatchedMessages& matched);

}  // namespace collscope::run
