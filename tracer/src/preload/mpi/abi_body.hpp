// The MPI wrappers' machinery for one ABI. Included by mpi/abi_<name>.cpp inside that ABI's namespace, after
// mpi/abi_prelude.hpp and the ABI's own <mpi.h>, with COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME set to 1 where the
// predefined handles are addresses of library globals (Open MPI: looked up at binding, never linked) and to 0 where
// they are constants of mpi.h. Everything here speaks that ABI's types; what leaves it (events, request keys,
// communicator handles) is ABI-neutral.

using store::Op;

// ---- handles ----------------------------------------------------------------------------------------------

// A handle's bits: pointers in Open MPI and the standard ABI, ints in MPICH.
template <typename H>
RequestKey key_of(H h) {
  if constexpr (std::is_pointer_v<H>) return reinterpret_cast<RequestKey>(h);
  else return static_cast<RequestKey>(static_cast<unsigned int>(h));
}
template <typename H>
const void* handle_ptr(H h) {
  return reinterpret_cast<const void*>(key_of(h));
}

template <MpiFunction F>
typename RealOf<F>::type real() {
  return reinterpret_cast<typename RealOf<F>::type>(g_mpi_real[F]);
}

struct Predefined {
  MPI_Comm world{}, self{}, null{};
  MPI_Request request_null{};
  MPI_Datatype byte{}, datatype_null{};
  struct NamedOp {
    MPI_Op handle;
    std::uint32_t name;
  };
  NamedOp ops[16] = {};
  int op_count = 0;
};
Predefined g;

#define COLLSCOPE_MPI_REDUCTION_OPS(X) \
  X(SUM, sum) X(MAX, max) X(MIN, min) X(PROD, prod) X(LAND, land) X(BAND, band) X(LOR, lor) X(BOR, bor) \
  X(LXOR, lxor) X(BXOR, bxor) X(MAXLOC, maxloc) X(MINLOC, minloc) X(REPLACE, replace) X(NO_OP, no_op)

bool prepare(void* library) {
  (void)library;
#if COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME
  auto global = [library](const char* name) { return data_symbol(name, library); };
  g.world = reinterpret_cast<MPI_Comm>(global("ompi_mpi_comm_world"));
  g.self = reinterpret_cast<MPI_Comm>(global("ompi_mpi_comm_self"));
  g.null = reinterpret_cast<MPI_Comm>(global("ompi_mpi_comm_null"));
  g.request_null = reinterpret_cast<MPI_Request>(global("ompi_request_null"));
  g.byte = reinterpret_cast<MPI_Datatype>(global("ompi_mpi_byte"));
  g.datatype_null = reinterpret_cast<MPI_Datatype>(global("ompi_mpi_datatype_null"));
  if (!g.world || !g.self || !g.null || !g.request_null || !g.byte || !g.datatype_null) return false;
#define COLLSCOPE_OP(upper, lower)                                                                   \
  if (void* h = global("ompi_mpi_op_" #lower))                                                      \
    g.ops[g.op_count++] = {reinterpret_cast<MPI_Op>(h), pool_intern("MPI_" #upper)};
#else
  g.world = MPI_COMM_WORLD;
  g.self = MPI_COMM_SELF;
  g.null = MPI_COMM_NULL;
  g.request_null = MPI_REQUEST_NULL;
  g.byte = MPI_BYTE;
  g.datatype_null = MPI_DATATYPE_NULL;
#define COLLSCOPE_OP(upper, lower) g.ops[g.op_count++] = {MPI_##upper, pool_intern("MPI_" #upper)};
#endif
  COLLSCOPE_MPI_REDUCTION_OPS(COLLSCOPE_OP)
#undef COLLSCOPE_OP
  return true;
}

std::uint32_t reduce_op_name(MPI_Op op) {
  for (int i = 0; i < g.op_count; ++i)
    if (g.ops[i].handle == op) return g.ops[i].name;
  static const std::uint32_t user = pool_intern("user_op");
  return user;
}

// ---- datatypes: size and pooled name, cached once per predefined handle --------------------------------------

struct TypeInfo {
  std::atomic<RequestKey> handle{0};
  int size = 0;
  std::uint32_t name = 0;
};
constexpr int kTypeCache = 64;
TypeInfo g_types[kTypeCache];
std::atomic<int> g_type_count{0};
std::mutex g_type_mutex;

struct TypeFacts {
  int size = 0;
  std::uint32_t name = 0;
};

// Predefined types are cached (a few loads); derived ones are asked each time (their handles are freed and
// reused). The null datatype is never passed to MPI (that would raise an MPI error in the job).
TypeFacts type_facts(MPI_Datatype t) {
  if (t == g.datatype_null) return {};
  const RequestKey k = key_of(t);
  const int n = g_type_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_types[i].handle.load(std::memory_order_relaxed) == k) return {g_types[i].size, g_types[i].name};
  int size = 0;
  if (real<kMpi_Type_size>()(t, &size) != MPI_SUCCESS) return {};
  int num_int = 0, num_addr = 0, num_types = 0, combiner = 0;
  real<kMpi_Type_get_envelope>()(t, &num_int, &num_addr, &num_types, &combiner);
  char name[MPI_MAX_OBJECT_NAME + 1] = {};
  int len = 0;
  real<kMpi_Type_get_name>()(t, name, &len);
  const std::uint32_t id = pool_intern(len > 0 ? std::string_view(name, static_cast<std::size_t>(len)) : "derived");
  if (combiner == MPI_COMBINER_NAMED) {
    std::lock_guard lock(g_type_mutex);
    const int i = g_type_count.load(std::memory_order_relaxed);
    if (i < kTypeCache) {
      g_types[i].size = size;
      g_types[i].name = id;
      g_types[i].handle.store(k, std::memory_order_relaxed);
      g_type_count.store(i + 1, std::memory_order_release);
    }
  }
  return {size, id};
}

// ---- communicators ----------------------------------------------------------------------------------------

int comm_size(MPI_Comm comm) {
  int n = 0;
  real<kMpi_Comm_size>()(comm, &n);
  return n;
}

std::vector<std::int32_t> world_members(MPI_Comm comm, int size) {
  std::vector<std::int32_t> members(static_cast<std::size_t>(size));
  MPI_Group group, world_group;
  if (real<kMpi_Comm_group>()(comm, &group) != MPI_SUCCESS) return {};
  real<kMpi_Comm_group>()(g.world, &world_group);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
  real<kMpi_Group_translate_ranks>()(group, size, ranks.data(), world_group, members.data());
  real<kMpi_Group_free>()(&group);
  real<kMpi_Group_free>()(&world_group);
  return members;
}

std::uint32_t register_comm(MPI_Comm comm, const char* how, std::optional<std::uint32_t> parent_slot,
                            std::optional<std::int64_t> color, std::uint64_t extra_key = 0) {
  if (comm == g.null) return 0;
  CommDescription d;
  real<kMpi_Comm_size>()(comm, &d.size);
  real<kMpi_Comm_rank>()(comm, &d.rank);
  int inter = 0;
  real<kMpi_Comm_test_inter>()(comm, &inter);
  d.intercommunicator = inter != 0;
  d.members = world_members(comm, d.size);
  d.color = color;
  std::uint64_t key = hash_bytes(how, std::strlen(how));
  if (parent_slot && *parent_slot) {
    CommSlot& parent = comm_slot(*parent_slot);
    d.parent = parent.key;
    // The k-th creation call on a parent is collective over the parent, so k is the same on all its ranks.
    const std::uint32_t k = parent.children.fetch_add(1);
    key = hash_bytes(&parent.key, sizeof parent.key, key);
    key = hash_bytes(&k, sizeof k, key);
    d.name = fmt::format("{}({}#{}{})", how, parent.name, k, color ? fmt::format(",color={}", *color) : "");
  } else {
    d.name = how;
  }
  key = hash_bytes(&extra_key, sizeof extra_key, key);
  key = hash_bytes(d.members.data(), d.members.size() * sizeof(std::int32_t), key);
  d.key = key;
  return comm_register(handle_ptr(comm), std::move(d));
}

// Communicators made by calls not interposed (MPI_Comm_idup, sessions, ...): registered on first use.
std::uint32_t slot_of(MPI_Comm comm) {
  if (std::uint32_t s = comm_lookup(handle_ptr(comm))) return s;
  static std::mutex m;
  static std::unordered_map<std::uint64_t, std::uint32_t> seen;  // member-set hash -> count, for distinct keys
  const auto members = world_members(comm, comm_size(comm));
  const std::uint64_t h = hash_bytes(members.data(), members.size() * sizeof(std::int32_t));
  std::uint32_t n;
  {
    std::lock_guard lock(m);
    n = seen[h]++;
  }
  return register_comm(comm, "comm", std::nullopt, std::nullopt, (std::uint64_t(n) << 32) ^ 0x9e3779b9U);
}

// Neighbourhood collectives move data to the out-neighbours of the communicator's topology.
int out_degree(MPI_Comm comm) {
  int topology = MPI_UNDEFINED;
  real<kMpi_Topo_test>()(comm, &topology);
  if (topology == MPI_CART) {
    int dims = 0;
    real<kMpi_Cartdim_get>()(comm, &dims);
    return 2 * dims;
  }
  if (topology == MPI_GRAPH) {
    int rank = 0, n = 0;
    real<kMpi_Comm_rank>()(comm, &rank);
    real<kMpi_Graph_neighbors_count>()(comm, rank, &n);
    return n;
  }
  if (topology == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    real<kMpi_Dist_graph_neighbors_count>()(comm, &in, &out, &weighted);
    return out;
  }
  return 0;
}

// The world rank of `rank` in the communicator of `slot` (peers of point-to-point calls).
std::int32_t world_rank_of(std::uint32_t slot, int rank) {
  if (rank == MPI_PROC_NULL) return kPeerProcNull;
  const CommSlot& c = comm_slot(slot);
  if (rank < 0 || c.intercommunicator || static_cast<std::size_t>(rank) >= c.members.size()) return kPeerUnknown;
  return c.members[static_cast<std::size_t>(rank)];
}

// ---- what a call is: the generated wrappers fill a Shape from the arguments' roles (functions.txt) -----------

enum class Per : std::uint8_t { Call, CommSize, OutDegree };
enum class Side : std::uint8_t { Both, Send, Recv };

// The bytes of a collective: `elements` of `type`, or a count array (one entry per rank or out-neighbour) of
// `type` or of `types`; all of it times the communicator's size or out-degree where `per` says so.
struct Amount {
  std::int64_t elements = 0;
  Per per = Per::Call;
  const void* counts = nullptr;  // int[] or, in large-count calls, MPI_Count[]
  bool counts_large = false;
  const MPI_Datatype* types = nullptr;
  MPI_Datatype type{};
  bool typed = false;
  void set_type(MPI_Datatype t) {
    type = t;
    typed = true;
  }
};

constexpr int kNoRank = MPI_PROC_NULL - 1000;  // not a rank: the call has no such side

struct Shape {
  Op op = Op::Unknown;
  MPI_Comm comm{};
  const void* sendbuf = nullptr;
  const void* recvbuf = nullptr;
  std::int64_t count = 0;     // as passed (`count` column)
  bool count_is_sum = false;  // count = the summed count array of the amount
  Amount amount;
  Side amount_side = Side::Both;
  Amount in_place;  // the amount when the buffer on amount_side is MPI_IN_PLACE (none: bytes 0)
  MPI_Op reduce{};
  bool reduces = false;
  int root = -1;
  // point-to-point
  int dst = kNoRank, src = kNoRank;
  int send_tag = 0, recv_tag = 0;
  std::int64_t recv_count = 0;
  MPI_Datatype recv_type{};
  bool recv_typed = false;
  MPI_Status* status = nullptr;
  MPI_Message* message = nullptr;
  bool receives = false;  // MPI_Mrecv: receives without a source argument
  void set_reduce(MPI_Op op) {
    reduce = op;
    reduces = true;
  }
  void set_recv_type(MPI_Datatype t) {
    recv_type = t;
    recv_typed = true;
  }
  bool sends() const { return dst != kNoRank; }
  bool has_source() const { return src != kNoRank; }
};

std::int64_t count_at(const Amount& a, int i) {
  return a.counts_large ? static_cast<std::int64_t>(static_cast<const MPI_Count*>(a.counts)[i])
                        : static_cast<std::int64_t>(static_cast<const int*>(a.counts)[i]);
}

// Fills count, bytes and datatype of `e` from the shape (the communicator's slot is in e.comm_slot).
void resolve_amount(const Shape& s, Event& e) {
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

// Header fields every MPI event shares.
Event base_event(EventKind kind, const Shape& s, std::uint32_t slot) {
  Event e{};
  e.kind = kind;
  e.op = static_cast<std::uint8_t>(s.op);
  e.comm_slot = slot;
  e.root = s.root;
  e.peer = -1;
  e.sendbuf = s.sendbuf == MPI_IN_PLACE ? 0 : reinterpret_cast<std::uint64_t>(s.sendbuf);
  e.recvbuf = s.recvbuf == MPI_IN_PLACE ? 0 : reinterpret_cast<std::uint64_t>(s.recvbuf);
  if (s.sendbuf == MPI_IN_PLACE || s.recvbuf == MPI_IN_PLACE) e.flags |= kFlagInPlace;
  return e;
}

// A collective, resolved and numbered (before the call: see recorder.hpp).
Event collective_event(const Shape& s) {
  const std::uint32_t slot = slot_of(s.comm);
  Event e = base_event(EventKind::Collective, s, slot);
  resolve_amount(s, e);
  if (s.reduces) e.reduce_op = reduce_op_name(s.reduce);
  e.seq = take_seq(slot, SeqSpace::Collective);
  return e;
}

// A point-to-point call's send side and (what is known before the call of) its receive side. Numbered unless
// it is a persistent request's description (numbered at each start).
Event message_event(const Shape& s, bool numbered = true) {
  const std::uint32_t slot = slot_of(s.comm);
  Event e = base_event(EventKind::PointToPoint, s, slot);
  e.count = s.count;
  const TypeFacts t = s.amount.typed ? type_facts(s.amount.type) : TypeFacts{};
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
  return e;
}

// MPI_Mprobe's message handle does not say its communicator: the probe's is remembered for the MPI_Mrecv
// that follows on the same thread (the last few probes).
struct ProbedMessage {
  RequestKey message = 0;
  MPI_Comm comm{};
};
thread_local ProbedMessage t_probed[8];
thread_local unsigned t_probed_next = 0;

void remember_message(MPI_Message m, MPI_Comm comm) {
  t_probed[t_probed_next++ % 8] = {key_of(m), comm};
}

MPI_Comm comm_of_message(MPI_Message m) {
  for (const auto& p : t_probed)
    if (p.message == key_of(m) && p.message != 0) return p.comm;
  return g.null;
}

// What a status says about a receive: its source (a world rank), tag and size.
void apply_status(Event& e, const MPI_Status& st) {
  if (!(e.flags & kFlagReceives) || e.mpi.recv_peer == kPeerProcNull) return;
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

// ---- the kinds of wrapper (generated from functions.txt) ---------------------------------------------------

bool traceable(MPI_Comm comm) { return comm != g.null; }

template <typename Call>
int collective_blocking(Shape& s, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e = collective_event(s);
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

template <typename Call>
int collective_posted(Shape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e = collective_event(s);
  const std::uint64_t t0 = ticks();
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  post(e, t0, rc, key_of(*request));
  return rc;
}

// A persistent call: remembered at its initialisation; each MPI_Start posts one (custom_Start).
template <typename Call>
int collective_persistent(Shape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  const std::uint32_t slot = slot_of(s.comm);
  Event e = base_event(EventKind::Collective, s, slot);
  resolve_amount(s, e);
  if (s.reduces) e.reduce_op = reduce_op_name(s.reduce);
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  if (rc == MPI_SUCCESS) persistent_add(key_of(*request), e);
  return rc;
}

// Point-to-point. A receive's status is read also when the caller ignores it (the wrapper's call passes
// s.status, which points at a status of the wrapper's own then): the source of a wildcard receive, the tag and
// the size that arrived are in it.
template <typename Call>
int message_blocking(Shape& s, Call&& call) {
  if (s.message && !s.has_source()) s.comm = comm_of_message(*s.message);  // MPI_Mrecv: the probe's communicator
  if (!traceable(s.comm)) return call();
  Event e = message_event(s);
  MPI_Status own;
  if (s.status == MPI_STATUS_IGNORE) s.status = &own;
  return record_blocking(e, false, call, [&](Event& done) {
    if (done.status != MPI_SUCCESS || !s.status) return;
    apply_status(done, *s.status);
    if (s.message && s.has_source()) remember_message(*s.message, s.comm);  // MPI_Mprobe
  });
}

template <typename Call>
int message_posted(Shape& s, MPI_Request* request, Call&& call) {
  if (s.message) s.comm = comm_of_message(*s.message);  // MPI_Imrecv
  if (!traceable(s.comm)) return call();
  Event e = message_event(s);
  const std::uint64_t t0 = ticks();
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  post(e, t0, rc, key_of(*request));
  return rc;
}

template <typename Call>
int message_persistent(Shape& s, MPI_Request* request, Call&& call) {
  if (!traceable(s.comm)) return call();
  Event e = message_event(s, false);
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  if (rc == MPI_SUCCESS) persistent_add(key_of(*request), e);
  return rc;
}

// MPI_Iprobe / MPI_Improbe: recorded (and numbered) only when they find a message, so polling loops add nothing.
template <typename Call>
int probe_polled(Shape& s, int* flag, Call&& call) {
  if (!traceable(s.comm)) return call();
  MPI_Status own;
  if (s.status == MPI_STATUS_IGNORE) s.status = &own;
  const std::uint64_t t0 = ticks();
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  const std::uint64_t t1 = ticks();
  if (rc != MPI_SUCCESS || !*flag) return rc;
  Event e = message_event(s);
  e.t0 = t0;
  e.t1 = t1;
  apply_status(e, *s.status);
  if (s.message) remember_message(*s.message, s.comm);
  record(e);
  return rc;
}

// A communicator made from `parent` (split, dup, cart_create, ...). MPI_COMM_NULL results (MPI_UNDEFINED colour)
// still advance the parent's creation index, which is part of the children's keys on every rank.
template <typename Call>
int comm_created(const char* how, MPI_Comm parent, MPI_Comm* newcomm, std::optional<std::int64_t> color,
                 Call&& call) {
  int rc;
  {
    TracedScope scope;
    rc = call();
  }
  if (rc == MPI_SUCCESS && recording() && traceable(parent)) {
    const std::uint32_t p = slot_of(parent);
    if (*newcomm != g.null) register_comm(*newcomm, how, p, color);
    else comm_slot(p).children.fetch_add(1);
  }
  return rc;
}
