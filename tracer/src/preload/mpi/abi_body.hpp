// The MPI wrappers' machinery for one ABI: handles, datatypes, communicators. Included by mpi/abi_<name>.cpp inside
// that ABI's namespace (then mpi/abi_collectives.hpp, abi_messages.hpp, the generated wrappers, abi_custom.hpp),
// after mpi/abi_prelude.hpp and the ABI's own <mpi.h>, with COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME set to 1 where the
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
