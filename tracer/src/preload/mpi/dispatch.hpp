#pragma once
// One preload for every MPI ABI. The preload exports MPI_X and PMPI_X for every function of functions.txt as a
// trampoline that jumps through a slot (arguments untouched, whatever the ABI's types). At the job's first MPI
// call the slots are bound, once: the MPI library is found (also when Python loaded it RTLD_LOCAL), its ABI told
// from MPI_Abi_get_version and MPI_Get_library_version (both ABI-neutral), and each slot pointed at the wrapper
// compiled against that ABI's mpi.h, or at the real function (pass-through: an MPI the tracer does not know gets
// one line on stderr), or, where the library has no such function, at a stub that warns and returns an error.
// PMPI_X records as MPI_X does: Fortran bindings call PMPI_X directly (all of Open MPI's, MPICH's mpi_f08 for
// many functions), and the recorder's nesting depth keeps a call made inside a recorded one from counting twice.
#include <cstdint>

#include "mpi_functions.hpp"

namespace collscope::tracer::mpi {

// What one ABI's compilation of the wrappers (mpi/abi_<name>.cpp) offers the dispatcher.
struct AbiWrappers {
  const char* name;             // "Open MPI", "MPICH", "MPI standard ABI"
  void* const* wrappers;        // [kMpiFunctionCount]; null: pass-through
  bool (*prepare)(void* library);  // run-time look-ups (predefined handles); false: pass-through
  int error_other;              // MPI_ERR_OTHER, returned by a call to a function the library lacks
};

// The real function of every MpiFunction (its PMPI_ name in the job's library), filled at binding, before any
// wrapper runs; null where the library has none (then no wrapper is bound to call it).
extern void* g_mpi_real[kMpiFunctionCount];

}  // namespace collscope::tracer::mpi
