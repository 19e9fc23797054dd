// The MPI wrappers compiled against the MPI 5.0 standard ABI (libmpi_abi), through mpi/standard_abi/mpi.h: the
// types and constants of the standard, without prototypes (no mpi.h of that ABI is packaged for Debian 12). Built
// and linked here, untested against a real libmpi_abi.
#include "mpi/abi_prelude.hpp"

#include <mpi.h>

#define COLLSCOPE_MPI_PREDEFINED_AT_RUN_TIME 0
#define COLLSCOPE_MPI_PROTOTYPES 0

namespace collscope::tracer::mpi {
namespace standard_abi {
namespace {

constexpr const char* kAbiName = "MPI standard ABI";

#include "mpi_prototypes.inc"
#include "mpi/abi_body.hpp"
#include "mpi/abi_collectives.hpp"
#include "mpi/abi_messages.hpp"
#include "mpi_wrappers.inc"
#include "mpi/abi_custom.hpp"

}  // namespace
}  // namespace standard_abi

extern const AbiWrappers kStandardAbiWrappers = {
    .name = standard_abi::kAbiName,
    .wrappers = standard_abi::kWrappers,
    .prepare = &standard_abi::prepare,
    .error_other = MPI_ERR_OTHER,
};

}  // namespace collscope::tracer::mpi
