// NVTX injection: the preload is also the job's NVTX tool library. `collscope trace` sets
// NVTX_INJECTION64_PATH to this library; on the job's first NVTX call the NVTX3 headers compiled into the job
// dlopen it (already loaded through LD_PRELOAD, so the same instance) and call InitializeInjectionNvtx2, which
// points the job's NVTX function tables at the handlers below.
//
// Hot path (push/pop, start/end, mark): one TSC read and one 128-byte record on the thread's ring. Messages
// up to kInlineText bytes are copied into the record; longer ones, wide strings, domains and registered
// strings are interned once in the process string pool and referred to by id. The writer thread pairs
// pushes with pops per (thread, domain) and starts with ends per range id, and writes nvtx_ranges rows.
//
// Event field use (EventKind::Nvtx*):
//   t0        ticks of the call
//   a[0]      domain: string pool id of the domain name, 0 = default domain
//   a[1]      name: string pool id, 0 = the name is inline in the text area (seq .. peer, NUL-terminated)
//   a[2]      range id (start/end)
//   a[3]      payload bits; op = kPayloadNone / kPayloadInt / kPayloadDouble
//   root      category (uint32 bits)
//   comm_slot colour ARGB when flags & kNvtxHasColor
//   status    push level returned to the caller (0 = outermost)
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <cwchar>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "clock.hpp"
#include "runtime.hpp"
#include "string_pool.hpp"
#include "symbols.hpp"
#include "thread_buffer.hpp"

namespace collscope::tracer {
namespace {

constexpr std::uint8_t kPayloadNone = 0;
constexpr std::uint8_t kPayloadInt = 1;
constexpr std::uint8_t kPayloadDouble = 2;
constexpr std::uint16_t kNvtxHasColor = 1;

// The text area: the collective fields seq .. peer are unused by NVTX events (52 contiguous bytes).
constexpr std::size_t kTextOffset = offsetof(Event, seq);
constexpr std::size_t kTextBytes = offsetof(Event, thread) - kTextOffset;
constexpr std::size_t kInlineText = kTextBytes - 1;
static_assert(kTextBytes == 52, "NVTX text area layout changed");

char* text_area(Event& e) { return reinterpret_cast<char*>(&e) + kTextOffset; }
const char* text_area(const Event& e) { return reinterpret_cast<const char*>(&e) + kTextOffset; }

std::atomic<std::uint64_t> g_next_range_id{1};
std::atomic<std::uint64_t> g_unbalanced_pops{0};

// ---- push levels per thread and domain (the value nvtxRangePush/Pop return) -----------------------------

constexpr int kDomainSlots = 16;
struct DomainDepth {
  std::uint64_t domain;
  std::int32_t depth;
};
// initial-exec, as the ring pointer (thread_buffer.cpp): the preload is loaded at start-up, TLS reads are one load.
__attribute__((tls_model("initial-exec"))) thread_local std::int32_t t_default_depth = 0;  // the default domain
__attribute__((tls_model("initial-exec"))) thread_local DomainDepth t_domain_depth[kDomainSlots] = {};

std::int32_t* depth_of(std::uint64_t domain) {
  if (domain == 0) return &t_default_depth;
  for (auto& d : t_domain_depth) {
    if (d.domain == domain) return &d.depth;
    if (d.domain == 0) {
      d.domain = domain;
      return &d.depth;
    }
  }
  static thread_local std::int32_t overflow = 0;  // more than 16 domains on one thread: levels are shared
  return &overflow;
}

// ---- names ------------------------------------------------------------------------------------------------

std::string utf8_of(const wchar_t* w) {
  std::string out;
  if (!w) return out;
  for (; *w; ++w) {
    auto c = static_cast<std::uint32_t>(*w);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// Long ASCII names: a per-thread cache from the caller's pointer to the pooled id, checked against the pooled
// text so that a reused buffer with new contents is interned again.
std::uint32_t intern_long(const char* s) {
  constexpr int kSlots = 64;
  struct Entry {
    const char* ptr;
    std::uint32_t id;
  };
  static thread_local Entry cache[kSlots] = {};
  Entry& slot = cache[(reinterpret_cast<std::uintptr_t>(s) >> 3) & (kSlots - 1)];
  if (slot.ptr == s && slot.id && std::strcmp(pool_string(slot.id), s) == 0) return slot.id;
  slot.ptr = s;
  slot.id = pool_intern(s);
  return slot.id;
}

// Fills the name of `e` from an ASCII message: inline when short, else pooled.
inline void set_ascii_name(Event& e, const char* message) {
  if (!message) {
    e.a[1] = 0;
    text_area(e)[0] = '\0';
    return;
  }
  const std::size_t n = strnlen(message, kInlineText + 1);
  if (n <= kInlineText) {
    e.a[1] = 0;
    std::memcpy(text_area(e), message, n);
    text_area(e)[n] = '\0';
  } else {
    e.a[1] = intern_long(message);
  }
}

void set_attr_name(Event& e, const nvtxEventAttributes_t* attr) {
  if (!attr) return set_ascii_name(e, nullptr);
  switch (attr->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return set_ascii_name(e, attr->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      e.a[1] = pool_intern(utf8_of(attr->message.unicode));
      return;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      e.a[1] = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(attr->message.registered));
      return;
    default:
      return set_ascii_name(e, nullptr);
  }
}

void set_attributes(Event& e, const nvtxEventAttributes_t* attr) {
  e.op = kPayloadNone;
  e.flags = 0;
  e.root = 0;
  e.comm_slot = 0;
  e.a[3] = 0;
  if (!attr) return;
  e.root = static_cast<std::int32_t>(attr->category);
  if (attr->colorType == NVTX_COLOR_ARGB) {
    e.flags |= kNvtxHasColor;
    e.comm_slot = attr->color;
  }
  std::int64_t i = 0;
  double d = 0;
  switch (attr->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: i = static_cast<std::int64_t>(attr->payload.ullValue); e.op = kPayloadInt; break;
    case NVTX_PAYLOAD_TYPE_INT64: i = attr->payload.llValue; e.op = kPayloadInt; break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: i = attr->payload.uiValue; e.op = kPayloadInt; break;
    case NVTX_PAYLOAD_TYPE_INT32: i = attr->payload.iValue; e.op = kPayloadInt; break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: d = attr->payload.dValue; e.op = kPayloadDouble; break;
    case NVTX_PAYLOAD_TYPE_FLOAT: d = attr->payload.fValue; e.op = kPayloadDouble; break;
    default: break;
  }
  if (e.op == kPayloadInt) std::memcpy(&e.a[3], &i, sizeof i);
  if (e.op == kPayloadDouble) std::memcpy(&e.a[3], &d, sizeof d);
}

std::uint64_t domain_id(nvtxDomainHandle_t domain) { return reinterpret_cast<std::uintptr_t>(domain); }

// ---- the recording calls ----------------------------------------------------------------------------------

template <typename Name>
int push(std::uint64_t domain, Name&& fill_name) {
  std::int32_t* depth = depth_of(domain);
  const std::int32_t level = (*depth)++;
  if (!recording()) return level;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxPush;
    e.t0 = t;
    e.a[0] = domain;
    e.status = level;
    fill_name(e);
  });
  return level;
}

int pop(std::uint64_t domain) {
  std::int32_t* depth = depth_of(domain);
  if (*depth <= 0) {
    // More pops than pushes on this thread: counted (meta nvtx_unbalanced_pops), never recorded as a range.
    g_unbalanced_pops.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  const std::int32_t level = --(*depth);
  if (!recording()) return level;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxPop;
    e.t0 = t;
    e.a[0] = domain;
    e.status = level;
  });
  return level;
}

template <typename Name>
nvtxRangeId_t start(std::uint64_t domain, Name&& fill_name) {
  const nvtxRangeId_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (!recording()) return id;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxStart;
    e.t0 = t;
    e.a[0] = domain;
    e.a[2] = id;
    fill_name(e);
  });
  return id;
}

void end(std::uint64_t domain, nvtxRangeId_t id) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxEnd;
    e.t0 = t;
    e.a[0] = domain;
    e.a[2] = id;
  });
}

template <typename Name>
void mark(std::uint64_t domain, Name&& fill_name) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxMark;
    e.t0 = t;
    e.a[0] = domain;
    fill_name(e);
  });
}

void name_category(std::uint64_t domain, std::uint32_t category, const std::string& name) {
  const char* d = domain ? pool_string(static_cast<std::uint32_t>(domain)) : "default";
  runtime_set_meta(fmt::format("nvtx.category.{}.{}", d, category), name);
}

// ---- NVTX entry points (the job's function tables point here) --------------------------------------------

auto no_attr(const char* message) {
  return [message](Event& e) {
    set_attributes(e, nullptr);
    set_ascii_name(e, message);
  };
}
auto wide_attr(const wchar_t* message) {
  return [message](Event& e) {
    set_attributes(e, nullptr);
    e.a[1] = pool_intern(utf8_of(message));
  };
}
auto ex_attr(const nvtxEventAttributes_t* attr) {
  return [attr](Event& e) {
    set_attributes(e, attr);
    set_attr_name(e, attr);
  };
}

int NVTX_API RangePushA(const char* m) { return push(0, no_attr(m)); }
int NVTX_API RangePushW(const wchar_t* m) { return push(0, wide_attr(m)); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return push(0, ex_attr(a)); }
int NVTX_API RangePop() { return pop(0); }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return start(0, no_attr(m)); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return start(0, wide_attr(m)); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) { return start(0, ex_attr(a)); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { end(0, id); }
void NVTX_API MarkA(const char* m) { mark(0, no_attr(m)); }
void NVTX_API MarkW(const wchar_t* m) { mark(0, wide_attr(m)); }
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { mark(0, ex_attr(a)); }
void NVTX_API NameCategoryA(uint32_t c, const char* n) { name_category(0, c, n ? n : ""); }
void NVTX_API NameCategoryW(uint32_t c, const wchar_t* n) { name_category(0, c, utf8_of(n)); }

int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(domain_id(d), ex_attr(a));
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return pop(domain_id(d)); }
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(domain_id(d), ex_attr(a));
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(domain_id(d), id); }
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { mark(domain_id(d), ex_attr(a)); }
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t c, const char* n) {
  name_category(domain_id(d), c, n ? n : "");
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t c, const wchar_t* n) {
  name_category(domain_id(d), c, utf8_of(n));
}
// Handles are string pool ids: registered strings and domains are interned once, for the life of the process.
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(pool_intern(s ? s : "")));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(pool_intern(utf8_of(s))));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(pool_intern(name ? name : "")));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(pool_intern(utf8_of(name))));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
void NVTX_API Initialize(const void*) {}

// ---- writer side: pair pushes with pops and starts with ends ---------------------------------------------

struct OpenRange {
  store::NvtxRangeRow row;
};

class NvtxRangeWriter {
 public:
  void handle(const Event& e, WriterContext& ctx) {
    switch (e.kind) {
      case EventKind::NvtxPush:
        stacks_[{e.thread, e.a[0]}].push_back(begin_row(e, ctx, store::NvtxKind::PushPop));
        break;
      case EventKind::NvtxPop: {
        auto it = stacks_.find({e.thread, e.a[0]});
        if (it == stacks_.end() || it->second.empty()) {
          ++writer_unbalanced_;  // a push recorded before tracing started (or dropped): cannot pair
          break;
        }
        store::NvtxRangeRow row = std::move(it->second.back());
        it->second.pop_back();
        row.end_ns = ctx.clock.to_ns(e.t0);
        ctx.writer.add_nvtx_range(row);
        break;
      }
      case EventKind::NvtxStart: {
        store::NvtxRangeRow row = begin_row(e, ctx, store::NvtxKind::StartEnd);
        // The rings are drained one thread after another, so the end of a range ended on another thread can
        // come first: it waits in early_ends_.
        auto early = early_ends_.find(e.a[2]);
        if (early != early_ends_.end()) {
          row.end_ns = early->second.first;
          row.end_thread = early->second.second;
          early_ends_.erase(early);
          ctx.writer.add_nvtx_range(row);
        } else {
          started_[e.a[2]] = std::move(row);
        }
        break;
      }
      case EventKind::NvtxEnd: {
        auto it = started_.find(e.a[2]);
        if (it == started_.end()) {
          early_ends_[e.a[2]] = {ctx.clock.to_ns(e.t0), e.thread};
          break;
        }
        it->second.end_ns = ctx.clock.to_ns(e.t0);
        it->second.end_thread = e.thread;
        ctx.writer.add_nvtx_range(it->second);
        started_.erase(it);
        break;
      }
      case EventKind::NvtxMark:
        ctx.writer.add_nvtx_range(begin_row(e, ctx, store::NvtxKind::Mark));
        break;
      default:
        break;
    }
  }

  // Every drain: the counters; once the run stops: the ranges never closed, with end_ns NULL.
  void on_drain(WriterContext& ctx) {
    const std::uint64_t unbalanced = g_unbalanced_pops.load(std::memory_order_relaxed) + writer_unbalanced_;
    if (unbalanced != written_unbalanced_) {
      ctx.writer.set_meta("nvtx_unbalanced_pops", std::to_string(unbalanced));
      written_unbalanced_ = unbalanced;
    }
    if (g_phase.load(std::memory_order_relaxed) != kStopped) return;
    for (auto& [key, stack] : stacks_)
      for (auto& row : stack) ctx.writer.add_nvtx_range(row);
    stacks_.clear();
    for (auto& [id, row] : started_) ctx.writer.add_nvtx_range(row);
    started_.clear();
    // Ends of ranges never started (an id the job made up, or a start before tracing began).
    writer_unbalanced_ += early_ends_.size();
    early_ends_.clear();
    const std::uint64_t total = g_unbalanced_pops.load(std::memory_order_relaxed) + writer_unbalanced_;
    if (total != written_unbalanced_) ctx.writer.set_meta("nvtx_unbalanced_pops", std::to_string(total));
    written_unbalanced_ = total;
  }

 private:
  store::NvtxRangeRow begin_row(const Event& e, WriterContext& ctx, store::NvtxKind kind) {
    store::NvtxRangeRow row;
    row.kind = kind;
    row.domain = ctx.store_string(static_cast<std::uint32_t>(e.a[0]));
    if (e.a[1] != 0) {
      row.name = ctx.store_string(static_cast<std::uint32_t>(e.a[1]));
    } else {
      const char* text = text_area(e);
      row.name = ctx.writer.intern(std::string_view(text, strnlen(text, kInlineText)));
    }
    row.category = static_cast<std::uint32_t>(e.root);
    row.start_ns = ctx.clock.to_ns(e.t0);
    row.thread = e.thread;
    row.depth = kind == store::NvtxKind::PushPop ? e.status : 0;
    if (e.op == kPayloadInt) {
      std::int64_t v;
      std::memcpy(&v, &e.a[3], sizeof v);
      row.payload_int = v;
    } else if (e.op == kPayloadDouble) {
      double v;
      std::memcpy(&v, &e.a[3], sizeof v);
      row.payload_double = v;
    }
    if (e.flags & kNvtxHasColor) row.color = e.comm_slot;
    return row;
  }

  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<store::NvtxRangeRow>> stacks_;
  std::unordered_map<std::uint64_t, store::NvtxRangeRow> started_;
  std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::uint32_t>> early_ends_;  // id -> (end ns, thread)
  std::uint64_t writer_unbalanced_ = 0;
  std::uint64_t written_unbalanced_ = 0;
};

NvtxRangeWriter& range_writer() {
  static auto* w = new NvtxRangeWriter();  // never destroyed: the final drain runs at exit
  return *w;
}

const bool g_registered = [] {
  for (EventKind k : {EventKind::NvtxPush, EventKind::NvtxPop, EventKind::NvtxStart, EventKind::NvtxEnd,
                      EventKind::NvtxMark})
    set_event_handler(k, [](const Event& e, WriterContext& ctx) { range_writer().handle(e, ctx); });
  add_drain_hook([](WriterContext& ctx) { range_writer().on_drain(ctx); });
  return true;
}();

// ---- attaching to the job's NVTX ------------------------------------------------------------------------

using GetModuleFunctionTable = decltype(NvtxExportTableCallbacks::GetModuleFunctionTable);

template <typename Fn>
void install(GetModuleFunctionTable get_table, NvtxCallbackModule module, unsigned id, Fn fn) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!get_table(module, &table, &size) || !table || id >= size || !table[id]) return;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

// An NVTX-only process (no MPI: torchrun workers, single-process jobs) has nothing else that opens its trace
// file, so the first NVTX call does, with the launcher's rank. MPI processes open it at MPI_Init; NVTX events
// before that are buffered. A forked child is disabled and stays so.
void start_runtime_for_nvtx() {
  StartInfo info;
  info.world_rank = std::max(0, world_rank_from_env());
  info.world_size = std::max(1, world_size_from_env());
  info.meta.emplace_back("trace_started_by", "nvtx");
  runtime_start(info);
}

// Set in a forked child (registered at load, before any fork): a child never opens a file, even one forked
// before the parent's first NVTX call or before the parent's file was opened.
std::atomic<bool> g_forked_child{false};
const bool g_fork_handler = [] {
  pthread_atfork(nullptr, nullptr, [] {
    g_forked_child.store(true, std::memory_order_relaxed);
    int idle = kIdle;
    g_phase.compare_exchange_strong(idle, kDisabled);
  });
  return true;
}();

void start_runtime_if_alone() {
  const char* dir = std::getenv("COLLSCOPE_RUN_DIR");
  if (!dir || !*dir || g_phase.load() != kIdle || g_forked_child.load()) return;
  if (!job_defines("PMPI_Init")) {
    start_runtime_for_nvtx();
    return;
  }
  // MPI is linked but may never be initialised (a tool that links MPI and runs serially): if the file is still
  // not open at exit, open it then, so the ranges buffered in the rings (up to a ring per thread) are kept.
  std::atexit([] {
    if (g_phase.load() != kIdle || g_forked_child.load()) return;
    start_runtime_for_nvtx();
    runtime_stop();
  });
}

}  // namespace
}  // namespace collscope::tracer

using namespace collscope::tracer;

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export) {
  if (!get_export) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable)
    return 0;
  auto get = callbacks->GetModuleFunctionTable;
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, &MarkEx);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, &MarkA);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkW, &MarkW);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, &RangeStartEx);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, &RangePushA);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, &RangePushW);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, &RangePop);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryA, &NameCategoryA);
  install(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryW, &NameCategoryW);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryA, &DomainNameCategoryA);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryW, &DomainNameCategoryW);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, &DomainDestroy);
  install(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_Initialize, &Initialize);
  start_runtime_if_alone();
  return 1;
}
