// collscope_annotation_v1() (collscope/tracer/annotation.h): the annotation table for jobs that cannot reach the
// preload through NVTX injection, such as a CPU-only Python job annotated by collscope's sitecustomize. The
// table's push and pop are the NVTX recording path itself (nvtx_recording.hpp) in collscope's own domain
// (store::kPythonAnnotationDomain, so that run/ tells them from ranges the job marks itself): one TSC read and one
// buffered record each, no system call, no allocation for names up to the inline text size (51 bytes).
#include <collscope/store/nvtx_domains.hpp>
#include <collscope/tracer/annotation.h>

#include <atomic>
#include <string_view>

#include "core/comm_registry.hpp"
#include "nvtx/nvtx_recording.hpp"
#include "core/recorder.hpp"
#include "core/runtime.hpp"
#include "core/string_pool.hpp"
#include "torch/gloo_interpose.hpp"

using namespace collscope::tracer;
namespace store = collscope::store;

namespace {

std::atomic<bool> g_attached{false};

// Opens the file of a process that has no MPI and no file yet (rank < 0: the launcher's environment's).
void start(int rank, int size) {
  if (g_phase.load(std::memory_order_relaxed) == kIdle && !g_attached.exchange(true))
    nvtx::start_runtime_if_alone(rank, size);
}

// The annotation's domain: its name's string pool id, interned once.
std::uint64_t annotation_domain() {
  static const std::uint64_t id = pool_intern(store::kPythonAnnotationDomain);
  return id;
}

int range_push(const char* name) {
  // The first range opens the file, if start() has not: not collscope_annotation_v1(), which a Python job calls when
  // it imports torch, often before it loads and initialises MPI (mpi4py, Horovod): MPI_Init should open an MPI
  // rank's file.
  start(-1, -1);
  return nvtx::push_name(annotation_domain(), name);
}
int range_pop() { return nvtx::pop(annotation_domain()); }

void set_meta(const char* key, const char* value) {
  if (key && *key && value) runtime_set_meta(key, value);
}

std::uint64_t now() { return ticks(); }

std::uint32_t register_group(std::uint64_t key, const char* backend, int rank, int size, const std::int32_t* members,
                             const char* name) {
  if (size <= 0 || rank < 0 || rank >= size || !members) return 0;
  CommDescription d;
  d.key = key;
  d.backend = backend && std::string_view(backend) == "gloo" ? store::Backend::Gloo : store::Backend::Torch;
  d.size = size;
  d.rank = rank;
  d.members.assign(members, members + size);
  d.name = name ? name : "";
  // The key is the group's identity in this process too: a handle no MPI or NCCL object can have (odd).
  const std::uint32_t comm = comm_register(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(key | 1)), d);
  // A gloo group's contexts were connected on this thread as it was created: its C++ allreduces (DDP's buckets)
  // are recorded from gloo itself (torch/gloo_interpose.cpp).
  gloo::bind_connected_contexts(d.backend == store::Backend::Gloo ? comm : 0, d);
  return comm;
}

int claim_buffer(std::uint32_t comm, std::uint64_t address) { return gloo::claim(comm, address) ? 1 : 0; }
void release_buffer(std::uint64_t address) { gloo::release(address); }

bool is_point_to_point(store::Op op) {
  const std::string_view n = store::op_name(store::blocking_form(op));
  return n == "send" || n == "recv" || n == "isend" || n == "irecv";
}

std::int64_t collective_issue(std::uint32_t comm, const char* op_name) {
  const auto op = op_name ? store::op_from_name(op_name) : std::nullopt;
  if (comm == 0 || !op) return -1;
  return take_seq(comm, is_point_to_point(*op) ? SeqSpace::PointToPoint : SeqSpace::Collective);
}

void collective(std::uint32_t comm, std::int64_t number, const char* op_name, std::int64_t count, std::int64_t bytes,
                const char* datatype, int peer_or_root, std::uint64_t issued, std::uint64_t returned,
                std::uint64_t completed, int status) {
  const auto op = op_name ? store::op_from_name(op_name) : std::nullopt;
  if (comm == 0 || number < 0 || !op || !recording()) return;
  const CommSlot& slot = comm_slot(comm);
  const auto world = [&](int group_rank) {
    return group_rank >= 0 && static_cast<std::size_t>(group_rank) < slot.members.size() ? slot.members[group_rank] : -1;
  };
  Event e{};
  e.op = static_cast<std::uint8_t>(*op);
  e.comm_slot = comm;
  e.seq = number;
  e.count = count;
  e.bytes = bytes;
  e.datatype = datatype && *datatype ? pool_intern(datatype) : 0;
  e.status = status;
  e.t0 = issued;
  e.t1 = completed;
  e.root = -1;
  e.peer = -1;
  if (store::blocking_form(*op) != *op || completed > returned) {  // async work: posted, completed later
    e.flags |= kFlagNonBlocking;
    e.mpi.post_end = returned;
  }
  const std::string_view name = store::op_name(store::blocking_form(*op));
  if (is_point_to_point(*op)) {
    e.kind = EventKind::PointToPoint;
    if (name == "send" || name == "isend") {
      e.flags |= kFlagSends;
      e.peer = world(peer_or_root);
      e.mpi.send_tag = 0;
    } else {
      e.flags |= kFlagReceives;
      e.mpi.recv_peer = world(peer_or_root);
      e.mpi.recv_tag = 0;
      e.mpi.recv_bytes = bytes;
      e.bytes = 0;
    }
  } else {
    e.kind = EventKind::Collective;
    e.root = peer_or_root;
  }
  record(e);
}

constexpr collscope_annotation_v1_t kTable = {1,      sizeof(collscope_annotation_v1_t),
                                              &range_push, &range_pop,
                                              &start,  &set_meta,
                                              &now,    &register_group,
                                              &collective_issue, &collective,
                                              &claim_buffer, &release_buffer};

}  // namespace

extern "C" __attribute__((visibility("default"))) const collscope_annotation_v1_t* collscope_annotation_v1(void) {
  return &kTable;
}
