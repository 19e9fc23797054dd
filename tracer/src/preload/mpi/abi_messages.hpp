// Point-to-point calls of one ABI: the MessageShape the generated wrappers fill from the arguments' roles, the
// event it becomes (its send side and its receive side, peers as world ranks), what a status adds, and the
// blocking, non-blocking, persistent and polled wrapper kinds. Included after mpi/abi_collectives.hpp.

constexpr int kNoRank = MPI_PROC_NULL - 1000;  // not a rank: the call has no such side

struct MessageShape {
  Op op = Op::Unknown;
  bool typed = false, recv_typed = false;
  bool receives = false;  // MPI_Mrecv: receives without a source argument
  int dst = kNoRank, src = kNoRank;
  int send_tag = 0, recv_tag = 0;
  MPI_Comm comm{};
  const void* sendbuf = nullptr;
  const void* recvbuf = nullptr;
  std::int64_t count = 0;       // as passed: the send count, or the receive count of a call that only receives
  std::int64_t recv_count = 0;  // the receive count of a call that does both
  MPI_Datatype type{}, recv_type{};
  MPI_Status* status = nullptr;  // the wrapper's call passes this one (see message_blocking)
  MPI_Message* message = nullptr;
  void set_type(MPI_Datatype t) {
    type = t;
    typed = true;
  }
  void set_recv_type(MPI_Datatype t) {
    recv_type = t;
    recv_typed = true;
  }
  bool sends() const { return dst != kNoRank; }
  bool has_source() const { return src != kNoRank; }
};

// A point-to-point call's send side and (what is known before the call of) its receive side. Numbered unless
// it is a persistent request's description (numbered at each start).
void message_event(const MessageShape& s, Event& e, bool numbered = true) {
  const std::uint32_t slot = slot_of(s.comm);
  set_header(e, EventKind::PointToPoint, s.op, slot, s.sendbuf, s.recvbuf);
  e.count = s.count;
  const TypeFacts t = s.typed ? type_facts(s.type) : TypeFacts{};
  e.datatype = t.name;
  if (s.sends()) {
    e.flags |= kFlagSends;
    e.peer = world_rank_of(slot, s.dst);
    e.mpi.send_tag = s.send_tag;
    e.bytes = e.peer == kPeerProcNull ? 0 : s.count * t.size;
  }
  if (s.has_source() || s.receives) {
    e.flags |= kFlagReceives;
    e.mpi.recv_peer = s.has_source() && s.src != MPI_ANY_SOURCE ? world_rank_of(slot, s.src) : kPeerUnknown;
    e.mpi.recv_tag = s.recv_tag;
    const std::int64_t capacity = s.recv_count ? s.recv_count : s.count;
    const TypeFacts rt = s.recv_typed ? type_facts(s.recv_type) : t;
    e.mpi.recv_bytes = e.mpi.recv_peer == kPeerProcNull ? 0 : capacity * rt.size;
  }
  if (numbered) e.seq = take_seq(slot, SeqSpace::PointToPoint);
}

// MPI_Mprobe's message handle does not say its communicator: the probe's is remembered for the MPI_Mrecv
// that follows on the same thread (the last few probes).
struct ProbedMessage {
  RequestKey message = 0;
  MPI_Comm comm{};
};
thread_local ProbedMessage t_probed[8];
thread_local unsigned t_probed_next = 0;

void remember_message(MPI_Message m, MPI_Comm comm) { t_probed[t_probed_next++ % 8] = {key_of(m), comm}; }

MPI_Comm comm_of_message(MPI_Message m) {
  for (const auto& p : t_probed)
    if (p.message == key_of(m) && p.message != 0) return p.comm;
  return g.null;
}

// A status an implementation may leave unwritten (MPICH 4.0's MPI_Isendrecv does): marked before the call, so
// that what it says is used only when the call wrote it.
constexpr int kUnwrittenSource = -1'000'001;
void mark_unwritten(MPI_Status* st) {
  if (st && st != MPI_STATUS_IGNORE) st->MPI_SOURCE = kUnwrittenSource;
}

// A status to read even when the caller ignores it (then one of the wrapper's own), marked unwritten.
struct StatusOut {
  MPI_Status own;
  MPI_Status* use;
  explicit StatusOut(MPI_Status* given) : use(given == MPI_STATUS_IGNORE ? &own : given) { mark_unwritten(use); }
  StatusOut(const StatusOut&) = delete;
  StatusOut& operator=(const StatusOut&) = delete;
};

// What a status says about a receive: its source (a world rank), tag and size.
void apply_status(Event& e, const MPI_Status& st) {
  if (!(e.flags & kFlagReceives) || e.mpi.recv_peer == kPeerProcNull || st.MPI_SOURCE == kUnwrittenSource) return;
  // MPICH 4.0's MPI_Isendrecv completes with the status of an earlier call: its receive side keeps what the
  // arguments said (source, tag, the buffer's size) unless they were wildcards.
  const Op op = static_cast<Op>(e.op);
  if ((op == Op::Isendrecv || op == Op::IsendrecvReplace) && e.mpi.recv_peer != kPeerUnknown &&
      e.mpi.recv_tag != MPI_ANY_TAG)
    return;
  if (st.MPI_SOURCE == MPI_PROC_NULL) {
    e.mpi.recv_peer = kPeerProcNull;
    e.mpi.recv_bytes = 0;
    return;
  }
  if (st.MPI_SOURCE >= 0) e.mpi.recv_peer = world_rank_of(e.comm_slot, st.MPI_SOURCE);
  e.mpi.recv_tag = st.MPI_TAG;
  int received = 0;
  // Counted in MPI_BYTE: the size of what arrived, in every implementation's status.
  if (real<kMpi_Get_count>()(&st, g.byte, &received) == MPI_SUCCESS && received != MPI_UNDEFINED)
    e.mpi.recv_bytes = received;
}

// A receive's status is read also when the caller ignores it: the wrapper's call passes s.status, which points
// at a status of the wrapper's own then (the source of a wildcard receive, the tag and the size are in it).
template <typename Call>
int message_blocking(MessageShape& s, Call&& call) {
  if (s.message && !s.has_source()) s.comm = comm_of_message(*s.message);  // MPI_Mrecv: the probe's communicator
  if (!traceable(s.comm)) return call();
  Event e;
  message_event(s, e);
  StatusOut status(s.status);
  s.status = status.use;
  return record_blocking(e, false, call, [&](Event& done) {
    if (done.status != MPI_SUCCESS || !s.status) return;
    apply_status(done, *s.status);
    if (s.message && s.has_source()) remember_message(*s.message, s.comm);  // MPI_Mprobe
  });
}

template <typename Call>
int message_posted(MessageShape& s, MPI_Request* request, Call&& call) {
  if (s.message) s.comm = comm_of_message(*s.message);  // MPI_Imrecv
  if (!traceable(s.comm)) return call();
  Event e;
  message_event(s, e);
  return posted(e, request, call);
}

template <typename Call>
int message_persistent(MessageShape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e;
  message_event(s, e, false);
  return persistent(e, request, call);
}

// MPI_Iprobe / MPI_Improbe: recorded (and numbered) only when they find a message, so polling loops add nothing.
template <typename Call>
int probe_polled(MessageShape& s, int* flag, Call&& call) {
  if (!traceable(s.comm)) return call();
  StatusOut status(s.status);
  s.status = status.use;
  const std::uint64_t t0 = ticks();
  const int rc = call_inside(call);
  const std::uint64_t t1 = ticks();
  if (rc != MPI_SUCCESS || !*flag) return rc;
  Event e;
  message_event(s, e);
  e.t0 = t0;
  e.t1 = t1;
  apply_status(e, *s.status);
  if (s.message) remember_message(*s.message, s.comm);
  record(e);
  return rc;
}
