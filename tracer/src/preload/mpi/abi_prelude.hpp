#pragma once
// What every ABI's compilation of the MPI wrappers includes before its own <mpi.h> (mpi/abi_open_mpi.cpp, ...):
// the standard library and the tracer's ABI-neutral parts. Nothing here may include an mpi.h.
#include <collscope/store/schema.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "clock.hpp"
#include "comm_registry.hpp"
#include "event.hpp"
#include "mpi/dispatch.hpp"
#include "mpi/requests.hpp"
#include "mpi_functions.hpp"
#include "recorder.hpp"
#include "runtime.hpp"
#include "string_pool.hpp"
#include "symbols.hpp"
#include "thread_buffer.hpp"
