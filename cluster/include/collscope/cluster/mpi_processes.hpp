#pragma once
// The processes a launcher started (`mpirun -np N collscope analyze RUN`, `srun`), talking over the MPI library of
// that launcher, opened at run time: collscope links no MPI library, and only the library that belongs to the
// launcher can talk to its processes (Open MPI's libmpi.so.40 under Open MPI's mpirun or PMIx, MPICH's
// libmpich.so.12 under Hydra's; COLLSCOPE_MPI_LIBRARY names another). Bytes only: what the processes exchange
// is encoded by whoever sends it.
#include <collscope/cluster/launcher_process.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace collscope::cluster {

class MpiProcesses {
 public:
  // Opens the launcher's MPI library and initialises it. Throws collscope::Error, one line, when no library opens,
  // when it is neither Open MPI's nor MPICH's kind, or when MPI sees fewer processes than the launcher started
  // (the library of another MPI than the launcher's).
  static std::unique_ptr<MpiProcesses> join(const LauncherProcess& launcher);
  ~MpiProcesses();  // MPI_Finalize
  MpiProcesses(const MpiProcesses&) = delete;
  MpiProcesses& operator=(const MpiProcesses&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& library() const { return library_; }  // the file opened, for the line that says the mode

  // Process 0's bytes to every process: process 0 passes them, the others get them back.
  std::string broadcast(std::string bytes);
  // One message to process 0, and process 0's receipt of the next message from `process`: messages from one
  // process arrive in the order it sent them.
  void send_to_root(std::string_view bytes);
  std::string receive_from(int process);

  struct Api;  // the library's functions and constants (mpi_processes.cpp)

 private:
  MpiProcesses() = default;
  std::unique_ptr<Api> api_;
  std::string library_;
  int rank_ = 0, size_ = 1;
};

}  // namespace collscope::cluster
