// Added cost per intercepted MPI call: MPI_Allreduce of one int on MPI_COMM_SELF in a loop, with and without the
// preload, alternated in one run (5 pairs, medians); MPI_Test until done after an MPI_Iallreduce; MPI_Testany in a
// polling loop over 16 receives (8 pending, 8 already MPI_REQUEST_NULL: HPCC's RandomAccess polls like this). Also
// measures the two clock reads in the same run.
//   mpi_call_overhead --preload PATH [--pairs 5] [--other-preload PATH]
//       (driver: runs itself under mpirun -np 1, twice per pair; with --other-preload three times, that preload's
//       figures beside: an older build against the current one in the same run)
//   COLLSCOPE_BENCH_CHILD=1 mpi_call_overhead        (child: prints its figures)
#include <collscope/process/process.hpp>
#include <mpi.h>
#include <fmt/format.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "thread_cpu_time.hpp"

using Clock = std::chrono::steady_clock;

namespace {

// Paced: batches of 1500 calls, 30 ms apart (the writer drains between them when it gets a CPU), timed by the clock
// and by the calling thread's CPU time (which leaves out the time other processes held its core: on a loaded host
// the wall time of a batch is mostly that). Tight: 2 M calls back to back.
int child() {
  MPI_Init(nullptr, nullptr);
  int in = 1, out = 0;
  for (int i = 0; i < 20000; ++i) MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  double paced_ns = 0, paced_cpu_ns = 0;
  long paced_calls = 0;
  for (int round = 0; round < 100; ++round) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ns();
    for (int i = 0; i < 1500; ++i) MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    paced_cpu_ns += thread_cpu_ns() - c0;
    paced_ns += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    paced_calls += 1500;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  const long tight_calls = 2'000'000;
  const auto t0 = Clock::now();
  for (long i = 0; i < tight_calls; ++i) MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  const double tight_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  // Non-blocking: MPI_Iallreduce then MPI_Test until done (the pending table: add, complete), paced likewise.
  double nb_ns = 0;
  long nb_calls = 0;
  for (int round = 0; round < 100; ++round) {
    const auto n0 = Clock::now();
    for (int i = 0; i < 700; ++i) {
      MPI_Request req;
      MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &req);
      for (int done = 0; !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    nb_ns += std::chrono::duration<double, std::nano>(Clock::now() - n0).count();
    nb_calls += 700;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  // Polling: MPI_Testany over 16 receives on MPI_COMM_SELF, 8 of them pending (no message yet) and 8 already
  // completed (MPI_REQUEST_NULL), 200 rounds of 1 000 calls, CPU time of the calling thread; then the messages.
  MPI_Request polled[16];
  int payload[16] = {}, got[16] = {};
  for (int k = 0; k < 16; ++k) {
    MPI_Irecv(&got[k], 1, MPI_INT, 0, k, MPI_COMM_SELF, &polled[k]);
    if (k % 2) {
      MPI_Send(&payload[k], 1, MPI_INT, 0, k, MPI_COMM_SELF);
      MPI_Wait(&polled[k], MPI_STATUS_IGNORE);  // now MPI_REQUEST_NULL
    }
  }
  double poll_cpu_ns = 0;
  long poll_calls = 0;
  for (int round = 0; round < 200; ++round) {
    const double c0 = thread_cpu_ns();
    for (int i = 0; i < 1000; ++i) {
      int index = 0, flag = 0;
      MPI_Testany(16, polled, &index, &flag, MPI_STATUS_IGNORE);
    }
    poll_cpu_ns += thread_cpu_ns() - c0;
    poll_calls += 1000;
  }
  for (int k = 0; k < 16; k += 2) MPI_Send(&payload[k], 1, MPI_INT, 0, k, MPI_COMM_SELF);
  MPI_Waitall(16, polled, MPI_STATUSES_IGNORE);
  std::printf("CHILD paced %.2f tight %.2f nonblocking %.2f pacedcpu %.2f testany %.2f\n", paced_ns / paced_calls,
              tight_ns / tight_calls, nb_ns / nb_calls, paced_cpu_ns / paced_calls, poll_cpu_ns / poll_calls);
  MPI_Finalize();
  return 0;
}

std::array<double, 5> run_child(const std::string& self, const std::string& preload, const std::string& dir) {
  collscope::process::Command command({"mpirun", "-np", "1", "--oversubscribe", self});
  command.set_env("COLLSCOPE_BENCH_CHILD", "1");
  if (!preload.empty()) command.set_env("LD_PRELOAD", preload).set_env("COLLSCOPE_RUN_DIR", dir);
  command.out = collscope::process::Redirect::capture();
  command.err = collscope::process::Redirect::to_stdout();
  std::array<double, 5> r{0, 0, 0, 0, 0};
  std::string output;
  try {
    output = collscope::process::run(command).out;
  } catch (const collscope::process::LaunchError& e) {
    std::fprintf(stderr, "mpi_call_overhead: %s\n", e.what());
  }
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    std::sscanf(line.c_str(), "CHILD paced %lf tight %lf nonblocking %lf pacedcpu %lf testany %lf", &r[0], &r[1], &r[2],
                &r[3], &r[4]);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ns_per(auto&& fn) {
  const int n = 10'000'000;
  volatile std::uint64_t sink = 0;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) sink = sink + fn();
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("COLLSCOPE_BENCH_CHILD")) return child();
  std::string preload, other;
  int pairs = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--preload") && i + 1 < argc) preload = argv[++i];
    else if (!std::strcmp(argv[i], "--other-preload") && i + 1 < argc) other = argv[++i];
    else if (!std::strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = std::atoi(argv[++i]);
  }
  if (preload.empty()) {
    std::fprintf(stderr, "usage: mpi_call_overhead --preload PATH/libcollscope-preload.so [--pairs N]\n");
    return 2;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string dir = (std::filesystem::temp_directory_path() / fmt::format("collscope-overhead-{}", getpid())).string();
  std::vector<double> base_paced, base_tight, traced_paced, traced_tight, base_nb, traced_nb, base_cpu, traced_cpu;
  std::vector<double> base_poll, traced_poll, other_poll;
  for (int i = 0; i < pairs; ++i) {
    auto b = run_child(self, "", dir);
    auto t = run_child(self, preload, dir);
    if (!other.empty()) other_poll.push_back(run_child(self, other, dir)[4]);
    base_poll.push_back(b[4]);
    traced_poll.push_back(t[4]);
    base_paced.push_back(b[0]);
    base_tight.push_back(b[1]);
    traced_paced.push_back(t[0]);
    traced_tight.push_back(t[1]);
    base_nb.push_back(b[2]);
    traced_nb.push_back(t[2]);
    base_cpu.push_back(b[3]);
    traced_cpu.push_back(t[3]);
  }
  std::filesystem::remove_all(dir);
  const double clock_ns = ns_per([] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_nsec);
  });
  const double tsc_ns = ns_per([] { return __rdtsc(); });
  fmt::print("mpi_call_overhead: clock_gettime(CLOCK_MONOTONIC) {:.1f} ns, rdtsc {:.1f} ns (this machine, this run)\n",
             clock_ns, tsc_ns);
  fmt::print("mpi_call_overhead: MPI_Allreduce(1 int, MPI_COMM_SELF), medians of {} alternated pairs:\n", pairs);
  fmt::print("  paced (every event written): untraced {:.1f} ns/call, traced {:.1f} ns/call, added {:.1f} ns, ratio {:.2f}\n",
             median(base_paced), median(traced_paced), median(traced_paced) - median(base_paced),
             median(traced_paced) / median(base_paced));
  fmt::print("  paced, CPU time of the calling thread: untraced {:.1f} ns/call, traced {:.1f} ns/call, added {:.1f} ns, ratio {:.2f}\n",
             median(base_cpu), median(traced_cpu), median(traced_cpu) - median(base_cpu),
             median(traced_cpu) / median(base_cpu));
  fmt::print("  tight (2 M calls back to back): untraced {:.1f}, traced {:.1f} ns/call, added {:.1f} ns, ratio {:.2f}\n",
             median(base_tight), median(traced_tight), median(traced_tight) - median(base_tight),
             median(traced_tight) / median(base_tight));
  fmt::print("  non-blocking (MPI_Iallreduce + MPI_Test until done, paced): untraced {:.1f}, traced {:.1f} ns/pair, added {:.1f} ns, ratio {:.2f}\n",
             median(base_nb), median(traced_nb), median(traced_nb) - median(base_nb), median(traced_nb) / median(base_nb));
  fmt::print("  polling (MPI_Testany over 16 receives, 8 pending, 8 MPI_REQUEST_NULL), CPU time of the calling thread: "
             "untraced {:.1f}, traced {:.1f} ns/call, added {:.1f} ns, ratio {:.2f}\n",
             median(base_poll), median(traced_poll), median(traced_poll) - median(base_poll),
             median(traced_poll) / median(base_poll));
  if (!other.empty())
    fmt::print("  polling with {}: {:.1f} ns/call, added {:.1f} ns, ratio {:.2f}\n", other, median(other_poll),
               median(other_poll) - median(base_poll), median(other_poll) / median(base_poll));
  return 0;
}
