#include "event_rows.hpp"

#include "runtime.hpp"

namespace collscope::tracer {

store::PointToPointRow point_to_point_row(const Event& e, WriterContext& ctx) {
  store::PointToPointRow r;
  r.comm = e.comm_slot;
  r.seq = e.seq;
  r.op = static_cast<store::Op>(e.op);
  r.count = e.count;
  r.datatype = ctx.store_string(e.datatype);
  if (e.flags & kFlagSends) {
    r.send_peer = e.peer;
    r.send_tag = e.mpi.send_tag;
    r.send_bytes = e.bytes;
  }
  if (e.flags & kFlagReceives) {
    r.recv_peer = e.mpi.recv_peer;
    r.recv_tag = e.mpi.recv_tag;
    r.recv_bytes = e.mpi.recv_bytes;
  }
  r.sendbuf = e.sendbuf;
  r.recvbuf = e.recvbuf;
  r.thread = e.thread;
  r.start_ns = ctx.clock.to_ns(e.t0);
  r.end_ns = ctx.clock.to_ns(e.t1);
  set_nonblocking_times(e, ctx.clock, r);
  r.status = e.status;
  return r;
}

}  // namespace collscope::tracer
