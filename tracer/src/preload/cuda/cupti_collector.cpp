// CUPTI activity collection, opened at run time. The preload links no CUDA library: in a process that has CUDA
// (cuInit or cudaGetDeviceCount resolve in it) the collector dlopens libcupti and the driver, enables kernel
// (concurrent), memcpy, memset and synchronisation records, and hands CUPTI 8 MiB buffers through its
// request/complete callbacks. Completed buffers are queued; the writer thread decodes them at each drain
// (cupti_decode.hpp), writes gpu_activities rows, and fills collectives.gpu_start_ns/gpu_end_ns of the NCCL calls
// that launched them. The final drain flushes CUPTI.
//
// Which NCCL call launched a kernel, copy or memset: CUPTI's callback API, on the launch and async copy/memset
// entry points of the runtime and the driver, gives each launch's correlation id (the one its activity record
// carries); inside an NCCL call the interposer wrapped, the callback notes (our correlation id, CUPTI's). CUPTI's
// external-correlation records cannot do this cheaply: they are emitted only beside API activity records, which
// would mean recording every CUDA API call of the job. Outside NCCL calls the callback returns at once.
//
// Without a driver or a device, meta `gpu_capture` says so in one line and nothing else happens: the job's
// output and exit code are untouched (nothing is printed). COLLSCOPE_CUPTI=0 leaves CUPTI unopened.
#include <cupti.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/comm_registry.hpp"
#include "cuda/cupti_decode.hpp"
#include "cuda/gpu_capture.hpp"
#include "cuda/gpu_fusion.hpp"
#include "nccl_profile_bridge.hpp"
#include "nccl_profile_sink.hpp"
#include "core/runtime.hpp"

namespace collscope::tracer::gpu {
namespace {

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::int64_t kFlushEveryNs = 1'000'000'000;  // partial buffers are forced out once a second

// The CUPTI entry points used, resolved from the dlopen'ed library.
struct Cupti {
  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback = nullptr;
  decltype(&cuptiActivityFlushAll) ActivityFlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) ActivityGetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords = nullptr;
  decltype(&cuptiGetTimestamp) GetTimestamp = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiEnableCallback) EnableCallback = nullptr;
};

struct Completed {
  std::uint8_t* buffer;
  std::size_t valid;
};

// (our correlation id, CUPTI's correlation id) of one launch inside an NCCL call.
struct LaunchLink {
  std::uint64_t external_id;
  std::uint32_t correlation;
};

struct State {
  std::mutex mutex;
  std::vector<LaunchLink> launches;  // guarded by mutex; noted only inside NCCL calls (a few per call)
  bool tried = false;
  std::string note;  // meta gpu_capture, written by the next drain
  bool note_dirty = false;
  Cupti api;
  std::int64_t clock_offset_ns = 0;  // added to CUPTI timestamps (0 with our timestamp callback)
  std::deque<Completed> completed;   // guarded by mutex
  GpuTimeMatcher matcher;            // writer thread only
  std::int64_t last_flush_ns = 0;
  std::uint64_t activities = 0;
};

State& state() {
  static auto* s = new State();  // never destroyed: CUPTI may call back during exit
  return *s;
}

std::atomic<bool> g_active{false};

void set_note(std::string note) {
  State& s = state();
  s.note = std::move(note);
  s.note_dirty = true;
}

bool process_has_cuda() {
  if (dlsym(RTLD_DEFAULT, "cuInit") != nullptr || dlsym(RTLD_DEFAULT, "cudaGetDeviceCount") != nullptr) return true;
  // A program linked with the static CUDA runtime (nvcc's default) exports neither, and the runtime loads the
  // driver RTLD_LOCAL: the driver library being loaded at all is what says the process uses CUDA.
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(driver);  // drops only the reference RTLD_NOLOAD took
    return true;
  }
  return false;
}

void* open_first(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

std::vector<std::string> cupti_candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("COLLSCOPE_CUPTI_LIBRARY"); env && *env) c.emplace_back(env);
  c.insert(c.end(), {"libcupti.so.13", "libcupti.so.12", "libcupti.so"});
  // Next to the job's CUDA runtime (toolkits keep CUPTI beside it or under extras/CUPTI).
  Dl_info info{};
  if (void* sym = dlsym(RTLD_DEFAULT, "cudaGetDeviceCount"); sym && dladdr(sym, &info) && info.dli_fname) {
    const auto dir = std::filesystem::path(info.dli_fname).parent_path();
    c.push_back((dir / "libcupti.so").string());
    c.push_back((dir.parent_path() / "extras/CUPTI/lib64/libcupti.so").string());
  }
  for (const char* root : {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"})
    c.push_back(fmt::format("{}/libcupti.so", root));
  return c;
}

std::uint64_t CUPTIAPI monotonic_timestamp() { return static_cast<std::uint64_t>(monotonic_ns()); }

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.completed.push_back({buffer, valid});
}

// The NCCL call (our correlation id) whose launches this thread is making; 0 outside NCCL calls. A group's
// launches happen in its outermost ncclGroupEnd, which sets the group's id.
thread_local std::uint64_t t_launching_for = 0;

// Device-to-device copies by the job, for the fusion-buffer inference (gpu_fusion.hpp).
void note_job_copy(CUpti_CallbackId cbid, const CUpti_CallbackData* info) {
  if (cbid != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 && cbid != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020)
    return;
  // A copy NCCL itself makes inside a call (a one-rank collective out of place) packs no tensor of the job's.
  if (nccl_profile::inside_nccl_call()) return;
  // cudaMemcpyAsync(dst, src, count, kind, stream) and cudaMemcpy(dst, src, count, kind): dst and count lead.
  struct Params {
    void* dst;
    const void* src;
    std::size_t count;
    int kind;
  };
  const auto* p = static_cast<const Params*>(info->functionParams);
  constexpr int kDeviceToDevice = 3, kDefault = 4;
  if (p && (p->kind == kDeviceToDevice || p->kind == kDefault)) note_copy(p->dst, p->count);
}

void CUPTIAPI api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  if (const std::uint64_t external = t_launching_for) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.launches.push_back({external, info->correlationId});
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) note_job_copy(cbid, info);
}

// The entry points that put work on a stream: launches, async copies and memsets (runtime and driver: NCCL
// launches its kernels through the driver, its one-rank copies through the runtime).
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,             CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,           CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,         CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async};

std::string result_string(CUptiResult rc) {
  const char* s = nullptr;
  if (state().api.GetResultString) state().api.GetResultString(rc, &s);
  return s ? fmt::format("{} ({})", s, int(rc)) : fmt::format("CUPTI error {}", int(rc));
}

template <typename F>
bool resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

void start_cupti_locked(State& s) {
  if (const char* off = std::getenv("COLLSCOPE_CUPTI"); off && std::string_view(off) == "0") {
    set_note("CUPTI off (COLLSCOPE_CUPTI=0): no GPU activity");
    return;
  }
  void* lib = open_first(cupti_candidates());
  if (!lib) {
    set_note("CUDA found in the process but libcupti not found (set COLLSCOPE_CUPTI_LIBRARY): no GPU activity");
    return;
  }
  Cupti& a = s.api;
  bool ok = resolve(lib, "cuptiGetVersion", a.GetVersion) && resolve(lib, "cuptiGetResultString", a.GetResultString) &&
            resolve(lib, "cuptiActivityEnable", a.ActivityEnable) &&
            resolve(lib, "cuptiActivityRegisterCallbacks", a.ActivityRegisterCallbacks) &&
            resolve(lib, "cuptiActivityFlushAll", a.ActivityFlushAll) &&
            resolve(lib, "cuptiActivityGetNextRecord", a.ActivityGetNextRecord) &&
            resolve(lib, "cuptiActivityGetNumDroppedRecords", a.ActivityGetNumDroppedRecords) &&
            resolve(lib, "cuptiGetTimestamp", a.GetTimestamp);
  resolve(lib, "cuptiActivityRegisterTimestampCallback", a.ActivityRegisterTimestampCallback);
  ok = ok && resolve(lib, "cuptiSubscribe", a.Subscribe) && resolve(lib, "cuptiEnableCallback", a.EnableCallback);
  if (!ok) {
    set_note("libcupti lacks an entry point collscope needs: no GPU activity");
    return;
  }
  std::uint32_t version = 0;
  a.GetVersion(&version);
  // Records are decoded with this header's layouts; an older CUPTI writes older ones.
  if (version < CUPTI_API_VERSION) {
    set_note(fmt::format("CUPTI API version {} older than {} (built against): no GPU activity", version,
                         CUPTI_API_VERSION));
    return;
  }
  // The driver: its absence is the common case on CPU machines with a toolkit installed.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    set_note(fmt::format("no CUDA driver (libcuda.so.1 not loadable; CUPTI API {} loaded): no GPU activity", version));
    return;
  }
  using DriverGetVersion = int (*)(int*);
  using Init = int (*)(unsigned);
  using DeviceGetCount = int (*)(int*);
  int driver_version = 0, devices = 0;
  auto get_version = reinterpret_cast<DriverGetVersion>(dlsym(driver, "cuDriverGetVersion"));
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<DeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  if (get_version && get_version(&driver_version) == 0)
    runtime_set_meta(std::string(store::meta_key::kCudaDriver),
                     fmt::format("{}.{}", driver_version / 1000, driver_version % 1000 / 10));
  const int init_rc = init ? init(0) : -1;
  if (init_rc != 0 || !count || count(&devices) != 0 || devices == 0) {
    set_note(fmt::format("no CUDA device (cuInit {} , {} devices): no GPU activity", init_rc, devices));
    return;
  }
  if (a.ActivityRegisterTimestampCallback && a.ActivityRegisterTimestampCallback(&monotonic_timestamp) == CUPTI_SUCCESS) {
    s.clock_offset_ns = 0;
  } else {
    std::uint64_t t = 0;
    a.GetTimestamp(&t);
    s.clock_offset_ns = monotonic_ns() - static_cast<std::int64_t>(t);
  }
  CUptiResult rc = a.ActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    if (rc == CUPTI_SUCCESS) rc = a.ActivityEnable(kind);
  if (rc != CUPTI_SUCCESS) {
    set_note(fmt::format("CUPTI activity not enabled: {}", result_string(rc)));
    return;
  }
  // One subscriber per process: a job that profiles itself with CUPTI (torch.profiler) keeps its own, and the
  // GPU activities are then recorded without their NCCL calls (said in gpu_capture).
  CUpti_SubscriberHandle subscriber{};
  const CUptiResult sub = a.Subscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&api_callback), nullptr);
  std::string links = "NCCL launches tied by callback";
  if (sub == CUPTI_SUCCESS) {
    for (CUpti_CallbackId id : kRuntimeLaunches) a.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    for (CUpti_CallbackId id : kDriverLaunches) a.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  } else {
    links = fmt::format("no CUPTI callbacks ({}): GPU work not tied to NCCL calls", result_string(sub));
  }
  set_note(fmt::format("CUPTI {} active on {} device(s), driver {}; {}", version, devices, driver_version, links));
  g_active.store(true, std::memory_order_release);
}

// ---- writer side ------------------------------------------------------------------------------------------

void write_buffer(State& s, const Completed& c, WriterContext& ctx) {
  CUpti_Activity* record = nullptr;
  while (s.api.ActivityGetNextRecord(c.buffer, c.valid, &record) == CUPTI_SUCCESS) {
    DecodedRecord d = decode_cupti_record(record);
    if (d.external) s.matcher.add_external(d.external->external_id, d.external->correlation);
    if (!d.activity) continue;
    const DecodedActivity& a = *d.activity;
    const store::GpuActivityRecord r = gpu_activity_record(a, ctx.writer.intern(a.name), s.clock_offset_ns);
    const std::int64_t id = ctx.add(r);
    ++s.activities;
    // Every kernel, copy and memset an NCCL call launched is its GPU work (a one-rank communicator's collective
    // is a copy); synchronisation records are waits, not work.
    if (a.kind != store::GpuActivityKind::Sync) s.matcher.add_kernel(a.correlation, r.start_ns, r.end_ns, id);
  }
  std::free(c.buffer);
}

void on_drain(WriterContext& ctx) {
  State& s = state();
  if (!s.tried && g_phase.load(std::memory_order_relaxed) == kRunning && process_has_cuda()) ensure_cupti();
  {
    std::lock_guard lock(s.mutex);
    // A job that ended before the writer's first drain saw CUDA in it: the writer runs in the idle scheduling
    // class, so with every core busy a short job can end first. Said, rather than no note at all; CUPTI is not
    // started at exit.
    if (!s.tried && ctx.final_drain && process_has_cuda()) {
      s.tried = true;
      set_note("CUDA in the process, but it ended before the tracer's writer started GPU capture (the writer runs "
               "when a core is idle, and none was): no GPU activity");
    }
    if (s.note_dirty) {
      ctx.writer.set_meta("gpu_capture", s.note);
      s.note_dirty = false;
    }
  }
  if (!g_active.load(std::memory_order_acquire)) return;
  const bool stopping = ctx.final_drain;
  const std::int64_t now = monotonic_ns();
  if (stopping || now - s.last_flush_ns > kFlushEveryNs) {
    s.api.ActivityFlushAll(stopping ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    s.last_flush_ns = now;
  }
  std::deque<Completed> buffers;
  std::vector<LaunchLink> launches;
  {
    std::lock_guard lock(s.mutex);
    buffers.swap(s.completed);
    launches.swap(s.launches);
  }
  // Links first: each was noted at its launch, before its activity record could be in a completed buffer.
  for (const LaunchLink& l : launches) s.matcher.add_external(l.external_id, l.correlation);
  for (const Completed& c : buffers) write_buffer(s, c, ctx);
  for (const auto& u : s.matcher.take_updates())
    // A collective NCCL's profiler timed from its kernel channels keeps those times (nccl_profile_sink.hpp).
    if (!nccl_profile::has_kernel_channel_times(u.row_id))
      ctx.set_collective_gpu_times(u.row_id, u.gpu_start_ns, u.gpu_end_ns);
  for (const auto& l : s.matcher.take_links()) ctx.writer.add(store::CollectiveGpuWorkRow{l.collective_row, l.activity_row});
  std::size_t dropped = 0;
  if (s.api.ActivityGetNumDroppedRecords && s.api.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS &&
      dropped > 0)
    ctx.writer.set_meta("gpu_records_dropped", std::to_string(dropped));
}

const bool g_registered = [] {
  add_drain_hook(&on_drain);
  add_collective_hook([](const Event& e, std::int64_t row_id, WriterContext&) {
    if (!(e.flags & kFlagNccl) || e.nccl.correlation == 0 || e.comm_slot == 0 || !g_active.load(std::memory_order_relaxed))
      return;
    if (comm_slot(e.comm_slot).backend != store::Backend::Nccl) return;
    state().matcher.add_collective(e.nccl.correlation, row_id);
  });
  return true;
}();

}  // namespace

void ensure_cupti() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.tried) return;
  if (!process_has_cuda()) return;  // never in the launcher or a CPU-only job: tried again at the next drain
  s.tried = true;
  start_cupti_locked(s);
}

bool cupti_active() { return g_active.load(std::memory_order_relaxed); }

void push_correlation(std::uint64_t id) { t_launching_for = id; }

void pop_correlation() { t_launching_for = 0; }

}  // namespace collscope::tracer::gpu
