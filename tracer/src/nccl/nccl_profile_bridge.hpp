#pragma once
// The recorder bridge: how the NCCL profiler plugin, which NCCL loads (dlopen, RTLD_LOCAL) and not we, records
// into the same trace file as the preload.
//
// This file is compiled into both libraries. The preload exports collscope_recorder_bridge_v1(); a plugin that
// finds it (dlsym(RTLD_DEFAULT)) records through the preload's recorder, so a job traced both ways has one file
// and one row per collective. A plugin that finds no preload uses its own copy of the recorder (the same runtime
// code, linked into it) and writes the rank file itself.
//
// The interposer side (src/preload/nccl/nccl_interpose.cpp) tells the plugin which call a profiler event belongs to:
// the call this thread is inside (NCCL >= 2.28 reports API events synchronously inside it), the communicator
// being created on this thread (the plugin's init runs inside ncclCommInitRank), and NCCL's own per-function
// sequence numbers.
#include <collscope/store/schema.hpp>

#include <cstdint>

#include "core/event.hpp"
#include "nccl_profile_record.hpp"

namespace collscope::tracer::nccl_profile {

// Changes whenever the bridge, Event or the records change layout: a plugin and a preload from different builds
// refuse each other (the plugin then stays silent) instead of misreading.
inline constexpr std::uint32_t kBridgeAbi = 0x0c5b0000u + sizeof(Event) + 1;

struct RecorderBridge {
  std::uint32_t abi;   // kBridgeAbi
  std::uint32_t size;  // sizeof(RecorderBridge)
  int (*recording)();                           // events are recorded (not stopped, not a forked child)
  void (*start)(int nccl_rank, int nccl_size);  // open the rank file if nothing did yet
  std::uint64_t (*ticks)();                     // the recorder's timestamp (clock.hpp)
  std::uint32_t (*intern)(const char* text);    // string pool id
  void (*emit)(const void* event);              // one 128-byte Event (Collective) or record (Extension)
  int (*current_call)(std::uint32_t* comm_slot, std::int64_t* seq);  // the NCCL call this thread is inside
  std::uint64_t (*creation_token)();            // the communicator being created on this thread, 0 none
  int (*interposer_active)();                   // the interposer has seen NCCL in this process
  std::uint32_t (*register_comm)(const void* handle, std::uint64_t key, int size, int rank, const char* name);
  void (*unregister_comm)(const void* handle);
  void (*set_meta)(const char* key, const char* value);
  void (*warn)(const char* what);               // one line on stderr, once per kind
};

// The bridge to this library's own recorder.
const RecorderBridge* local_bridge();

// ---- interposer side ----

// Opens the rank file if nothing did yet, for a process that never calls MPI_Init (NCCL-only jobs): world rank and
// size from the launcher's environment, else NCCL's; meta trace_started_by = `started_by`.
void start_recording(const char* started_by, int nccl_rank, int nccl_size);

// Marks the real NCCL call this thread is inside (nested scopes keep the outermost).
class CallScope {
 public:
  CallScope(std::uint32_t comm_slot, std::int64_t seq);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  bool outermost_;
};

// This thread is inside an NCCL call the interposer wrapped (copies NCCL makes then are its own, not the job's).
bool inside_nccl_call();

// Marks a communicator creation on this thread; created() binds the token the plugin's init took to the slot.
class CreationScope {
 public:
  CreationScope();
  ~CreationScope();
  CreationScope(const CreationScope&) = delete;
  CreationScope& operator=(const CreationScope&) = delete;
  void created(std::uint32_t comm_slot);

 private:
  std::uint64_t token_;
  std::uint64_t previous_;
};

// NCCL's function number of an operation (kNoFunc for operations NCCL does not count per function).
NcclFunc nccl_func(store::Op op);
// The next value of NCCL's per-function sequence number on `comm_slot` (comm->seqNumber[func]: NCCL counts
// every collective it enqueues with a task, i.e. on communicators of 2 or more ranks, count > 0); -1 when func
// is not counted.
std::int64_t take_nccl_seq(std::uint32_t comm_slot, NcclFunc func);

// Writer side: the slot a creation token was bound to, 0 when none (yet).
std::uint32_t slot_of_token(std::uint64_t token);

}  // namespace collscope::tracer::nccl_profile
