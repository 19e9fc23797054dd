#include "core/string_pool.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace collscope::tracer {
namespace {
std::atomic<const char*> g_strings[kMaxPooledStrings];
std::mutex g_mutex;
std::uint32_t g_next = 1;

std::unordered_map<std::string, std::uint32_t>& index() {
  static auto* map = new std::unordered_map<std::string, std::uint32_t>();  // never destroyed: used at exit
  return *map;
}
}  // namespace

std::uint32_t pool_intern(std::string_view s) {
  if (s.empty()) return 0;
  std::lock_guard lock(g_mutex);
  auto& map = index();
  auto it = map.find(std::string(s));
  if (it != map.end()) return it->second;
  if (g_next >= kMaxPooledStrings) return 0;
  char* copy = static_cast<char*>(std::malloc(s.size() + 1));
  if (!copy) return 0;
  std::memcpy(copy, s.data(), s.size());
  copy[s.size()] = '\0';
  const std::uint32_t id = g_next++;
  g_strings[id].store(copy, std::memory_order_release);
  map.emplace(std::string(s), id);
  return id;
}

const char* pool_string(std::uint32_t id) {
  if (id == 0 || id >= kMaxPooledStrings) return "";
  const char* s = g_strings[id].load(std::memory_order_acquire);
  return s ? s : "";
}

}  // namespace collscope::tracer
