#pragma once
// Whether this process is one of several a launcher started (`mpirun -np N collscope analyze RUN`, `srun`), read
// from the variables the launchers set, without MPI: collscope links no MPI library.
#include <optional>
#include <string>

namespace collscope::cluster {

struct LauncherProcess {
  int rank = 0;          // this process among the launcher's, from 0
  int size = 0;          // how many the launcher started; 0 when it does not say (PMIx alone)
  int local_size = 0;    // how many of them on this host: OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS (Hydra),
                         // SLURM_NTASKS_PER_NODE; 0 when none says
  std::string launcher;  // "mpirun (Open MPI)", "mpirun (PMI)", "srun", "PMIx": for the line that says the mode
};

// From OMPI_COMM_WORLD_RANK/SIZE (Open MPI), PMI_RANK/PMI_SIZE (MPICH's Hydra), SLURM_PROCID/SLURM_NTASKS (srun),
// PMIX_RANK (any PMIx launcher); the first pair present wins. nullopt when none is set or the rank is not a
// number (a plain shell).
std::optional<LauncherProcess> launcher_process();

// Lets this process run on every CPU its cgroup allows, where a launcher bound it to one core (Open MPI binds each
// of up to 2 processes to a core): the one process that works under a launcher gets the cores of those that stop.
// False when the kernel refused (the binding stays).
bool run_on_every_allowed_cpu();

// For a command that process 0 does alone under a launcher (export, import, predict; analyze and compare where no
// MPI can share their load, `why`): the other processes say so on stderr and get nullopt, and stop instead of
// doing the same work and writing the same files at the same time. Process 0 takes the cores of those that stop on
// its host (it runs on every CPU its cgroup allows; a launcher binds it to one), says so, and gets its loader
// threads: one per launcher process on its host. Without a launcher, or with one process: 0 (one per core),
// silently.
std::optional<int> alone_in_process_zero(const char* command, const std::string& why = "");

}  // namespace collscope::cluster
