#pragma once
// How the writer thread turns events into rows: the columns an event kind adds beyond the ones every collective
// has (runtime.cpp writes those). One home for the meaning of the MPI payload (event.hpp) in the file.
#include <collscope/store/event_batch.hpp>
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

// The same rows as event batch records (event_batch.hpp), what the writer saves while the job runs: an MPI
// collective (not NCCL: its row gets GPU times later by id) and a point-to-point call. `start_ns` is e.t0 converted.
store::CollectiveRecord collective_record(const Event& e, std::int64_t start_ns, WriterContext& ctx);
store::PointToPointRecord point_to_point_record(const Event& e, WriterContext& ctx);

}  // namespace collscope::tracer
