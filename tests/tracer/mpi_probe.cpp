// A small MPI program with a known set of calls, the ground truth for the tracer's tests.
//   mpi_probe [--iterations N] [--sleep-ms-after-each N] [--fork-child] [--hang-rank R --hang-iteration K]
//             [--late-rank R --late-ms N] [--hang-nonblocking [--polling]] [--polling-threads T]
// Per iteration: Allreduce (world, 1024 floats), Bcast (world, 256 ints, root 0), Allreduce on the split
// communicator (color = rank % 2, 10 doubles), Iallreduce + Wait (world, 64 floats), Barrier (world).
// Once: Comm_dup + Allgather on it + Comm_free; Reduce, Gather, Scatter, Alltoall, Reduce_scatter_block on world.
// --hang-rank R: all ranks first dup the world communicator; at iteration K rank R calls a Barrier on that dup
// instead of the world Allreduce, so R waits in the barrier and the others in the allreduce: a deadlock.
// --hang-nonblocking: the others make that allreduce an Iallreduce and wait for it in MPI_Wait (with --polling:
// in a loop of MPI_Test and 1 ms sleeps, inside no MPI call most of the time).
// --polling-threads T: only this: T threads (MPI_THREAD_MULTIPLE), each on its own dup of the world, make
// `iterations` Iallreduce (64 floats) and spin on MPI_Test until each completes; prints "polling done".
// --thread-churn T: only this: T threads one after another (MPI_THREAD_MULTIPLE), each makes one Barrier on the
// world and exits; prints "thread churn: open descriptors +D" (after the last thread against before the first).
// --late-rank R: rank R sleeps N ms before the first Allreduce of iteration 1 (says "late" on stdout first).
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int iterations = 10;
  int sleep_ms = 0;
  bool fork_child = false;
  bool fork_after_init = false;
  bool progress = false;
  int exit_code = 0;
  int hang_rank = -1, hang_iteration = 0;
  int late_rank = -1, late_ms = 0;
  bool hang_nonblocking = false, polling = false;
  int polling_threads = 0;
  int churn_threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--sleep-ms-after-each") && i + 1 < argc) sleep_ms = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--fork-child")) fork_child = true;
    else if (!std::strcmp(argv[i], "--fork-after-init")) fork_after_init = true;
    else if (!std::strcmp(argv[i], "--progress")) progress = true;
    else if (!std::strcmp(argv[i], "--exit-code") && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--hang-rank") && i + 1 < argc) hang_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--hang-iteration") && i + 1 < argc) hang_iteration = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--late-rank") && i + 1 < argc) late_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--late-ms") && i + 1 < argc) late_ms = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--hang-nonblocking")) hang_nonblocking = true;
    else if (!std::strcmp(argv[i], "--polling")) polling = true;
    else if (!std::strcmp(argv[i], "--polling-threads") && i + 1 < argc) polling_threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--thread-churn") && i + 1 < argc) churn_threads = std::atoi(argv[++i]);
  }
  if (fork_child) {
    // A child forked before MPI_Init that never calls MPI (a data-loader worker): must write nothing.
    // fork without exec on purpose (what the tracer does in a forked child is the test), not the launcher.
    pid_t pid = fork();
    if (pid == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      _exit(0);
    }
  }
  // The threaded modes: MPI_THREAD_MULTIPLE, or exit 3 saying it is not provided.
  const auto init_thread_multiple = [&] {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided >= MPI_THREAD_MULTIPLE) return true;
    std::printf("mpi_probe: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return false;
  };
  if (polling_threads > 0) {
    if (!init_thread_multiple()) return 3;
    std::vector<MPI_Comm> comms(static_cast<std::size_t>(polling_threads));
    for (auto& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
    std::vector<std::thread> threads;
    for (auto& c : comms)
      threads.emplace_back([&c, iterations] {
        std::vector<float> x(64, 1.0f), y(64);
        for (int it = 0; it < iterations; ++it) {
          MPI_Request req;
          MPI_Iallreduce(x.data(), y.data(), 64, MPI_FLOAT, MPI_SUM, c, &req);
          for (int done = 0; !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
      });
    for (auto& t : threads) t.join();
    for (auto& c : comms) MPI_Comm_free(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    std::printf("mpi_probe: polling done\n");
    MPI_Finalize();
    return 0;
  }
  if (churn_threads > 0) {
    if (!init_thread_multiple()) return 3;
    const auto open_descriptors = [] {
      long n = 0;
      for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
      return n;
    };
    MPI_Barrier(MPI_COMM_WORLD);
    const long before = open_descriptors();
    for (int t = 0; t < churn_threads; ++t) std::thread([] { MPI_Barrier(MPI_COMM_WORLD); }).join();
    const long after = open_descriptors();
    std::printf("mpi_probe: thread churn: open descriptors %+ld\n", after - before);
    MPI_Finalize();
    return 0;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (fork_after_init) {
    // A helper process forked after MPI_Init that exits normally (atexit handlers run): it must neither write
    // nor damage the parent's trace. fork without exec on purpose, not the launcher.
    pid_t pid = fork();
    if (pid == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::exit(0);
    }
    waitpid(pid, nullptr, 0);
  }
  MPI_Comm hang_comm = MPI_COMM_NULL;
  if (hang_rank >= 0) MPI_Comm_dup(MPI_COMM_WORLD, &hang_comm);
  MPI_Comm split;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
  std::vector<float> f(1024, 1.0f), g(1024);
  std::vector<int> ints(256, rank);
  std::vector<double> d(10, 1.0), e(10);
  double t_sum = 0;
  std::string own_ns;  // each world allreduce as the program times it, ns, comma-separated
  for (int it = 0; it < iterations; ++it) {
    if (rank == hang_rank && it == hang_iteration) {
      std::printf("mpi_probe rank %d: hanging in a barrier the others never call\n", rank);
      std::fflush(stdout);
      MPI_Barrier(hang_comm);  // never returns
    }
    if (rank == late_rank && it == 1) {
      std::printf("mpi_probe rank %d: late\n", rank);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    }
    auto t0 = std::chrono::steady_clock::now();
    if (hang_nonblocking && hang_rank >= 0 && it == hang_iteration) {
      MPI_Request hung;
      MPI_Iallreduce(f.data(), g.data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &hung);
      // Never completes: rank hang_rank is in a barrier elsewhere.
      if (polling) {
        for (int done = 0; !done;) {
          MPI_Test(&hung, &done, MPI_STATUS_IGNORE);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      } else {
        MPI_Wait(&hung, MPI_STATUS_IGNORE);
      }
    } else {
      MPI_Allreduce(f.data(), g.data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_sum += took;
    own_ns += (own_ns.empty() ? "" : ",") + std::to_string(static_cast<long long>(took * 1e9));
    MPI_Bcast(ints.data(), 256, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(d.data(), e.data(), 10, MPI_DOUBLE, MPI_MAX, split);
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, f.data(), 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (progress) {
      std::printf("mpi_probe rank %d pid %d: iteration %d done\n", rank, (int)getpid(), it + 1);
      std::fflush(stdout);
    }
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  }
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  std::vector<int> gathered(size * 4);
  MPI_Allgather(ints.data(), 4, MPI_INT, gathered.data(), 4, MPI_INT, dup);
  MPI_Comm_free(&dup);
  MPI_Reduce(f.data(), g.data(), 16, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Gather(ints.data(), 2, MPI_INT, gathered.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Scatter(gathered.data(), 2, MPI_INT, ints.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Alltoall(gathered.data(), 1, MPI_INT, ints.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(f.data(), g.data(), 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("mpi_probe rank %d: iterations %d allreduce_world_total_s %.9f allreduce_world_ns %s\n", rank, iterations,
              t_sum, own_ns.c_str());
  MPI_Comm_free(&split);
  MPI_Finalize();
  if (fork_child) wait(nullptr);
  return exit_code;
}
