#include <collscope/store/schema.hpp>

#include <array>

namespace collscope::store {
namespace {
constexpr std::array<std::string_view, kOpCount> kOpNames = {
    "unknown",   "allreduce",      "iallreduce",           "bcast",    "reduce",    "allgather",
    "allgatherv", "gather",        "gatherv",              "scatter",  "scatterv",  "reduce_scatter",
    "reduce_scatter_block", "alltoall", "alltoallv",        "barrier",  "send",      "recv",
    // 1.2: every MPI communication call
    "ibarrier", "barrier_init", "ibcast", "bcast_init", "ireduce", "reduce_init", "allreduce_init", "igather",
    "gather_init", "igatherv", "gatherv_init", "iscatter", "scatter_init", "iscatterv", "scatterv_init", "iallgather",
    "allgather_init", "iallgatherv", "allgatherv_init", "ialltoall", "alltoall_init", "ialltoallv", "alltoallv_init",
    "alltoallw", "ialltoallw", "alltoallw_init", "ireduce_scatter", "reduce_scatter_init", "ireduce_scatter_block",
    "reduce_scatter_block_init", "scan", "iscan", "scan_init", "exscan", "iexscan", "exscan_init",
    "neighbor_allgather", "ineighbor_allgather", "neighbor_allgather_init", "neighbor_allgatherv",
    "ineighbor_allgatherv", "neighbor_allgatherv_init", "neighbor_alltoall", "ineighbor_alltoall",
    "neighbor_alltoall_init", "neighbor_alltoallv", "ineighbor_alltoallv", "neighbor_alltoallv_init",
    "neighbor_alltoallw", "ineighbor_alltoallw", "neighbor_alltoallw_init", "isend", "send_init", "bsend", "ibsend",
    "bsend_init", "ssend", "issend", "ssend_init", "rsend", "irsend", "rsend_init", "irecv", "recv_init", "sendrecv",
    "isendrecv", "sendrecv_replace", "isendrecv_replace", "probe", "iprobe", "mprobe", "improbe", "mrecv", "imrecv"};
}  // namespace

std::string_view op_name(Op op) {
  auto i = static_cast<std::size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : kOpNames[0];
}

std::optional<Op> op_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

Op blocking_form(Op op) {
  // The table is built once from the names: "iallreduce" and "allreduce_init" are forms of "allreduce".
  static const std::array<Op, kOpCount> base = [] {
    std::array<Op, kOpCount> b{};
    for (std::size_t i = 0; i < kOpNames.size(); ++i) {
      std::string_view name = kOpNames[i];
      if (name.ends_with("_init")) name.remove_suffix(5);
      b[i] = static_cast<Op>(i);
      if (name != kOpNames[i]) b[i] = op_from_name(name).value_or(b[i]);
      else if (name.size() > 1 && name[0] == 'i')
        if (auto blocking = op_from_name(name.substr(1))) b[i] = *blocking;
    }
    return b;
  }();
  const auto i = static_cast<std::size_t>(op);
  return i < base.size() ? base[i] : op;
}

double bus_bandwidth_factor(Op op, int ranks) {
  if (ranks <= 1) return 1.0;
  const double n = ranks;
  switch (blocking_form(op)) {
    case Op::Allreduce:
      return 2.0 * (n - 1) / n;
    case Op::Allgather:
    case Op::Allgatherv:
    case Op::ReduceScatter:
    case Op::ReduceScatterBlock:
    case Op::Alltoall:
    case Op::Alltoallv:
    case Op::Alltoallw:
    case Op::Gather:
    case Op::Gatherv:
    case Op::Scatter:
    case Op::Scatterv:
      return (n - 1) / n;
    default:
      return 1.0;  // broadcast, reduce, point-to-point, barrier
  }
}

bool is_synchronising(Op op) {
  switch (op) {
    case Op::Allreduce:
    case Op::Allgather:
    case Op::Allgatherv:
    case Op::ReduceScatter:
    case Op::ReduceScatterBlock:
    case Op::Alltoall:
    case Op::Alltoallv:
    case Op::Alltoallw:
    case Op::Barrier:
      return true;
    default:
      return false;
  }
}

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::Nccl: return "nccl";
    case Backend::Gloo: return "gloo";
    case Backend::Torch: return "torch";
    case Backend::Mpi: break;
  }
  return "mpi";
}

std::optional<Backend> backend_from_name(std::string_view name) {
  for (Backend b : {Backend::Mpi, Backend::Nccl, Backend::Gloo, Backend::Torch})
    if (backend_name(b) == name) return b;
  return std::nullopt;
}

std::string_view gpu_activity_kind_name(GpuActivityKind k) {
  switch (k) {
    case GpuActivityKind::Kernel: return "kernel";
    case GpuActivityKind::Memcpy: return "memcpy";
    case GpuActivityKind::Memset: return "memset";
    case GpuActivityKind::Sync: return "sync";
  }
  return "unknown";
}

}  // namespace collscope::store
