// TEST DOUBLE: NCCL's side of the profiler plugin interface (see nccl_double_profiler.hpp).
#include "nccl_double_profiler.hpp"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../../tracer/src/nccl/profiler/nccl/profiler.hpp"

namespace nccl_double {
namespace p = collscope::nccl_profiler;

namespace {

std::int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
std::uint64_t gpu_clock(std::int64_t host_ns) { return static_cast<std::uint64_t>(host_ns + kGpuClockOffsetNs); }
void wait_until(std::int64_t t) {
  while (now_ns() < t) std::this_thread::yield();
}

struct Plugin {
  int version = 0;
  p::ProfilerV5* v5 = nullptr;
  p::ProfilerV4* v4 = nullptr;
  p::ProfilerV3* v3 = nullptr;
};

Plugin load_plugin() {
  Plugin pl;
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  if (!path || !*path) return pl;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return pl;
  const char* cap = std::getenv("NCCL_TEST_DOUBLE_PROFILER_API");
  const int newest = cap && *cap ? std::atoi(cap) : 5;
  if (newest >= 5 && (pl.v5 = static_cast<p::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5")))) pl.version = 5;
  else if (newest >= 4 && (pl.v4 = static_cast<p::ProfilerV4*>(dlsym(lib, "ncclProfiler_v4")))) pl.version = 4;
  else if (newest >= 3 && (pl.v3 = static_cast<p::ProfilerV3*>(dlsym(lib, "ncclProfiler_v3")))) pl.version = 3;
  return pl;
}

const Plugin& plugin() {
  static const Plugin pl = load_plugin();
  return pl;
}

void logger(int, unsigned long, const char*, int, const char*, ...) {}

const char* func_name(Func f) {
  switch (f) {
    case Func::Broadcast: return "Broadcast";
    case Func::Reduce: return "Reduce";
    case Func::AllGather: return "AllGather";
    case Func::ReduceScatter: return "ReduceScatter";
    case Func::AllReduce: return "AllReduce";
    case Func::Send: return "Send";
    case Func::Recv: return "Recv";
  }
  return "Invalid";
}

// ncclDataType_t -> NCCL's name and size.
const char* type_name(int t) {
  static const char* names[] = {"ncclInt8",   "ncclUint8",   "ncclInt32",   "ncclUint32",  "ncclInt64",
                                "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"};
  return t >= 0 && t < 10 ? names[t] : "Unknown";
}
std::size_t type_size(int t) {
  static const std::size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return t >= 0 && t < 10 ? sizes[t] : 1;
}

// Generic start/stop/state over the loaded version.
void* start(void* ctx, p::EventDescrV5& d) {
  const Plugin& pl = plugin();
  void* h = nullptr;
  if (pl.v5) {
    pl.v5->startEvent(ctx, &h, &d);
  } else if (pl.v4 || pl.v3) {
    // What NCCL's v4/v3 shims pass: the older layouts, API events not forwarded, the group as task parent.
    if (d.type == p::kCollApi || d.type == p::kP2pApi || d.type == p::kGroupApi) return nullptr;
    if (pl.v4) {
      p::EventDescrV4 o{};
      o.type = static_cast<std::uint8_t>(d.type);
      o.parentObj = d.parentObj;
      o.rank = d.rank;
      if (d.type == p::kColl) {
        o.parentObj = d.coll.parentGroup;
        o.coll = {d.coll.seqNumber, d.coll.func, d.coll.sendBuff, d.coll.recvBuff, d.coll.count, d.coll.root,
                  d.coll.datatype, d.coll.nChannels, d.coll.nWarps, d.coll.algo, d.coll.proto};
      } else if (d.type == p::kP2p) {
        o.parentObj = d.p2p.parentGroup;
        o.p2p = {d.p2p.func, d.p2p.buff, d.p2p.datatype, d.p2p.count, d.p2p.peer, d.p2p.nChannels};
      } else if (d.type == p::kProxyOp) {
        std::memcpy(&o.proxyOp, &d.proxyOp, sizeof o.proxyOp);
      } else if (d.type == p::kProxyStep) {
        o.proxyStep.step = d.proxyStep.step;
      } else if (d.type == p::kKernelCh) {
        o.kernelCh = {d.kernelCh.channelId, d.kernelCh.pTimer};
      }
      pl.v4->startEvent(ctx, &h, &o);
    } else {
      p::EventDescrV3 o{};
      o.type = static_cast<std::uint8_t>(d.type);
      o.parentObj = d.parentObj;
      o.rank = d.rank;
      if (d.type == p::kColl) {
        o.parentObj = d.coll.parentGroup;
        o.coll = {nullptr, 0, d.coll.seqNumber, d.coll.func, d.coll.sendBuff, d.coll.recvBuff, d.coll.count,
                  d.coll.root, d.coll.datatype, d.coll.nChannels, d.coll.nWarps, d.coll.algo, d.coll.proto};
      } else if (d.type == p::kP2p) {
        o.parentObj = d.p2p.parentGroup;
        o.p2p = {nullptr, 0, d.p2p.func, d.p2p.buff, d.p2p.datatype, d.p2p.count, d.p2p.peer};
      } else if (d.type == p::kProxyOp) {
        std::memcpy(&o.proxyOp, &d.proxyOp, sizeof o.proxyOp);
      } else if (d.type == p::kProxyStep) {
        o.proxyStep.step = d.proxyStep.step;
      } else if (d.type == p::kKernelCh) {
        o.kernelCh.channelId = d.kernelCh.channelId;
      }
      pl.v3->startEvent(ctx, &h, &o);
    }
  }
  return h;
}

void stop(void* h) {
  if (!h) return;
  const Plugin& pl = plugin();
  if (pl.v5) pl.v5->stopEvent(h);
  else if (pl.v4) pl.v4->stopEvent(h);
  else if (pl.v3) pl.v3->stopEvent(h);
}

void state(void* h, int s, std::size_t trans, std::uint64_t ptimer) {
  if (!h) return;
  const Plugin& pl = plugin();
  p::EventStateArgsV5 a{};
  if (s == p::kKernelChStop) a.kernelCh.pTimer = ptimer;
  else a.proxyStep.transSize = trans;
  if (pl.v5) pl.v5->recordEventState(h, s, &a);
  else if (pl.v4) pl.v4->recordEventState(h, s, &a);
  else if (pl.v3 && s != p::kKernelChStop) {  // NCCL's v3 shim forwards proxy states only, with empty arguments
    p::EventStateArgsV3 a3{};
    pl.v3->recordEventState(h, s, &a3);
  }
}

struct Task {
  Func func;
  const void* sendbuf;
  void* recvbuf;
  std::size_t count;  // as NCCL's task has it (allgather/broadcast: bytes of ncclInt8)
  int datatype;
  int root, peer;
  void* api = nullptr;  // the API event handle (v5)
  std::size_t bytes() const { return count * type_size(datatype); }
  bool p2p() const { return func == Func::Send || func == Func::Recv; }
};

struct ProxyWork {
  void* task;
  int channels;
  int peer_send, peer_recv;
};

thread_local int t_group_depth = 0;
thread_local std::vector<std::pair<Comm*, Task>> t_group_tasks;

}  // namespace

struct Comm {
  void* ctx = nullptr;
  int mask = 0;
  int nranks = 1, rank = 0;
  std::uint64_t seq[8] = {};
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<ProxyWork> work;
  bool stopping = false;
  std::thread proxy;

  void proxy_loop() {
    for (;;) {
      ProxyWork w;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !work.empty(); });
        if (work.empty()) return;
        w = work.front();
        work.pop_front();
      }
      run(w);
    }
  }

  void run(const ProxyWork& w) {
    const int pid = ::getpid();
    if (mask & (p::kProxyOp | p::kProxyStep)) {
      for (int c = 0; c < w.channels; ++c)
        for (int is_send : {1, 0}) {
          p::EventDescrV5 d{};
          d.type = p::kProxyOp;
          d.parentObj = w.task;
          d.rank = rank;
          d.proxyOp = {pid, static_cast<std::uint8_t>(c), is_send ? w.peer_send : w.peer_recv, 4,
                       static_cast<int>(kChunkBytes), is_send};
          void* op = start(ctx, d);
          for (int s = 0; s < 4; ++s) {
            p::EventDescrV5 sd{};
            sd.type = p::kProxyStep;
            sd.parentObj = op;
            sd.proxyStep.step = s;
            void* step = start(ctx, sd);
            state(step, is_send ? 9 : 10, kChunkBytes, 0);  // SendWait / RecvWait with the step's bytes
            stop(step);
          }
          stop(op);
        }
    }
    if (!(mask & p::kKernelCh)) return;
    const std::int64_t t0 = now_ns();  // the kernel starts on every channel at t0 (GPU clock: t0 + offset)
    std::vector<void*> channels;
    wait_until(t0 + 2'000);
    for (int c = 0; c < w.channels; ++c) {
      p::EventDescrV5 d{};
      d.type = p::kKernelCh;
      d.parentObj = w.task;
      d.kernelCh = {static_cast<std::uint8_t>(c), gpu_clock(t0)};
      channels.push_back(start(ctx, d));
    }
    for (int c = 0; c < w.channels; ++c) {
      const std::int64_t end = t0 + (c + 1) * kChannelNs;
      wait_until(end + 2'000);
      state(channels[c], p::kKernelChStop, 0, gpu_clock(end));
      stop(channels[c]);
    }
  }
};

namespace {

int channels_of(const Task& t) { return t.p2p() ? 1 : t.bytes() < 65536 ? 2 : 4; }

void launch(std::vector<std::pair<Comm*, Task>>& tasks) {
  // NCCL's planner orders a group's collectives by size, largest first.
  std::stable_sort(tasks.begin(), tasks.end(), [](auto& a, auto& b) { return a.second.bytes() > b.second.bytes(); });
  for (auto& [comm, t] : tasks) {
    if (!comm->ctx) continue;
    p::EventDescrV5 g{};
    g.type = p::kGroup;
    void* group = comm->mask & p::kGroup ? start(comm->ctx, g) : nullptr;
    p::EventDescrV5 d{};
    d.parentObj = t.api;
    d.rank = comm->rank;
    const bool small = t.bytes() < 65536;
    if (t.p2p()) {
      d.type = p::kP2p;
      d.p2p = {func_name(t.func), t.func == Func::Send ? const_cast<void*>(t.sendbuf) : t.recvbuf,
               type_name(t.datatype), t.count, t.peer,
               static_cast<std::uint8_t>(channels_of(t)), group};
    } else {
      d.type = p::kColl;
      d.coll = {comm->seq[static_cast<int>(t.func)]++, func_name(t.func), t.sendbuf, t.recvbuf, t.count, t.root,
                type_name(t.datatype), static_cast<std::uint8_t>(channels_of(t)), 16, small ? "TREE" : "RING",
                small ? "LL" : "SIMPLE", group};
    }
    void* task = start(comm->ctx, d);
    stop(task);
    stop(group);
    if (task) {
      std::lock_guard lock(comm->mutex);
      comm->work.push_back({task, channels_of(t), (comm->rank + 1) % comm->nranks,
                            (comm->rank + comm->nranks - 1) % comm->nranks});
      comm->wake.notify_one();
    }
  }
  tasks.clear();
}

}  // namespace

Comm* new_comm() { return new Comm(); }
void delete_comm(Comm* comm) { delete comm; }

void comm_created(Comm* comm, std::uint64_t comm_id, int nranks, int rank, bool on_helper_thread) {
  comm->nranks = nranks;
  comm->rank = rank;
  const Plugin& pl = plugin();
  if (!pl.version) return;
  auto init = [&] {
    if (pl.v5) pl.v5->init(&comm->ctx, comm_id, &comm->mask, "double", 1, nranks, rank, logger);
    else if (pl.v4) pl.v4->init(&comm->ctx, &comm->mask, "double", comm_id, 1, nranks, rank, logger);
    else pl.v3->init(&comm->ctx, &comm->mask);
  };
  // NCCL initialises the communicators of ncclCommInitAll (a group) on helper threads.
  if (on_helper_thread) std::thread(init).join();
  else init();
  if (comm->ctx) comm->proxy = std::thread([comm] { comm->proxy_loop(); });
}

void comm_destroyed(Comm* comm) {
  if (!comm->ctx) return;
  {
    std::lock_guard lock(comm->mutex);
    comm->stopping = true;
  }
  comm->wake.notify_one();
  comm->proxy.join();
  const Plugin& pl = plugin();
  if (pl.v5) pl.v5->finalize(comm->ctx);
  else if (pl.v4) pl.v4->finalize(comm->ctx);
  else pl.v3->finalize(comm->ctx);
  comm->ctx = nullptr;
}

void call(Comm* comm, Func func, const void* sendbuf, void* recvbuf, std::size_t count, int datatype, int root,
          int peer, void* stream) {
  // One-rank communicators copy without a task; empty collectives are dropped: no events (as NCCL).
  if (!comm || !comm->ctx || comm->nranks < 2 || count == 0) return;
  Task t{func, sendbuf, recvbuf, count, datatype, root, peer};
  const bool p2p = t.p2p();
  if (p2p ? (comm->mask & p::kP2pApi) : (comm->mask & p::kCollApi)) {
    p::EventDescrV5 d{};
    d.rank = comm->rank;
    if (p2p) {
      d.type = p::kP2pApi;
      d.p2pApi = {func_name(func), count, type_name(datatype), stream, false};
    } else {
      d.type = p::kCollApi;
      d.collApi = {func_name(func), count, type_name(datatype), root, stream, false};
    }
    t.api = start(comm->ctx, d);
    stop(t.api);
  }
  if (func == Func::AllGather || func == Func::Broadcast) {  // NCCL's task counts bytes for these
    t.count *= type_size(datatype);
    t.datatype = 0;  // ncclInt8
  }
  if (t_group_depth > 0) {
    t_group_tasks.emplace_back(comm, t);
    return;
  }
  std::vector<std::pair<Comm*, Task>> one{{comm, t}};
  launch(one);
}

void group_start() { ++t_group_depth; }

void group_end() {
  if (t_group_depth > 0 && --t_group_depth == 0) launch(t_group_tasks);
}

}  // namespace nccl_double
