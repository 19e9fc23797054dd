#include "core/symbols.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace collscope::tracer {
namespace {

// The preload's own load address, to skip it among the loaded objects.
const void* own_base() {
  static const void* base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<const void*>(&own_base), &info);
    return info.dli_fbase;
  }();
  return base;
}

// The handle of the object whose own symbol table holds `symbol`, or null.
void* defining_handle(const char* path, const char* symbol) {
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return nullptr;
  // dlsym on a handle also searches the object's dependencies: keep it only if the definition is its own.
  Dl_info info{};
  void* p = dlsym(handle, symbol);
  if (p && dladdr(p, &info) && info.dli_fname && std::strcmp(info.dli_fname, path) == 0 && info.dli_fbase != own_base())
    return handle;
  dlclose(handle);
  return nullptr;
}

struct Search {
  const char* symbol;
  void* handle;
};

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;  // the executable: its handle would search the preload too
  s->handle = defining_handle(info->dlpi_name, s->symbol);
  return s->handle ? 1 : 0;
}

}  // namespace

void* loaded_library_defining(const char* symbol) {
  if (void* p = dlsym(RTLD_NEXT, symbol)) {
    Dl_info info{};
    if (dladdr(p, &info) && info.dli_fname && *info.dli_fname)
      if (void* h = defining_handle(info.dli_fname, symbol)) return h;
  }
  Search s{symbol, nullptr};
  dl_iterate_phdr(&visit, &s);
  return s.handle;
}

bool job_defines(const char* symbol) {
  void* handle = loaded_library_defining(symbol);
  if (handle) dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return handle != nullptr;
}

void* next_function(const char* name, void* library) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  return library ? dlsym(library, name) : nullptr;
}

void* data_symbol(const char* name, void* library) {
  if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
  return library ? dlsym(library, name) : nullptr;
}

}  // namespace collscope::tracer
