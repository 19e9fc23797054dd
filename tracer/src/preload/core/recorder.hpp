#pragma once
// The bookkeeping every interposer (MPI of any ABI, NCCL) shares, in one place: resolve, then record.
//   1. take_seq numbers the call on its communicator before the call runs and before the buffer is asked for room,
//      so an event lost (only when no memory is left) never shifts a later number (matching relies on them).
//   2. record_blocking publishes the call as this thread's call in flight while it runs (a hang leaves a row).
//   3. record copies the finished event into the thread's buffer (thread_buffer.hpp: it never drops for want of
//      room; at the memory cap the thread writes its events out itself, and the trace says so).
#include <cstdint>

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "core/cpu_sampling.hpp"
#include "core/event.hpp"
#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer {

// Depth of traced calls on this thread. A call made from inside another traced call (an MPI library's own calls
// through its exported names, a Fortran layer that calls the C one) belongs to the outer call: only the
// outermost is recorded, so nothing is counted twice whatever the layering.
extern __attribute__((tls_model("initial-exec"))) constinit thread_local int t_traced_depth;

// Hot-path check at the top of every wrapper.
inline bool tracing_this_call() { return recording() && t_traced_depth == 0; }

// Marks the real call's extent (see t_traced_depth).
class TracedScope {
 public:
  TracedScope() { ++t_traced_depth; }
  ~TracedScope() { --t_traced_depth; }
  TracedScope(const TracedScope&) = delete;
  TracedScope& operator=(const TracedScope&) = delete;
};

// The real call, inside a TracedScope.
template <typename Call>
int call_inside(Call&& call) {
  TracedScope scope;
  return call();
}

// Collectives are numbered per communicator on every rank alike (MPI and NCCL require the same order); point-to-
// point calls have their own numbering per communicator on this rank (an order, not a cross-rank key).
enum class SeqSpace { Collective, PointToPoint };

// A collective's number is a plain load and store, not a locked read-modify-write (~10 ns saved per call): MPI and
// NCCL forbid two threads to call collectives on one communicator at once, so nothing races for it. Point-to-point
// calls may come from several threads on one communicator (MPI_THREAD_MULTIPLE): theirs stays atomic.
inline std::int64_t take_seq(std::uint32_t comm_slot_index, SeqSpace space) {
  CommSlot& s = comm_slot(comm_slot_index);
  if (space == SeqSpace::Collective) {
    const std::int64_t seq = s.next_seq.load(std::memory_order_relaxed);
    s.next_seq.store(seq + 1, std::memory_order_relaxed);
    return seq;
  }
  return s.next_p2p_seq.fetch_add(1, std::memory_order_relaxed);
}

// The finished event into this thread's buffer (the thread field is set there).
inline void record(const Event& e) {
  emit([&](Event& out) { out = e; });
}

inline void publish_in_flight(ThreadBuffer& tb, const Event& e) {
  tb.enter_call(e.t0, e.comm_slot, e.op, e.root, e.seq, e.count, e.bytes, e.datatype, e.reduce_op);
}

struct NothingToFinish {
  void operator()(Event&) const {}
};

// A blocking call: `e` is fully resolved (seq taken) except its times and status. With `in_flight`, the call is
// this thread's call in flight while it runs (collectives only: the analyzer matches those by seq). `finish`
// completes the event from the call's results (a receive's status) before it is recorded.
template <typename Call, typename Finish = NothingToFinish>
int record_blocking(Event& e, bool in_flight, Call&& call, Finish&& finish = {}) {
  ThreadBuffer& tb = this_thread_buffer();
  e.t0 = ticks();
  maybe_sample_cpu(e.t0, CpuSampleSite::CallEntry);
  if (in_flight) publish_in_flight(tb, e);
  const int rc = call_inside(call);
  e.t1 = ticks();
  maybe_sample_cpu(e.t1, CpuSampleSite::CallExit);
  if (in_flight) tb.leave_call();
  e.status = rc;
  finish(e);
  record(e);
  return rc;
}

}  // namespace collscope::tracer
