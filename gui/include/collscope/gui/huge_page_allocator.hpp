#pragma once
// An allocator for the viewer's big event arrays that asks the kernel for transparent huge pages.
//
// Why: loading 1 M+ events fills a few hundred MiB of fresh memory, and with 4 KiB pages every page costs
// a fault on first touch. On the project's virtual machines those faults were more than half of the
// loader's time (viewer_bench: load 0.79 s with 4 KiB pages, 0.41 s with huge pages). Arrays of 2 MiB or
// more are mapped 2 MiB-aligned and marked MADV_HUGEPAGE, so one fault maps 512 pages; smaller ones use
// the ordinary allocator. Where the kernel has no transparent huge pages the advice is ignored and this
// behaves like a plain anonymous mapping.
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace collscope::gui {

namespace detail {
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Returns a kHugePageBytes-aligned mapping of round_up(bytes, kHugePageBytes); throws std::bad_alloc.
void* map_huge(std::size_t bytes);
void unmap_huge(void* p, std::size_t bytes);
}  // namespace detail

template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() noexcept = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) < detail::kHugePageBytes) return std::allocator<T>().allocate(n);
    return static_cast<T*>(detail::map_huge(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < detail::kHugePageBytes) std::allocator<T>().deallocate(p, n);
    else detail::unmap_huge(p, n * sizeof(T));
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

// The viewer's per-event arrays.
template <typename T>
using EventVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace collscope::gui
