// The MPI wrappers compiled against MPICH's mpi.h: the MPICH ABI, shared by MVAPICH, Intel MPI and Cray MPICH.
// Predefined handles are integer constants.
#include "mpi/abi_prelude.hpp"
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#define COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME 0
#define COLLSCOPE_MPI_PROTOTYPES MPI_VERSION

namespace collscope::tracer::mpi {
namespace mpich_abi {
namespace {

constexpr const char* kAbiName = "MPICH";

#include "mpi_prototypes.inc"
#include "mpi/abi_body.hpp"
#include "mpi/abi_collectives.hpp"
#include "mpi/abi_messages.hpp"
#include "mpi_wrappers.inc"
#include "mpi/abi_custom.hpp"

}  // namespace
}  // namespace mpich_abi

extern const AbiWrappers kMpichWrappers = {
    .name = mpich_abi::kAbiName,
    .wrappers = mpich_abi::kWrappers,
    .prepare = &mpich_abi::prepare,
    .error_other = MPI_ERR_OTHER,
};

}  // namespace collscope::tracer::mpi
