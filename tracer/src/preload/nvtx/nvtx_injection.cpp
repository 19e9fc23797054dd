// NVTX injection: the preload is also the job's NVTX tool library. `collscope trace` sets
// NVTX_INJECTION64_PATH to this library; on the job's first NVTX call the NVTX3 headers compiled into the job
// dlopen it (already loaded through LD_PRELOAD, so the same instance) and call InitializeInjectionNvtx2, which
// points the job's NVTX function tables at the handlers below. They record through nvtx_recording.hpp (the hot
// path, the event layout and the writer are described there).
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstring>
#include <cwchar>
#include <string>

#include "nvtx/nvtx_recording.hpp"
#include "core/string_pool.hpp"

namespace collscope::tracer {
namespace {

using namespace nvtx;

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
  clear_attributes(e);
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

// ---- attaching to the job's NVTX ------------------------------------------------------------------------

using GetModuleFunctionTable = decltype(NvtxExportTableCallbacks::GetModuleFunctionTable);

template <typename Fn>
void install(GetModuleFunctionTable get_table, NvtxCallbackModule module, unsigned id, Fn fn) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!get_table(module, &table, &size) || !table || id >= size || !table[id]) return;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
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
  nvtx::start_runtime_if_alone();
  return 1;
}
