#include "cuda/cupti_decode.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

namespace collscope::tracer::gpu {
namespace {

std::string demangle(const char* name) {
  if (!name) return "kernel";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

std::string sync_name(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "sync event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "sync stream-wait-event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "sync stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "sync context";
    default: return "sync";
  }
}

}  // namespace

store::GpuActivityRecord gpu_activity_record(const DecodedActivity& a, std::int64_t name, std::int64_t clock_offset_ns) {
  store::GpuActivityRecord r;
  r.kind = static_cast<std::uint8_t>(a.kind);
  r.name = name;
  r.device = a.device;
  r.stream = a.stream;
  r.start_ns = static_cast<std::int64_t>(a.start) + clock_offset_ns;
  r.end_ns = static_cast<std::int64_t>(a.end) + clock_offset_ns;
  r.correlation = a.correlation;
  r.bytes = a.bytes;
  if (a.copy_kind) r.copy_kind = *a.copy_kind, r.flags |= store::kRecordCopyKind;
  return r;
}

std::string memcpy_kind_name(std::uint32_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "memcpy DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

DecodedRecord decode_cupti_record(const CUpti_Activity* record) {
  DecodedRecord out;
  if (!record) return out;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      DecodedActivity a;
      a.kind = store::GpuActivityKind::Kernel;
      a.name = demangle(k->name);
      a.device = static_cast<std::int32_t>(k->deviceId);
      a.stream = k->streamId;
      a.start = k->start;
      a.end = k->end;
      a.correlation = k->correlationId;
      out.activity = std::move(a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      DecodedActivity a;
      a.kind = store::GpuActivityKind::Memcpy;
      a.name = memcpy_kind_name(m->copyKind);
      a.device = static_cast<std::int32_t>(m->deviceId);
      a.stream = m->streamId;
      a.start = m->start;
      a.end = m->end;
      a.correlation = m->correlationId;
      a.bytes = static_cast<std::int64_t>(m->bytes);
      a.copy_kind = m->copyKind;
      out.activity = std::move(a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      DecodedActivity a;
      a.kind = store::GpuActivityKind::Memset;
      a.name = "memset";
      a.device = static_cast<std::int32_t>(m->deviceId);
      a.stream = m->streamId;
      a.start = m->start;
      a.end = m->end;
      a.correlation = m->correlationId;
      a.bytes = static_cast<std::int64_t>(m->bytes);
      out.activity = std::move(a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      DecodedActivity a;
      a.kind = store::GpuActivityKind::Sync;
      a.name = sync_name(s->type);
      a.stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId;
      a.start = s->start;
      a.end = s->end;
      a.correlation = s->correlationId;
      out.activity = std::move(a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        out.external = ExternalCorrelation{x->externalId, x->correlationId};
      break;
    }
    default:
      break;
  }
  return out;
}

void GpuTimeMatcher::add_collective(std::uint64_t external_id, std::int64_t row_id) {
  rows_[external_id].push_back(row_id);
  newest_ = std::max(newest_, external_id);
  auto it = spans_.find(external_id);
  if (it != spans_.end() && it->second.known) it->second.dirty = true;
  if (auto a = activities_.find(external_id); a != activities_.end())
    for (std::int64_t activity : a->second) links_.push_back({row_id, activity});
  evict();
}

void GpuTimeMatcher::add_external(std::uint64_t external_id, std::uint32_t correlation) {
  external_of_[correlation] = external_id;
  newest_ = std::max(newest_, external_id);
  auto early = early_kernels_.find(correlation);
  if (early != early_kernels_.end()) {
    extend(external_id, early->second);
    early_kernels_.erase(early);
  }
}

void GpuTimeMatcher::add_kernel(std::uint32_t correlation, std::int64_t start_ns, std::int64_t end_ns,
                                std::int64_t activity_row) {
  const Work work{start_ns, end_ns, activity_row};
  auto it = external_of_.find(correlation);
  if (it == external_of_.end()) {
    // CUPTI may deliver the kernel before the correlation record (different buffers): keep it for a while.
    if (early_kernels_.size() < kKeep) early_kernels_[correlation] = work;
    return;
  }
  extend(it->second, work);
}

void GpuTimeMatcher::extend(std::uint64_t external_id, const Work& work) {
  if (work.activity_row) {
    activities_[external_id].push_back(work.activity_row);
    if (auto rows = rows_.find(external_id); rows != rows_.end())
      for (std::int64_t row : rows->second) links_.push_back({row, work.activity_row});
  }
  Span& s = spans_[external_id];
  if (!s.known) {
    s = {work.start, work.end, true, true};
    return;
  }
  if (work.start < s.start || work.end > s.end) {
    s.start = std::min(s.start, work.start);
    s.end = std::max(s.end, work.end);
    s.dirty = true;
  }
}

std::vector<GpuTimeMatcher::Link> GpuTimeMatcher::take_links() {
  std::vector<Link> out;
  out.swap(links_);
  return out;
}

std::vector<GpuTimeMatcher::Update> GpuTimeMatcher::take_updates() {
  std::vector<Update> out;
  for (auto& [ext, span] : spans_) {
    if (!span.dirty) continue;
    auto rows = rows_.find(ext);
    if (rows == rows_.end()) continue;  // the collective row comes in a later drain
    for (std::int64_t row : rows->second) out.push_back({row, span.start, span.end});
    span.dirty = false;
  }
  std::sort(out.begin(), out.end(), [](const Update& a, const Update& b) { return a.row_id < b.row_id; });
  return out;
}

void GpuTimeMatcher::evict() {
  if (newest_ < kKeep || rows_.size() < kKeep) return;
  const std::uint64_t oldest = newest_ - kKeep;
  std::erase_if(rows_, [&](const auto& kv) { return kv.first < oldest; });
  std::erase_if(spans_, [&](const auto& kv) { return kv.first < oldest; });
  std::erase_if(activities_, [&](const auto& kv) { return kv.first < oldest; });
  std::erase_if(external_of_, [&](const auto& kv) { return kv.second < oldest; });
}

}  // namespace collscope::tracer::gpu
