#pragma once
// The NCCL profiler plugin interface v3 (NCCL 2.26), as NVIDIA's ext-profiler/example/nccl/profiler_v3.h lays it
// out. v3 says nothing about the communicator at init, and its kernel channels carry no GPU timestamps.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common.hpp"

namespace collscope::nccl_profiler {

struct EventDescrV3 {
  std::uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      std::uint64_t commHash;
      std::uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nMaxChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      std::uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
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
    } kernelCh;
    struct {
      std::int64_t id;
      void* data;
    } netPlugin;
  };
};

union EventStateArgsV3 {
  struct {
    std::size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};

struct ProfilerV3 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV3* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgsV3* eStateArgs);
  Result (*finalize)(void* context);
};

}  // namespace collscope::nccl_profiler
