#pragma once
// The gloo interposer's side that torch.distributed's annotation (api/annotation_api.cpp) reaches: binding the gloo
// contexts a process group just connected to the group, and the buffers whose allreduce Python records itself.
#include <cstdint>

#include "core/comm_registry.hpp"

namespace collscope::tracer::gloo {

// Binds the gloo contexts this thread connected since the last call (a ProcessGroupGloo's constructor connects
// them on the thread that creates the group) to `group`, the communicator Python registered as `group_comm`: their
// allreduces made from C++ (DDP's buckets) are then recorded on a communicator of their own, registered at the
// first one, named after the group (their broadcasts too). Contexts whose rank or size differ from the group's are left alone. Always
// forgets this thread's pending contexts. Not for the hot path (once per process group).
void bind_connected_contexts(std::uint32_t group_comm, const CommDescription& group);

// A buffer whose next allreduce or broadcast Python records itself (torch.distributed.all_reduce and broadcast, the
// DDP comm hook): claimed before the call, so the interposer leaves that call to Python. Returns whether it was claimed (false: the
// group has no bound context, or too many claims are outstanding). release() drops a claim the call did not take
// (a blocking call that went another way; a call that failed).
bool claim(std::uint32_t group_comm, std::uint64_t address);
void release(std::uint64_t address);

}  // namespace collscope::tracer::gloo
