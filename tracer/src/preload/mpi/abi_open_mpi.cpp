// The MPI wrappers compiled against Open MPI's mpi.h (Open MPI 4 and 5 share this ABI). Predefined handles are
// addresses of libmpi globals: looked up when the slots are bound, never linked (the preload links no MPI).
#include "mpi/abi_prelude.hpp"
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#define COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME 1
#define COLLSCOPE_MPI_PROTOTYPES MPI_VERSION

namespace collscope::tracer::mpi {
namespace open_mpi_abi {
namespace {

constexpr const char* kAbiName = "Open MPI";

#include "mpi_prototypes.inc"
#include "mpi/abi_body.hpp"
#include "mpi/abi_collectives.hpp"
#include "mpi/abi_messages.hpp"
#include "mpi_wrappers.inc"
#include "mpi/abi_custom.hpp"

}  // namespace
}  // namespace open_mpi_abi

extern const AbiWrappers kOpenMpiWrappers = {
    .name = open_mpi_abi::kAbiName,
    .wrappers = open_mpi_abi::kWrappers,
    .prepare = &open_mpi_abi::prepare,
    .error_other = MPI_ERR_OTHER,
};

}  // namespace collscope::tracer::mpi
