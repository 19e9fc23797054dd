// What this rank's own code measured about the MPI collectives it called: the ground truth the
// tracer's trace is compared with. Thread safe (main thread and background thread both record).
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace collscope::sample {

enum class CommunicatorRole { world, horovod, process_set };

class CollectiveStats {
 public:
  using Clock = std::chrono::steady_clock;

  // One completed collective: op name as in the report ("allreduce", "iallreduce", "bcast",
  // "barrier"), payload bytes (count x datatype size), wall time from the call to its completion.
  void record(const char* op, CommunicatorRole role, std::uint64_t bytes, Clock::duration elapsed);

  // {"collectives": {...}, "collective_bytes": {...}, "collective_ms": {...},
  //  "comm_calls_by_communicator": {"world": n, "horovod": n, "process_set": n}}
  void write_json(nlohmann::json& report) const;

 private:
  struct OpTotals {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    double milliseconds = 0.0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, OpTotals> by_op_;
  std::map<std::string, std::uint64_t> calls_by_communicator_{
      {"world", 0}, {"horovod", 0}, {"process_set", 0}};
};

// Timed MPI calls that record into a CollectiveStats. They abort the job on an MPI error (the
// default MPI error handler does the same).
class CollectiveCaller {
 public:
  explicit CollectiveCaller(CollectiveStats& stats) : stats_(stats) {}

  void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm, CommunicatorRole role);
  // MPI_Iallreduce followed by MPI_Wait; the time runs from the call to the end of the wait.
  void iallreduce_wait(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm, CommunicatorRole role);
  void bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
             CommunicatorRole role);
  void barrier(MPI_Comm comm, CommunicatorRole role);
  void allgather(const void* send, int count, MPI_Datatype type, void* recv, MPI_Comm comm,
                 CommunicatorRole role);

 private:
  CollectiveStats& stats_;
};

}  // namespace collscope::sample
