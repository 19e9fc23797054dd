#pragma once
// MPI requests the tracer follows, keyed by the request handle's bits (a pointer in Open MPI and the standard ABI,
// an int in MPICH): ABI-neutral, shared by the wrappers of every ABI.
//   - pending: a non-blocking call (or a started persistent one) between its posting and the Wait/Test that
//     completes it. The completion calls add the time spent inside them; the writer thread scans the table for
//     collectives that stay pending (calls in flight).
//   - persistent: what each persistent request (MPI_*_init) does, so that each MPI_Start posts one call.
#include <cstdint>
#include <functional>

#include "core/event.hpp"

namespace collscope::tracer::mpi {

using RequestKey = std::uintptr_t;

// Adds a posted call (event.t0 = posting, mpi.post_end set). False when the table is full: the call is counted
// as dropped on this thread (its seq is taken, so later numbers are unaffected).
bool pending_add(RequestKey r, const Event& e);
// Takes r's pending call out of the table into `out` (with the completion time it has accumulated). False if r
// has none.
bool pending_take(RequestKey r, Event& out);
// A completion call of `ticks` covered r without completing it.
void pending_waited(RequestKey r, std::uint64_t ticks);
// r's pending call, copied, if it is a collective (for the call-in-flight snapshot of a thread waiting on it).
bool pending_collective(RequestKey r, Event& out);
// Anything pending at all (the completion wrappers' fast path).
bool any_pending();
// Writer thread: every pending collective, a consistent copy each (event.thread = the posting thread).
void scan_pending_collectives(const std::function<void(const Event&)>& fn);

// Persistent requests: the call each MPI_Start of r posts (seq, times and status are set per start).
void persistent_add(RequestKey r, const Event& call);
bool persistent_find(RequestKey r, Event& out);
void persistent_remove(RequestKey r);
bool any_persistent();

}  // namespace collscope::tracer::mpi
