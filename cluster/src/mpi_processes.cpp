// MPI opened with dlopen: the few functions the processes need, for the two ABIs Debian's MPIs have (Open MPI's
// handles are pointers to its predefined objects; MPICH's, and its derivatives', are integers with fixed values).
#include <collscope/cluster/mpi_processes.hpp>
#include <collscope/store/error.hpp>

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <variant>
#include <vector>

namespace collscope::cluster {
namespace {

// One message carries at most this many bytes (MPI counts are int); longer ones go in pieces.
constexpr std::size_t kPieceBytes = std::size_t{1} << 30;
constexpr int kSizeTag = 7101, kPieceTag = 7102;

// fn(offset, count) for each piece of a message of `size` bytes, in order.
template <typename Fn>
void for_each_piece(std::size_t size, Fn&& fn) {
  for (std::size_t at = 0; at < size; at += kPieceBytes)
    fn(at, static_cast<int>(std::min<std::size_t>(kPieceBytes, size - at)));
}

template <typename Handle>
struct Functions {
  int (*init)(int*, char***) = nullptr;
  int (*finalize)() = nullptr;
  int (*comm_rank)(Handle, int*) = nullptr;
  int (*comm_size)(Handle, int*) = nullptr;
  int (*bcast)(void*, int, Handle, int, Handle) = nullptr;
  int (*send)(const void*, int, Handle, int, int, Handle) = nullptr;
  int (*recv)(void*, int, Handle, int, int, Handle, void*) = nullptr;
  Handle world{}, byte{};
  void* status_ignore = nullptr;
};

using OpenMpiFunctions = Functions<void*>;  // MPI_Comm, MPI_Datatype: pointers (mpi.h: ompi_mpi_comm_world, ...)
using MpichFunctions = Functions<int>;      // MPI_Comm, MPI_Datatype: int (mpi.h: MPI_COMM_WORLD 0x44000000, ...)

template <typename F>
bool bind(void* library, const char* name, F& f) {
  f = reinterpret_cast<F>(::dlsym(library, name));
  return f != nullptr;
}

template <typename Handle>
bool bind_all(void* library, Functions<Handle>& f) {
  return bind(library, "MPI_Init", f.init) && bind(library, "MPI_Finalize", f.finalize) &&
         bind(library, "MPI_Comm_rank", f.comm_rank) && bind(library, "MPI_Comm_size", f.comm_size) &&
         bind(library, "MPI_Bcast", f.bcast) && bind(library, "MPI_Send", f.send) && bind(library, "MPI_Recv", f.recv);
}

void check(int code, const char* call) {
  if (code != 0) throw Error(fmt::format("collscope: {} failed (MPI error {})", call, code));
}

}  // namespace

struct MpiProcesses::Api {
  void* library = nullptr;
  std::variant<OpenMpiFunctions, MpichFunctions> functions;
  bool initialised = false;
};

std::unique_ptr<MpiProcesses> MpiProcesses::join(const LauncherProcess& launcher) {
  std::vector<std::string> candidates;
  if (const char* named = std::getenv("COLLSCOPE_MPI_LIBRARY"); named && *named) {
    candidates.push_back(named);
  } else if (launcher.launcher == "mpirun (PMI)") {
    candidates = {"libmpich.so.12", "libmpi.so.12", "libmpi.so.40"};
  } else {
    candidates = {"libmpi.so.40", "libmpich.so.12", "libmpi.so.12"};
  }
  std::unique_ptr<MpiProcesses> p(new MpiProcesses);
  p->api_ = std::make_unique<Api>();
  auto& api = *p->api_;
  std::string tried;
  for (const auto& name : candidates) {
    // RTLD_GLOBAL: Open MPI's own plugins, opened by it later, look for its symbols in the global scope.
    if ((api.library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL))) {
      p->library_ = name;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (!api.library) throw Error(fmt::format("collscope: no MPI library opens here (tried {})", tried));
  // Open MPI's handles are the addresses of its predefined objects; a library without them has MPICH's ABI.
  void* world = ::dlsym(api.library, "ompi_mpi_comm_world");
  void* byte = ::dlsym(api.library, "ompi_mpi_byte");
  bool bound = false;
  if (world && byte) {
    OpenMpiFunctions f;
    f.world = world, f.byte = byte, f.status_ignore = nullptr;  // MPI_STATUS_IGNORE is (MPI_Status*)0
    bound = bind_all(api.library, f);
    api.functions = f;
  } else if (::dlsym(api.library, "MPIR_Dup_fn")) {  // exported by MPICH and its derivatives
    MpichFunctions f;
    f.world = 0x44000000, f.byte = 0x4c00010d;
    f.status_ignore = reinterpret_cast<void*>(std::uintptr_t{1});  // MPI_STATUS_IGNORE is (MPI_Status*)1
    bound = bind_all(api.library, f);
    api.functions = f;
  }
  if (!bound) throw Error(fmt::format("collscope: {} is not an MPI library this collscope can use", p->library_));
  std::visit(
      [&](auto& f) {
        check(f.init(nullptr, nullptr), "MPI_Init");
        api.initialised = true;
        check(f.comm_rank(f.world, &p->rank_), "MPI_Comm_rank");
        check(f.comm_size(f.world, &p->size_), "MPI_Comm_size");
      },
      api.functions);
  if (launcher.size > 0 && p->size_ != launcher.size)
    throw Error(fmt::format("collscope: {} sees {} process(es) where the launcher started {}: not the launcher's MPI",
                            p->library_, p->size_, launcher.size));
  return p;
}

MpiProcesses::~MpiProcesses() {
  if (api_ && api_->initialised) std::visit([](auto& f) { f.finalize(); }, api_->functions);
  // The library stays loaded: MPI does not support being unloaded after MPI_Finalize (atexit handlers).
}

std::string MpiProcesses::broadcast(std::string bytes) {
  std::visit(
      [&](auto& f) {
        std::uint64_t size = bytes.size();
        check(f.bcast(&size, sizeof size, f.byte, 0, f.world), "MPI_Bcast");
        bytes.resize(size);
        for_each_piece(size, [&](std::size_t at, int n) {
          check(f.bcast(bytes.data() + at, n, f.byte, 0, f.world), "MPI_Bcast");
        });
      },
      api_->functions);
  return bytes;
}

void MpiProcesses::send_to_root(std::string_view bytes) {
  std::visit(
      [&](auto& f) {
        const std::uint64_t size = bytes.size();
        check(f.send(&size, sizeof size, f.byte, 0, kSizeTag, f.world), "MPI_Send");
        for_each_piece(size, [&](std::size_t at, int n) {
          check(f.send(bytes.data() + at, n, f.byte, 0, kPieceTag, f.world), "MPI_Send");
        });
      },
      api_->functions);
}

std::string MpiProcesses::receive_from(int process) {
  std::string bytes;
  std::visit(
      [&](auto& f) {
        std::uint64_t size = 0;
        check(f.recv(&size, sizeof size, f.byte, process, kSizeTag, f.world, f.status_ignore), "MPI_Recv");
        bytes.resize(size);
        for_each_piece(size, [&](std::size_t at, int n) {
          check(f.recv(bytes.data() + at, n, f.byte, process, kPieceTag, f.world, f.status_ignore), "MPI_Recv");
        });
      },
      api_->functions);
  return bytes;
}

}  // namespace collscope::cluster
