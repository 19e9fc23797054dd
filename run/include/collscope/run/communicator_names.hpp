#pragma once
// Communicators named as people know them: the one place reports, the viewer and exports get a communicator's
// name for people (RunLoader stores it in Communicator::display_name).
//
// The tracer records how each communicator was made, nested: "dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)",
// "split(MPI_COMM_WORLD#0,color=1)" (docs/trace-format.md). That name is exact and the same on every member, but
// a chain of dups says little to a person and overflows a terminal's line. Display names:
//   a root                 as recorded: "MPI_COMM_WORLD", "MPI_COMM_SELF", an NCCL or imported name
//   a dup (any depth)      "dup of X", X the nearest ancestor that is not a dup; "dup of MPI_COMM_WORLD (Horovod)"
//                          in a Horovod job (run/workload.hpp), whose private communicators are such dups
//   a split                "split of X, colour 1, 2 ranks"; MPI_Comm_split_type: "split_type of X, type 0, 2 ranks"
//   other ways             "cart_create of X, 4 ranks" (the MPI function's name without MPI_Comm_)
//   made by an untraced call ("comm"): "communicator of 4 ranks"
// X is the parent's display name. Where several communicators would get one name, one-rank communicators of
// different ranks get " of rank N" after it ("MPI_COMM_SELF of rank 1": every rank has its own), others " #k"
// (Horovod dups the world communicator four times), k = 1, 2, ... in creation order (the order of the recorded
// creation indices, parents before children), so that a name is unique in the run and the same in every run of
// the same program.
#include <collscope/run/run.hpp>

#include <string>
#include <vector>

namespace collscope::run {

// One name per Run::communicators entry, in that order.
std::vector<std::string> communicator_display_names(const Run& run);

}  // namespace collscope::run
