// Scheduler counters of the threads that make MPI calls (cpu_sampling.hpp), and their rows.
#include "core/cpu_sampling.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/runtime.hpp"
#include "core/thread_buffer.hpp"

namespace collscope::tracer {

std::atomic<std::uint64_t> g_cpu_sample_gap_ticks{0};
constinit thread_local std::uint64_t t_last_cpu_sample = 0;

namespace {

// -2: not opened yet on this thread; -1: cannot be read here (no /proc, an old kernel), or the thread is exiting:
// never tried again.
constinit thread_local int t_schedstat_fd = -2;
// This thread's instruction counter, the same way (read_instructions).
constinit thread_local int t_instructions_fd = -2;

// A thread's descriptors are closed when it exits: a job that starts a thread per task (a pool that grows and
// shrinks, one thread per request) would otherwise lose one or two descriptors per thread to the tracer until its
// own open() fails at the descriptor limit. A pthread key's destructor, set on a thread's first open (once per
// thread, off the hot path); initial-exec TLS is still there when key destructors run.
pthread_key_t g_thread_fds_key;
bool g_thread_fds_key_made = false;

void close_thread_fds(void*) {
  if (t_schedstat_fd >= 0) ::close(t_schedstat_fd);
  if (t_instructions_fd >= 0) ::close(t_instructions_fd);
  t_schedstat_fd = t_instructions_fd = -1;  // an MPI call in a later destructor samples nothing
}

void close_at_thread_exit() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] { g_thread_fds_key_made = pthread_key_create(&g_thread_fds_key, close_thread_fds) == 0; });
  if (g_thread_fds_key_made) pthread_setspecific(g_thread_fds_key, &g_thread_fds_key);  // any non-null value
}

bool read_schedstat(std::uint64_t (&values)[3]) {
  if (t_schedstat_fd == -2) {
    t_schedstat_fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (t_schedstat_fd >= 0) close_at_thread_exit();
  }
  if (t_schedstat_fd < 0) return false;
  char buf[96];
  const ssize_t n = ::pread(t_schedstat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  // "<ns on a CPU> <ns waiting on a run queue> <timeslices>\n"
  const char* p = buf;
  const char* end = buf + n;
  for (auto& v : values) {
    while (p < end && *p == ' ') ++p;
    const auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc{}) return false;
    p = r.ptr;
  }
  return true;
}

// Instructions retired: whether perf events count them here (probed once when the trace starts; each thread's
// counter is t_instructions_fd, -1 where it cannot be opened). A virtual machine without a virtual PMU, or
// perf_event_paranoid above 2, has none: the samples then hold the scheduler counters alone.
std::atomic<bool> g_instructions_counted{false};
constexpr std::uint64_t kNoInstructions = ~std::uint64_t{0};

// A counter of the calling thread's user-space instructions, or -1 with errno set.
int open_instructions_counter() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.exclude_kernel = 1;  // what the job's own code does; also what perf_event_paranoid 2 allows
  attr.exclude_hv = 1;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any CPU */, -1,
                                    PERF_FLAG_FD_CLOEXEC));
}

std::uint64_t read_instructions() {
  if (!g_instructions_counted.load(std::memory_order_relaxed)) return kNoInstructions;
  if (t_instructions_fd == -2) {
    t_instructions_fd = open_instructions_counter();
    if (t_instructions_fd >= 0) close_at_thread_exit();
  }
  std::uint64_t count = 0;
  if (t_instructions_fd < 0 || ::read(t_instructions_fd, &count, sizeof count) != sizeof count) return kNoInstructions;
  return count;
}

}  // namespace

void take_cpu_sample(std::uint64_t now_ticks, CpuSampleSite site) {
  t_last_cpu_sample = now_ticks;
  // The job's errno stays as its call left it: a failed read here is the tracer's business.
  struct KeepErrno {
    int saved = errno;
    ~KeepErrno() { errno = saved; }
  } keep_errno;
  std::uint64_t v[3];
  if (!read_schedstat(v)) return;
  emit([&](Event& e) {
    e = Event{};
    e.kind = EventKind::CpuSample;
    e.op = static_cast<std::uint8_t>(site);
    e.t0 = now_ticks;
    e.a[0] = v[0];
    e.a[1] = v[1];
    e.a[2] = v[2];
    e.a[3] = read_instructions();
  });
}

void init_cpu_sampling() {
  static const bool registered = [] {
    set_event_handler(EventKind::CpuSample, [](const Event& e, WriterContext& ctx) {
      ctx.writer.add(store::CpuSampleRow{
          e.thread, ctx.clock.to_ns(e.t0), e.op, static_cast<std::int64_t>(e.a[0]), static_cast<std::int64_t>(e.a[1]),
          static_cast<std::int64_t>(e.a[2]),
          e.a[3] == kNoInstructions ? std::nullopt : std::optional<std::int64_t>(static_cast<std::int64_t>(e.a[3]))});
    });
    return true;
  }();
  (void)registered;
  long gap_us = 1000;
  if (const char* env = std::getenv("COLLSCOPE_CPU_SAMPLE_US"); env && *env) gap_us = std::strtol(env, nullptr, 10);
  if (gap_us <= 0 || ::access("/proc/thread-self/schedstat", R_OK) != 0) {
    runtime_set_meta("cpu_sampling", gap_us <= 0 ? "off (COLLSCOPE_CPU_SAMPLE_US=0)" : "off (no /proc/thread-self/schedstat)");
    return;
  }
  // Ticks per microsecond, over 200 us of wall time (ticks are ns already without an invariant TSC).
  const std::int64_t ns0 = monotonic_ns();
  const std::uint64_t t0 = ticks();
  std::int64_t ns1 = ns0;
  while ((ns1 = monotonic_ns()) - ns0 < 200'000) {
  }
  const double ticks_per_ns = double(ticks() - t0) / double(ns1 - ns0);
  g_cpu_sample_gap_ticks.store(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(ticks_per_ns * 1000.0 * double(gap_us))),
                               std::memory_order_relaxed);
  // Instructions retired, where perf events count them (COLLSCOPE_INSTRUCTIONS=0 turns them off): one more read
  // per sample.
  std::string instructions = "instructions off (COLLSCOPE_INSTRUCTIONS=0)";
  if (const char* env = std::getenv("COLLSCOPE_INSTRUCTIONS"); !env || std::string_view(env) != "0") {
    const int fd = open_instructions_counter();
    if (fd >= 0) {
      ::close(fd);
      g_instructions_counted.store(true, std::memory_order_relaxed);
      instructions = "instructions retired (perf events, user space)";
    } else {
      instructions = fmt::format("no instructions (perf_event_open: {})", std::strerror(errno));
    }
  }
  runtime_set_meta("cpu_sampling",
                   fmt::format("schedstat at MPI call entry/exit, every >= {} us per thread; {}", gap_us, instructions));
}

}  // namespace collscope::tracer
