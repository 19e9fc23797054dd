#include "mpi/dispatch.hpp"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "core/runtime.hpp"
#include "core/symbols.hpp"

namespace collscope::tracer::mpi {

#ifdef COLLSCOPE_MPI_ABI_OPEN_MPI
extern const AbiWrappers kOpenMpiWrappers;
#endif
#ifdef COLLSCOPE_MPI_ABI_MPICH
extern const AbiWrappers kMpichWrappers;
#endif
#ifdef COLLSCOPE_MPI_ABI_STANDARD
extern const AbiWrappers kStandardAbiWrappers;
#endif

void* g_mpi_real[kMpiFunctionCount] = {};

namespace {

enum class Family { Unknown, OpenMpi, Mpich, Standard };

const char* family_name(Family f) {
  switch (f) {
    case Family::OpenMpi: return "Open MPI";
    case Family::Mpich: return "MPICH";
    case Family::Standard: return "MPI standard ABI";
    default: return "unknown";
  }
}

const AbiWrappers* wrappers_for(Family f) {
  switch (f) {
#ifdef COLLSCOPE_MPI_ABI_OPEN_MPI
    case Family::OpenMpi: return &kOpenMpiWrappers;
#endif
#ifdef COLLSCOPE_MPI_ABI_MPICH
    case Family::Mpich: return &kMpichWrappers;
#endif
#ifdef COLLSCOPE_MPI_ABI_STANDARD
    case Family::Standard: return &kStandardAbiWrappers;
#endif
    default: return nullptr;
  }
}

// The library's own description, its first line (MPI_Get_library_version: char*, int*, the same in every ABI).
std::string library_version(void* library) {
  using Fn = int (*)(char*, int*);
  auto fn = reinterpret_cast<Fn>(next_function("PMPI_Get_library_version", library));
  if (!fn) fn = reinterpret_cast<Fn>(next_function("MPI_Get_library_version", library));
  if (!fn) return {};
  static char text[16384];  // above every ABI's MPI_MAX_LIBRARY_VERSION_STRING (8192 at most)
  int len = 0;
  if (fn(text, &len) != 0 || len <= 0) return {};
  std::string v(text, static_cast<std::size_t>(std::min<int>(len, sizeof text - 1)));
  if (auto nl = v.find_first_of("\r\n"); nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

Family detect(void* library, const std::string& version) {
  // MPI 5.0: a library of the standard ABI reports its ABI version; native ABIs report -1 or lack the function.
  using AbiVersion = int (*)(int*, int*);
  if (auto fn = reinterpret_cast<AbiVersion>(next_function("PMPI_Abi_get_version", library))) {
    int major = -1, minor = -1;
    if (fn(&major, &minor) == 0 && major >= 1) return Family::Standard;
  }
  const std::string_view v = version;
  if (v.find("Open MPI") != std::string_view::npos) return Family::OpenMpi;
  // MPICH and the implementations built on it keep its ABI (the MPICH ABI initiative).
  for (std::string_view mpich : {"MPICH", "MVAPICH", "Intel(R) MPI"})
    if (v.find(mpich) != std::string_view::npos) return Family::Mpich;
  return Family::Unknown;
}

std::mutex g_bind_mutex;
std::atomic<bool> g_bound{false};
int g_error_other = 16;  // MPI_ERR_OTHER of Open MPI and the standard ABI

}  // namespace
}  // namespace collscope::tracer::mpi

using namespace collscope::tracer;
using namespace collscope::tracer::mpi;

extern "C" {

void collscope_mpi_lazy();
void collscope_mpi_missing();

}  // extern "C"

namespace {
using SlotTarget = void (*)();
struct Slots {
  SlotTarget target[kMpiExportCount];
};
template <std::size_t... I>
constexpr Slots lazy_slots(std::index_sequence<I...>) {
  return {{((void)I, &collscope_mpi_lazy)...}};
}
}  // namespace

extern "C" {

// The slots the exported entry points jump through (mpi_trampolines.inc): all start at the lazy stub (a constant
// initialiser: bound before any code of the process runs).
__attribute__((visibility("hidden"))) constinit Slots collscope_mpi_slots =
    lazy_slots(std::make_index_sequence<kMpiExportCount>{});

// Binds every slot, once (called by the lazy stub at the first MPI call of the process, any thread).
__attribute__((visibility("hidden"), used)) void collscope_mpi_bind() {
  std::lock_guard lock(g_bind_mutex);
  if (g_bound.load(std::memory_order_relaxed)) return;
  void* library = loaded_library_defining("PMPI_Init");
  for (int f = 0; f < kMpiFunctionCount; ++f) g_mpi_real[f] = next_function(kMpiProfilingName[f], library);
  const std::string version = library_version(library);
  const Family family = library ? detect(library, version) : Family::Unknown;
  const AbiWrappers* abi = wrappers_for(family);
  if (!library) {
    warn_once("no MPI library found in this process: its MPI calls pass through untraced");
  } else if (family == Family::Unknown) {
    warn_once(fmt::format("unknown MPI library ({}): the job runs untraced",
                          version.empty() ? "no MPI_Get_library_version" : version));
  } else if (!abi) {
    warn_once(fmt::format("this collscope was built without {} headers: the job ({}) runs untraced",
                          family_name(family), version));
  } else if (!abi->prepare(library)) {
    warn_once(fmt::format("{} predefined handles not found in the MPI library ({}): the job runs untraced",
                          family_name(family), version));
    abi = nullptr;
  }
  if (abi) g_error_other = abi->error_other;
  for (int i = 0; i < kMpiExportCount; ++i) {
    const MpiExport& e = kMpiExports[i];
    void* target = nullptr;
    if (abi && abi->wrappers[e.function] && g_mpi_real[e.function])
      target = abi->wrappers[e.function];
    if (!target) target = next_function(e.symbol, library);
    if (!target) target = g_mpi_real[e.function];
    if (!target) target = reinterpret_cast<void*>(&collscope_mpi_missing);
    __atomic_store_n(&collscope_mpi_slots.target[i], reinterpret_cast<SlotTarget>(target), __ATOMIC_RELEASE);
  }
  g_bound.store(true, std::memory_order_release);
}

// A call to an MPI function the job's library does not define (the slot index comes from the trampoline).
__attribute__((visibility("hidden"), used)) int collscope_mpi_missing_call(unsigned slot) {
  const char* name = slot < static_cast<unsigned>(kMpiExportCount) ? kMpiExports[slot].symbol : "an MPI function";
  warn_once(fmt::format("{} is not in this job's MPI library: the call returns MPI_ERR_OTHER", name));
  return g_error_other;
}

}  // extern "C"

// The lazy stub saves every argument register (integer, vector, and the vararg count), binds, restores them and
// jumps through the slot again; the missing stub passes the slot index to collscope_mpi_missing_call. Both get the
// slot index from the trampoline in a scratch register (x86-64: r11, AArch64: w17).
#if defined(__x86_64__)
asm(R"(
.text
.p2align 4
.globl collscope_mpi_lazy
.hidden collscope_mpi_lazy
.type collscope_mpi_lazy, @function
collscope_mpi_lazy:
  pushq %rbp
  movq %rsp, %rbp
  pushq %rdi
  pushq %rsi
  pushq %rdx
  pushq %rcx
  pushq %r8
  pushq %r9
  pushq %rax
  pushq %r11
  subq $128, %rsp
  movdqu %xmm0, 0(%rsp)
  movdqu %xmm1, 16(%rsp)
  movdqu %xmm2, 32(%rsp)
  movdqu %xmm3, 48(%rsp)
  movdqu %xmm4, 64(%rsp)
  movdqu %xmm5, 80(%rsp)
  movdqu %xmm6, 96(%rsp)
  movdqu %xmm7, 112(%rsp)
  call collscope_mpi_bind
  movdqu 0(%rsp), %xmm0
  movdqu 16(%rsp), %xmm1
  movdqu 32(%rsp), %xmm2
  movdqu 48(%rsp), %xmm3
  movdqu 64(%rsp), %xmm4
  movdqu 80(%rsp), %xmm5
  movdqu 96(%rsp), %xmm6
  movdqu 112(%rsp), %xmm7
  addq $128, %rsp
  popq %r11
  popq %rax
  popq %r9
  popq %r8
  popq %rcx
  popq %rdx
  popq %rsi
  popq %rdi
  popq %rbp
  leaq collscope_mpi_slots(%rip), %r10
  jmp *(%r10,%r11,8)
.size collscope_mpi_lazy, .-collscope_mpi_lazy

.p2align 4
.globl collscope_mpi_missing
.hidden collscope_mpi_missing
.type collscope_mpi_missing, @function
collscope_mpi_missing:
  movl %r11d, %edi
  jmp collscope_mpi_missing_call
.size collscope_mpi_missing, .-collscope_mpi_missing
)");
#elif defined(__aarch64__)
asm(R"(
.text
.p2align 4
.globl collscope_mpi_lazy
.hidden collscope_mpi_lazy
.type collscope_mpi_lazy, %function
collscope_mpi_lazy:
  stp x29, x30, [sp, #-240]!
  mov x29, sp
  stp x0, x1, [sp, #16]
  stp x2, x3, [sp, #32]
  stp x4, x5, [sp, #48]
  stp x6, x7, [sp, #64]
  stp x8, x17, [sp, #80]
  stp q0, q1, [sp, #96]
  stp q2, q3, [sp, #128]
  stp q4, q5, [sp, #160]
  stp q6, q7, [sp, #192]
  bl collscope_mpi_bind
  ldp q6, q7, [sp, #192]
  ldp q4, q5, [sp, #160]
  ldp q2, q3, [sp, #128]
  ldp q0, q1, [sp, #96]
  ldp x8, x17, [sp, #80]
  ldp x6, x7, [sp, #64]
  ldp x4, x5, [sp, #48]
  ldp x2, x3, [sp, #32]
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #240
  adrp x16, collscope_mpi_slots
  add x16, x16, #:lo12:collscope_mpi_slots
  ldr x16, [x16, w17, uxtw #3]
  br x16
.size collscope_mpi_lazy, .-collscope_mpi_lazy

.p2align 4
.globl collscope_mpi_missing
.hidden collscope_mpi_missing
.type collscope_mpi_missing, %function
collscope_mpi_missing:
  mov w0, w17
  b collscope_mpi_missing_call
.size collscope_mpi_missing, .-collscope_mpi_missing
)");
#endif

#include "mpi_trampolines.inc"
