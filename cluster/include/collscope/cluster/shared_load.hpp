#pragma once
// One run loaded by every process of an MPI job (`mpirun -np N collscope analyze RUN`): each reads a share of the
// rank files, process 0 assembles the run (run/run_share.hpp), the same Run one process would load.
#include <collscope/cluster/mpi_processes.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::cluster {

// Which process reads which file: the largest first, each to the process with the fewest bytes so far (ties to
// the lowest process), so that uneven rank files balance. file_bytes by file; the result by file too.
std::vector<int> share_out_files(const std::vector<std::uintmax_t>& file_bytes, int processes);

// Loader threads for one of `local_processes` processes on this host: the CPUs it may run on, shared with the
// others on the host unless a launcher bound it to fewer CPUs than the host has (then they are its own). At least 1.
int loader_threads_per_process(int local_processes);

struct SharedLoad {
  std::optional<run::Run> run;  // at process 0; nullopt at the others
  // At process 0, by process: the files each read, and the bytes each sent (0 for process 0, which keeps its own).
  std::vector<std::size_t> files_per_process, bytes_per_process;
  // Files another process could not read (another host's filesystem, another working directory) that process 0
  // read itself; they are not in files_per_process.
  std::size_t files_read_again = 0;
};

// Process 0 lists RUN_DIR's rank files and shares them out; every process reads its share with `options` and sends
// it to process 0, which reads again itself what another could not. Throws collscope::InputError at process 0
// (only) when the run cannot be read, as RunLoader does; every process returns, so none waits for another that
// stopped.
SharedLoad load_run_shared(const std::string& run_dir, const run::LoadOptions& options, MpiProcesses& processes);

}  // namespace collscope::cluster
