#pragma once
// Finding the real definitions of what the preload interposes (MPI, NCCL) in the job's own libraries at run
// time: the preload links none of them, so it loads into any process and stays idle where they are absent.
namespace collscope::tracer {

// A dlopen handle (RTLD_NOLOAD: a reference, never a load) of the library loaded in this process that itself
// defines `symbol`, the preload excepted: found through dlsym(RTLD_NEXT) when the library is in the global
// scope, else among all loaded objects (a library Python loaded with RTLD_LOCAL, as mpi4py does, is invisible
// to RTLD_NEXT). Null when no loaded library defines it.
void* loaded_library_defining(const char* symbol);

// Whether a library of the job (not the preload, which exports the MPI names itself) defines `symbol`.
bool job_defines(const char* symbol);

// The next definition of the function `name` after the preload: dlsym(RTLD_NEXT) (another tool preloaded after
// this one, or the library in the global scope), else the definition in `library` (a handle from above, may be
// null). Null when neither has it.
void* next_function(const char* name, void* library);

// A data symbol of the library (Open MPI's predefined handles are addresses of its globals): the global scope
// first, since an executable may hold the copy the library itself uses (copy relocation), else `library`.
void* data_symbol(const char* name, void* library);

}  // namespace collscope::tracer
