// What the first write to new memory costs on this machine, against a second write to the same memory, in the same
// run: the price a recording thread pays per event whenever the tracer's buffers grow instead of being recycled
// (docs/performance.md, "Tracer: cost per MPI call"). 64 MiB mapped the way the tracer maps its slabs
// (MAP_POPULATE), then written twice with memset; CPU time of this thread per 4 KiB page.
//   first_touch [MiB]
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "thread_cpu_time.hpp"

int main(int argc, char** argv) {
  const std::size_t bytes = std::size_t(argc > 1 ? std::atoi(argv[1]) : 64) << 20;
  const double pages = double(bytes) / 4096;
  const double t0 = thread_cpu_ns();
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "first_touch: cannot map %zu MiB\n", bytes >> 20);
    return 2;
  }
  const double t1 = thread_cpu_ns();
  std::memset(p, 1, bytes);
  const double t2 = thread_cpu_ns();
  std::memset(p, 2, bytes);
  const double t3 = thread_cpu_ns();
  const double first = (t2 - t1) / pages, second = (t3 - t2) / pages;
  std::printf("first_touch: %zu MiB, CPU ns per 4 KiB page: mmap with MAP_POPULATE %.0f, first write %.0f, second "
              "write %.0f (ratio %.1f); per 128-byte event, first write %.1f ns\n",
              bytes >> 20, (t1 - t0) / pages, first, second, first / second, first / 32);
  munmap(p, bytes);
  return 0;
}
