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

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "core/event.hpp"
#include "mpi/dispatch.hpp"
#include "mpi/requests.hpp"
#include "mpi_functions.hpp"
#include "core/recorder.hpp"
#include "core/runtime.hpp"
#include "core/string_pool.hpp"
#include "core/symbols.hpp"
#include "core/thread_buffer.hpp"
