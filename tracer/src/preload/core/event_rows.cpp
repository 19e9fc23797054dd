#include "core/event_rows.hpp"

#include "core/runtime.hpp"

namespace collscope::tracer {

namespace {

// The fields both kinds have: the call, its times, and the non-blocking fields (post_end_ns, wait_ns,
// wait_calls) of an MPI call posted and completed later.
template <typename Record>
Record common_record(const Event& e, std::int64_t start_ns, WriterContext& ctx) {
  Record r;
  r.start_ns = start_ns;
  r.end_ns = ctx.clock.to_ns(e.t1);
  r.seq = e.seq;
  r.count = e.count;
  r.sendbuf = e.sendbuf;
  r.recvbuf = e.recvbuf;
  r.comm = e.comm_slot;
  r.datatype = static_cast<std::uint32_t>(ctx.store_string(e.datatype));
  r.status = e.status;
  r.op = e.op;
  if ((e.flags & kFlagNonBlocking) && !(e.flags & kFlagNccl)) {
    r.flags |= store::kRecordNonBlocking;
    r.post_end_ns = ctx.clock.to_ns(e.mpi.post_end);
    r.wait_ns = ctx.clock.to_ns(e.t0 + e.mpi.wait_ticks) - ctx.clock.to_ns(e.t0);
    r.wait_calls = e.mpi.wait_calls;
  }
  return r;
}

}  // namespace

store::CollectiveRecord collective_record(const Event& e, std::int64_t start_ns, WriterContext& ctx) {
  auto r = common_record<store::CollectiveRecord>(e, start_ns, ctx);
  r.bytes = e.bytes;
  r.reduce_op = static_cast<std::uint32_t>(ctx.store_string(e.reduce_op));
  if (e.root >= 0) r.root = e.root, r.flags |= store::kRecordRoot;
  if (e.peer >= 0) r.peer = e.peer, r.flags |= store::kRecordPeer;
  if (e.flags & kFlagNccl) {
    r.flags |= store::kRecordNccl;
    r.stream = e.nccl.stream;
    r.correlation = e.nccl.correlation;
    r.group = static_cast<std::int64_t>(e.nccl.group);
  }
  return r;
}

store::PointToPointRecord point_to_point_record(const Event& e, WriterContext& ctx) {
  auto r = common_record<store::PointToPointRecord>(e, ctx.clock.to_ns(e.t0), ctx);
  if (e.flags & kFlagSends) {
    r.flags |= store::kRecordSends;
    r.send_peer = e.peer;
    r.send_tag = e.mpi.send_tag;
    r.send_bytes = e.bytes;
  }
  if (e.flags & kFlagReceives) {
    r.flags |= store::kRecordReceives;
    r.recv_peer = e.mpi.recv_peer;
    r.recv_tag = e.mpi.recv_tag;
    r.recv_bytes = e.mpi.recv_bytes;
  }
  return r;
}

}  // namespace collscope::tracer
