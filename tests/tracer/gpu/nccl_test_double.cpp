// TEST DOUBLE of libnccl (same C ABI as nccl.h, no GPU): lets the CPU tests drive the NCCL interposer's
// communicator, sequence and group bookkeeping. Calls succeed and do nothing, except:
//   - ncclCommInitRank with nranks <= 0 fails with ncclInvalidArgument (an error to pass through);
//   - ncclAllReduce with count == 0 returns ncclInvalidUsage.
// Handles are small heap objects holding nranks/rank, so ncclCommCount/UserRank answer truthfully.
// With NCCL_PROFILER_PLUGIN set it also hosts that profiler plugin as NCCL does (nccl_double_profiler.hpp).
#include <nccl.h>

#include <cstring>

#include "nccl_double_profiler.hpp"

struct ncclComm {
  int nranks;
  int rank;
  nccl_double::Comm* profiled = nullptr;
};

namespace {
// The communicator id NCCL gives its profiler (the same on every rank): here FNV-1a of the unique id.
std::uint64_t id_hash(const ncclUniqueId& id) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : id.internal) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}
ncclComm* make_comm(int nranks, int rank, std::uint64_t comm_id, bool helper_thread) {
  auto* c = new ncclComm{nranks, rank, nccl_double::new_comm()};
  nccl_double::comm_created(c->profiled, comm_id, nranks, rank, helper_thread);
  return c;
}
void free_comm(ncclComm* c) {
  nccl_double::comm_destroyed(c->profiled);
  nccl_double::delete_comm(c->profiled);
  delete c;
}
}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  *version = 29999;  // 2.99.99: recognisably the test double's
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t rc) { return rc == ncclSuccess ? "no error" : "test double error"; }
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, "collscope-test-double-id", 24);
  return ncclSuccess;
}
// Internal helper: calling the exported ncclCommInitRank from here would go through the preload's wrapper
// (symbol interposition), which real NCCL avoids with hidden internal symbols.
static ncclResult_t init_rank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank) {
  if (nranks <= 0) return ncclInvalidArgument;
  *comm = make_comm(nranks, rank, id_hash(id), false);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init_rank(comm, nranks, id, rank);
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t*) {
  return init_rank(comm, nranks, id, rank);
}
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  for (int i = 0; i < ndev; ++i) comms[i] = make_comm(ndev, i, 0xa11u, true);
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm, ncclConfig_t*) {
  *newcomm = color < 0 ? nullptr : make_comm(1, 0, 0x5b117u + static_cast<unsigned>(color), false);
  (void)comm;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free_comm(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  free_comm(comm);  // not through ncclCommDestroy: see init_rank
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
using nccl_double::Func;
ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                           cudaStream_t st) {
  if (count == 0) return ncclInvalidUsage;
  nccl_double::call(c->profiled, Func::AllReduce, s, r, count, t, -1, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, ncclDataType_t t, int root, ncclComm_t c,
                           cudaStream_t st) {
  nccl_double::call(c->profiled, Func::Broadcast, s, r, count, t, root, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclBcast(void* b, size_t count, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  nccl_double::call(c->profiled, Func::Broadcast, b, b, count, t, root, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t, int root, ncclComm_t c,
                        cudaStream_t st) {
  nccl_double::call(c->profiled, Func::Reduce, s, r, count, t, root, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void* s, void* r, size_t count, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  nccl_double::call(c->profiled, Func::AllGather, s, r, count, t, -1, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                               cudaStream_t st) {
  nccl_double::call(c->profiled, Func::ReduceScatter, s, r, count, t, -1, -1, st);
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* s, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  nccl_double::call(c->profiled, Func::Send, s, nullptr, count, t, -1, peer, st);
  return ncclSuccess;
}
ncclResult_t ncclRecv(void* r, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  nccl_double::call(c->profiled, Func::Recv, nullptr, r, count, t, -1, peer, st);
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  nccl_double::group_start();
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  nccl_double::group_end();
  return ncclSuccess;
}

}  // extern "C"
