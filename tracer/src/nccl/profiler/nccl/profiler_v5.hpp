#pragma once
// The NCCL profiler plugin interface v5 (NCCL 2.28), as NVIDIA's ext-profiler/example/nccl/profiler_v5.h lays it
// out: adds the API events (GroupApi, CollApi, P2pApi, KernelLaunch) and a 64-bit event type; a task's parent is
// its API event. The state arguments are v4's.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common.hpp"
#include "profiler_v4.hpp"

namespace collscope::nccl_profiler {

struct EventDescrV5 {
  std::uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      int graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
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
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
      void* parentGroup;
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

using EventStateArgsV5 = EventStateArgsV4;  // unchanged from v4

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgsV5* eStateArgs);
  Result (*finalize)(void* context);
};

}  // namespace collscope::nccl_profiler
