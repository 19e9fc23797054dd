#pragma once
// How the writer thread turns events into rows: the columns an event kind adds beyond the ones every collective
// has (runtime.cpp writes those). One home for the meaning of the MPI payload (event.hpp) in the file.
#include <collscope/store/schema.hpp>

#include "clock.hpp"
#include "event.hpp"

namespace collscope::tracer {

struct WriterContext;

// The non-blocking columns (post_end_ns, wait_ns, wait_calls) of a call posted and completed later; unset (NULL)
// for blocking calls.
template <typename Row>
void set_nonblocking_times(const Event& e, const TickConverter& clock, Row& row) {
  if (!(e.flags & kFlagNonBlocking) || (e.flags & kFlagNccl)) return;
  row.post_end_ns = clock.to_ns(e.mpi.post_end);
  row.wait_ns = clock.to_ns(e.t0 + e.mpi.wait_ticks) - clock.to_ns(e.t0);
  row.wait_calls = e.mpi.wait_calls;
}

// A point_to_point row (EventKind::PointToPoint).
store::PointToPointRow point_to_point_row(const Event& e, WriterContext& ctx);

}  // namespace collscope::tracer
