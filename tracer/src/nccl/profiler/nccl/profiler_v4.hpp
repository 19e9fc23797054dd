#pragma once
// The NCCL profiler plugin interface v4 (NCCL 2.27), as NVIDIA's ext-profiler/example/nccl/profiler_v4.h lays it
// out: init learns the communicator, kernel channels carry GPU timestamps (pTimer, the GPU's globaltimer, ns).
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common.hpp"

namespace collscope::nccl_profiler {

struct EventDescrV4 {
  std::uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      std::uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      std::uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      std::uint8_t channelId;
      std::uint64_t pTimer;  // GPU globaltimer, ns
    } kernelCh;
    struct {
      std::int64_t id;
      void* data;
    } netPlugin;
  };
};

union EventStateArgsV4 {
  struct {
    std::size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    std::uint64_t pTimer;
  } kernelCh;
};

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask, const char* commName, std::uint64_t commHash, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgsV4* eStateArgs);
  Result (*finalize)(void* context);
};

}  // namespace collscope::nccl_profiler
