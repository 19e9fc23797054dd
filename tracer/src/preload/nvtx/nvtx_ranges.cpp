// The NVTX recording path without the NVTX API (nvtx_recording.hpp): push levels, names, pop/end, the writer
// that pairs ranges into nvtx_ranges rows, and opening the trace file of a process without MPI.
#include <pthread.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/job_metadata.hpp"
#include "nvtx/nvtx_recording.hpp"
#include "core/string_pool.hpp"
#include "core/symbols.hpp"

namespace collscope::tracer::nvtx {

std::atomic<std::uint64_t> g_next_range_id{1};
std::atomic<std::uint64_t> g_unbalanced_pops{0};

namespace {

// ---- push levels per thread and domain (the value nvtxRangePush/Pop return) -----------------------------

constexpr int kDomainSlots = 16;
struct DomainDepth {
  std::uint64_t domain;
  std::int32_t depth;
};
// initial-exec, as the buffer pointer (thread_buffer.cpp): the preload is loaded at start-up, TLS reads are one load.
__attribute__((tls_model("initial-exec"))) thread_local std::int32_t t_default_depth = 0;  // the default domain
__attribute__((tls_model("initial-exec"))) thread_local DomainDepth t_domain_depth[kDomainSlots] = {};

}  // namespace

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

namespace {

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

}  // namespace

void set_ascii_name(Event& e, const char* message) {
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
  maybe_sample_cpu(t, CpuSampleSite::RangeBoundary);
  emit([&](Event& e) {
    e.kind = EventKind::NvtxPop;
    e.t0 = t;
    e.a[0] = domain;
    e.status = level;
  });
  return level;
}

void end(std::uint64_t domain, std::uint64_t id) {
  if (!recording()) return;
  const std::uint64_t t = ticks();
  emit([&](Event& e) {
    e.kind = EventKind::NvtxEnd;
    e.t0 = t;
    e.a[0] = domain;
    e.a[2] = id;
  });
}

void name_category(std::uint64_t domain, std::uint32_t category, const std::string& name) {
  const char* d = domain ? pool_string(static_cast<std::uint32_t>(domain)) : "default";
  runtime_set_meta(fmt::format("nvtx.category.{}.{}", d, category), name);
}

namespace {

// ---- writer side: pair pushes with pops and starts with ends ---------------------------------------------

class NvtxRangeWriter {
 public:
  void handle(const Event& e, WriterContext& ctx) {
    switch (e.kind) {
      case EventKind::NvtxPush:
        stacks_[{e.thread, e.a[0]}].push_back(begin_record(e, ctx, store::NvtxKind::PushPop));
        break;
      case EventKind::NvtxPop: {
        auto it = stacks_.find({e.thread, e.a[0]});
        if (it == stacks_.end() || it->second.empty()) {
          ++writer_unbalanced_;  // a push recorded before tracing started (or dropped): cannot pair
          break;
        }
        store::NvtxRangeRecord r = it->second.back();
        it->second.pop_back();
        end_at(r, ctx.clock.to_ns(e.t0));
        ctx.add(r);
        break;
      }
      case EventKind::NvtxStart: {
        store::NvtxRangeRecord r = begin_record(e, ctx, store::NvtxKind::StartEnd);
        // The buffers are drained one thread after another, so the end of a range ended on another thread can
        // come first: it waits in early_ends_.
        auto early = early_ends_.find(e.a[2]);
        if (early != early_ends_.end()) {
          end_at(r, early->second.first, early->second.second);
          early_ends_.erase(early);
          ctx.add(r);
        } else {
          started_[e.a[2]] = r;
        }
        break;
      }
      case EventKind::NvtxEnd: {
        auto it = started_.find(e.a[2]);
        if (it == started_.end()) {
          early_ends_[e.a[2]] = {ctx.clock.to_ns(e.t0), e.thread};
          break;
        }
        end_at(it->second, ctx.clock.to_ns(e.t0), e.thread);
        ctx.add(it->second);
        started_.erase(it);
        break;
      }
      case EventKind::NvtxMark:
        ctx.add(begin_record(e, ctx, store::NvtxKind::Mark));
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
    if (!ctx.final_drain) return;
    for (auto& [key, stack] : stacks_)
      for (const auto& r : stack) ctx.add(r);
    stacks_.clear();
    for (const auto& [id, r] : started_) ctx.add(r);
    started_.clear();
    // Ends of ranges never started (an id the job made up, or a start before tracing began).
    writer_unbalanced_ += early_ends_.size();
    early_ends_.clear();
    const std::uint64_t total = g_unbalanced_pops.load(std::memory_order_relaxed) + writer_unbalanced_;
    if (total != written_unbalanced_) ctx.writer.set_meta("nvtx_unbalanced_pops", std::to_string(total));
    written_unbalanced_ = total;
  }

 private:
  // The range an NVTX push, start or mark opens, as its nvtx_ranges record (event_batch.hpp).
  store::NvtxRangeRecord begin_record(const Event& e, WriterContext& ctx, store::NvtxKind kind) {
    store::NvtxRangeRecord r;
    r.kind = static_cast<std::uint8_t>(kind);
    r.domain = ctx.store_string(static_cast<std::uint32_t>(e.a[0]));
    if (e.a[1] != 0) {
      r.name = ctx.store_string(static_cast<std::uint32_t>(e.a[1]));
    } else {
      const char* text = text_area(e);
      r.name = ctx.writer.intern(std::string_view(text, strnlen(text, kInlineText)));
    }
    r.category = static_cast<std::uint32_t>(e.root);
    r.start_ns = ctx.clock.to_ns(e.t0);
    r.thread = e.thread;
    r.depth = kind == store::NvtxKind::PushPop ? e.status : 0;
    // The payload's 64 bits as the call gave them: an int64, or a double's IEEE-754 bits.
    if (e.op == kPayloadInt) std::memcpy(&r.payload, &e.a[3], sizeof r.payload), r.flags |= store::kRecordPayloadInt;
    else if (e.op == kPayloadDouble) std::memcpy(&r.payload, &e.a[3], sizeof r.payload), r.flags |= store::kRecordPayloadDouble;
    if (e.flags & kNvtxHasColor) r.color = e.comm_slot, r.flags |= store::kRecordColor;
    return r;
  }
  // A pop ends its push on the same thread; an end names the thread it ran on.
  static void end_at(store::NvtxRangeRecord& r, std::int64_t end_ns) {
    r.end_ns = end_ns;
    r.flags |= store::kRecordEnded;
  }
  static void end_at(store::NvtxRangeRecord& r, std::int64_t end_ns, std::uint32_t end_thread) {
    end_at(r, end_ns);
    r.end_thread = end_thread;
    r.flags |= store::kRecordEndThread;
  }

  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<store::NvtxRangeRecord>> stacks_;
  std::unordered_map<std::uint64_t, store::NvtxRangeRecord> started_;
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

// An NVTX-only process (no MPI: torchrun workers, single-process jobs) has nothing else that opens its trace
// file, so the first NVTX call does, with the launcher's rank. MPI processes open it at MPI_Init; NVTX events
// before that are buffered. A forked child is disabled and stays so.
void start_runtime_for_nvtx(int rank, int size) {
  StartInfo info;
  info.world_rank = std::max(0, rank >= 0 ? rank : world_rank_from_env());
  info.world_size = std::max(1, rank >= 0 && size > 0 ? size : world_size_from_env());
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

}  // namespace

void start_runtime_if_alone(int rank, int size) {
  const char* dir = std::getenv("COLLSCOPE_RUN_DIR");
  if (!dir || !*dir || g_phase.load() != kIdle || g_forked_child.load()) return;
  if (!job_defines("PMPI_Init")) {
    start_runtime_for_nvtx(rank, size);
    return;
  }
  // MPI is linked but may never be initialised (a tool that links MPI and runs serially): if the file is still
  // not open at exit, open it then, so the ranges buffered before it are kept.
  std::atexit([] {
    if (g_phase.load() != kIdle || g_forked_child.load()) return;
    start_runtime_for_nvtx(-1, -1);
    runtime_stop();
  });
}

}  // namespace collscope::tracer::nvtx
