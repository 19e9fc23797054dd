#include <collscope/gui/huge_page_allocator.hpp>

#include <cstdint>

#include <sys/mman.h>

namespace collscope::gui::detail {
namespace {
std::size_t round_up(std::size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }
}  // namespace

void* map_huge(std::size_t bytes) {
  const std::size_t length = round_up(bytes);
  // Over-map by one huge page and trim both ends, so the kept range starts on a 2 MiB boundary (the
  // kernel backs only aligned 2 MiB ranges with huge pages).
  void* raw = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  const std::size_t tail = (start + length + kHugePageBytes) - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // a hint: ignored without THP
#endif
  return reinterpret_cast<void*>(aligned);
}

void unmap_huge(void* p, std::size_t bytes) { munmap(p, round_up(bytes)); }

}  // namespace collscope::gui::detail
