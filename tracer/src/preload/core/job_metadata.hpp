#pragma once
// What the trace says about the job itself, read once when the file opens: who launched it, its command line,
// host, ranks, clock anchors and the environment variables that are knobs. The writer (writer.cpp) only stores it.
#include <collscope/store/trace_writer.hpp>

#include <string>
#include <utility>
#include <vector>

namespace collscope::tracer {

// An integer environment variable, or `fallback` when unset, empty or not a whole number.
int env_int(const char* name, int fallback);

// World rank and size of this process from the launcher's environment (Open MPI, PMI, Slurm, torchrun,
// horovodrun), or -1.
int world_rank_from_env();
int world_size_from_env();

// The job's meta entries (store::meta_key) for a file just opened by rank `world_rank` of `world_size`, then
// `extra` (the interposer's own). Inside the caller's transaction.
void write_job_metadata(store::TraceWriter& file, int world_rank, int world_size,
                        const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace collscope::tracer
