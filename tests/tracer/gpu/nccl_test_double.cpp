// TEST DOUBLE of libnccl (same C ABI as nccl.h, no GPU): lets the CPU tests drive the NCCL interposer's
// communicator, sequence and group bookkeeping. Calls succeed and do nothing, except:
//   - ncclCommInitRank with nranks <= 0 fails with ncclInvalidArgument (an error to pass through);
//   - ncclAllReduce with count == 0 returns ncclInvalidUsage.
// Handles are small heap objects holding nranks/rank, so ncclCommCount/UserRank answer truthfully.
#include <nccl.h>

#include <cstring>

struct ncclComm {
  int nranks;
  int rank;
};

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
static ncclResult_t init_rank(ncclComm_t* comm, int nranks, int rank) {
  if (nranks <= 0) return ncclInvalidArgument;
  *comm = new ncclComm{nranks, rank};
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  return init_rank(comm, nranks, rank);
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t*) {
  return init_rank(comm, nranks, rank);
}
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  for (int i = 0; i < ndev; ++i) comms[i] = new ncclComm{ndev, i};
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm, ncclConfig_t*) {
  *newcomm = color < 0 ? nullptr : new ncclComm{1, 0};
  (void)comm;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;  // not through ncclCommDestroy: see init_rank
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
ncclResult_t ncclAllReduce(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return count == 0 ? ncclInvalidUsage : ncclSuccess;
}
ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclBcast(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclSuccess; }
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

}  // extern "C"
