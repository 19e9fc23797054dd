#pragma once
// A run's point-to-point figures, one definition each, for every report (text, HTML, JSON) and the viewer:
//   time in point-to-point  per rank: the union of its point-to-point calls' time in MPI (run/wait_states.hpp: a
//                           blocking call's span; a non-blocking call's posting call and its completion span), ns
//                           on its own clock. A union, because one MPI_Waitall completes several requests and each
//                           request's completion span covers that same wait: it counts once.
//   waiting                 per rank: the sum of its point-to-point waits (MessageWait: late sender and late
//                           receiver, shares of the union of its overlapping waits, propagated ones included), ns;
//                           never more than its time in point-to-point.
//   messages, bytes         counted at the sender: every successful send with a destination rank (MPI_PROC_NULL
//                           moves nothing; a sendrecv's send side counts), its send_bytes. A rank's received
//                           messages are the sends to it, so the matrix of pairs adds up both ways.
//   message sizes           those sends by size class: 0 bytes alone, then [2^k, 2^(k+1)) bytes.
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>

#include <cstdint>
#include <vector>

namespace collscope::run {

struct PointToPointRank {
  int world_rank = 0;
  std::int64_t calls = 0;    // point-to-point rows of the rank (each completed request, each blocking call)
  std::int64_t time_ns = 0;  // time in point-to-point (see above)
  std::int64_t wait_ns = 0;  // of it waiting for another rank
  std::int64_t messages_sent = 0, bytes_sent = 0, messages_received = 0, bytes_received = 0;
};

// Messages from one world rank to another.
struct MessagePair {
  int sender = 0, receiver = 0;  // world ranks
  std::int64_t messages = 0, bytes = 0;
};

struct MessageSizeBin {
  std::int64_t size_bucket_bytes = 0;  // lower bound: 0, or 2^k
  std::int64_t messages = 0, bytes = 0;
  std::int64_t min_bytes = 0, max_bytes = 0;  // the sizes seen in the bin
};

struct PointToPointSummary {
  std::vector<PointToPointRank> ranks;  // per Run::ranks index
  std::vector<MessagePair> pairs;       // pairs with at least one message, by sender then receiver
  std::vector<MessageSizeBin> sizes;    // non-empty bins, smallest first
  std::int64_t calls = 0, messages = 0, bytes = 0;  // over all ranks (messages and bytes as sent)
  // From the matching (PointToPointWaits): sends and receives paired in MPI's non-overtaking order.
  std::int64_t matched_messages = 0, unmatched_sends = 0, unmatched_receives = 0;
  double mean_time_ns = 0, mean_wait_ns = 0;  // over Run::ranks: the summary line's "per rank"

  bool empty() const { return calls == 0; }
};

// `waits`: measure_point_to_point_waits of the same run.
PointToPointSummary summarize_point_to_point(const Run& run, const PointToPointWaits& waits);

}  // namespace collscope::run
