#pragma once
// How the writer thread turns collective and point-to-point events into the records it saves (and, through
// store::row_of, into rows): one home for the meaning of an event's fields (event.hpp) in the file.
#include <collscope/store/event_batch.hpp>
#include <collscope/store/schema.hpp>

#include "core/clock.hpp"
#include "core/event.hpp"

namespace collscope::tracer {

struct WriterContext;

// The rows of a collective (MPI or NCCL) and of a point-to-point call as event batch records (event_batch.hpp):
// what the writer saves while the job runs, and what store::row_of makes a row of (COLLSCOPE_EVENT_BATCHES=0).
// `start_ns` is e.t0 converted.
store::CollectiveRecord collective_record(const Event& e, std::int64_t start_ns, WriterContext& ctx);
store::PointToPointRecord point_to_point_record(const Event& e, WriterContext& ctx);

}  // namespace collscope::tracer
