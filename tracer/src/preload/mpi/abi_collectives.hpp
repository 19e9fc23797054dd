// Collectives of one ABI: what the generated wrappers describe a call with (a CollectiveShape filled from the
// arguments' roles in functions.txt), how it becomes an event, and the blocking, non-blocking and persistent
// wrapper kinds. Included after mpi/abi_body.hpp, inside the ABI's namespace.

enum class Per : std::uint8_t { Call, CommSize, OutDegree };
enum class Side : std::uint8_t { Both, Send, Recv };

// The bytes of a collective: `elements` of `type`, or a count array (one entry per rank or out-neighbour) of
// `type` or of `types`; all of it times the communicator's size or out-degree where `per` says so.
struct Amount {
  std::int64_t elements = 0;
  const void* counts = nullptr;  // int[] or, in large-count calls, MPI_Count[]
  const MPI_Datatype* types = nullptr;
  MPI_Datatype type{};
  Per per = Per::Call;
  bool counts_large = false;
  bool typed = false;
  void set_type(MPI_Datatype t) {
    type = t;
    typed = true;
  }
};

struct CollectiveShape {
  Op op = Op::Unknown;
  Side amount_side = Side::Both;
  bool count_is_sum = false;  // count = the summed count array of the amount
  bool reduces = false;
  int root = -1;
  MPI_Comm comm{};
  const void* sendbuf = nullptr;
  const void* recvbuf = nullptr;
  std::int64_t count = 0;  // as passed (`count` column)
  MPI_Op reduce{};
  Amount amount;
  Amount in_place;  // the amount when the buffer on amount_side is MPI_IN_PLACE (none given: bytes 0)
  void set_reduce(MPI_Op op) {
    reduce = op;
    reduces = true;
  }
};

std::int64_t count_at(const Amount& a, int i) {
  return a.counts_large ? static_cast<std::int64_t>(static_cast<const MPI_Count*>(a.counts)[i])
                        : static_cast<std::int64_t>(static_cast<const int*>(a.counts)[i]);
}

// Fills count, bytes and datatype of `e` from the shape (the communicator's slot is in e.comm_slot).
void resolve_amount(const CollectiveShape& s, Event& e) {
  const bool in_place_side = (s.amount_side == Side::Send && s.sendbuf == MPI_IN_PLACE) ||
                             (s.amount_side == Side::Recv && s.recvbuf == MPI_IN_PLACE);
  const Amount& a = in_place_side ? s.in_place : s.amount;
  int n = 1;
  if (a.per == Per::CommSize) n = comm_slot(e.comm_slot).size;
  else if (a.per == Per::OutDegree) n = out_degree(s.comm);
  std::int64_t elements = 0, bytes = 0;
  std::uint32_t name = 0;
  if (a.counts && a.types) {  // a datatype per peer (alltoallw): the name of the first one used
    for (int i = 0; i < n; ++i) {
      const std::int64_t c = count_at(a, i);
      if (c <= 0) continue;
      const TypeFacts t = type_facts(a.types[i]);
      elements += c;
      bytes += c * t.size;
      if (!name) name = t.name;
    }
  } else {
    if (a.counts) {
      for (int i = 0; i < n; ++i) elements += count_at(a, i);
    } else {
      elements = a.elements * (a.per == Per::Call ? 1 : n);
    }
    if (a.typed && (elements > 0 || !a.counts)) {
      const TypeFacts t = type_facts(a.type);
      bytes = elements * t.size;
      name = t.name;
    }
  }
  e.count = s.count_is_sum ? elements : s.count;
  e.bytes = bytes;
  e.datatype = name;
}

// The header every MPI event shares, every field written (no zeroing of the whole record on the hot path).
void set_header(Event& e, EventKind kind, Op op, std::uint32_t slot, const void* sendbuf, const void* recvbuf) {
  e.kind = kind;
  e.op = static_cast<std::uint8_t>(op);
  e.flags = sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE ? kFlagInPlace : 0;
  e.status = 0;
  e.t0 = e.t1 = 0;
  e.comm_slot = slot;
  e.root = -1;
  e.seq = e.count = e.bytes = 0;
  e.sendbuf = sendbuf == MPI_IN_PLACE ? 0 : reinterpret_cast<std::uint64_t>(sendbuf);
  e.recvbuf = recvbuf == MPI_IN_PLACE ? 0 : reinterpret_cast<std::uint64_t>(recvbuf);
  e.datatype = e.reduce_op = 0;
  e.peer = -1;
  e.thread = 0;
  e.mpi = MpiPayload{};
}

// A collective, resolved; numbered unless it is a persistent request's description (numbered at each start).
void collective_event(const CollectiveShape& s, Event& e, bool numbered = true) {
  const std::uint32_t slot = slot_of(s.comm);
  set_header(e, EventKind::Collective, s.op, slot, s.sendbuf, s.recvbuf);
  e.root = s.root;
  resolve_amount(s, e);
  if (s.reduces) e.reduce_op = reduce_op_name(s.reduce);
  if (numbered) e.seq = take_seq(slot, SeqSpace::Collective);
}

bool traceable(MPI_Comm comm) { return comm != g.null; }

template <typename Call>
int collective_blocking(CollectiveShape& s, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e;
  collective_event(s, e);
  return record_blocking(e, true, call);
}

// A posted call: recorded at its completion (the Wait/Test that finishes it), pending until then.
void post(Event& e, std::uint64_t t0, int rc, RequestKey request) {
  e.t0 = t0;
  e.mpi.post_end = ticks();
  e.flags |= kFlagNonBlocking;
  e.status = rc;
  if (rc != MPI_SUCCESS) {
    e.t1 = e.mpi.post_end;
    record(e);
  } else {
    pending_add(request, e);
  }
}

// The real posting call of the non-blocking call `e` describes, then its posting.
template <typename Call>
int posted(Event& e, MPI_Request* request, Call&& call) {
  const std::uint64_t t0 = ticks();
  const int rc = call_inside(call);
  post(e, t0, rc, key_of(*request));
  return rc;
}

// The real initialisation of the persistent call `e` describes: each MPI_Start of it posts one (custom_Start).
template <typename Call>
int persistent(const Event& e, MPI_Request* request, Call&& call) {
  const int rc = call_inside(call);
  if (rc == MPI_SUCCESS) persistent_add(key_of(*request), e);
  return rc;
}

template <typename Call>
int collective_posted(CollectiveShape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e;
  collective_event(s, e);
  return posted(e, request, call);
}

template <typename Call>
int collective_persistent(CollectiveShape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e;
  collective_event(s, e, false);
  return persistent(e, request, call);
}

// A communicator made from `parent` (split, dup, cart_create, ...). MPI_COMM_NULL results (MPI_UNDEFINED colour)
// still advance the parent's creation index, which is part of the children's keys on every rank.
template <typename Call>
int comm_created(const char* how, MPI_Comm parent, MPI_Comm* newcomm, std::optional<std::int64_t> color,
                 Call&& call) {
  const int rc = call_inside(call);
  if (rc == MPI_SUCCESS && recording() && traceable(parent)) {
    const std::uint32_t p = slot_of(parent);
    if (*newcomm != g.null) register_comm(*newcomm, how, p, color);
    else comm_slot(p).children.fetch_add(1);
  }
  return rc;
}
