// An MPI program with known wait states, the ground truth for the point-to-point and non-blocking analysis.
//   halo_probe [--steps N] [--compute-ms C] [--slow-rank R --slow-ms D] [--spin]
//              [--sendrecv | --overlap | --pingpong N]
// Default (halo exchange on a 1-D periodic ring): per step each rank computes C ms (rank R: C + D ms), posts
// MPI_Irecv from both neighbours and MPI_Isend to both (1024 doubles each), completes them with MPI_Waitall, and
// sums a residual with MPI_Allreduce (1 double). Rank R's neighbours wait about D ms per step in the Waitall for
// its sends (late sender); the other ranks wait at the allreduce. --sendrecv: the same exchange as two
// MPI_Sendrecv (send right and receive from the left, then the reverse).
// --overlap: per step MPI_Iallreduce (16 Ki floats), C ms of compute (rank R: C + D), MPI_Wait: with D = 0 the
// compute hides the reduction; with D > 0 the others wait about D ms in MPI_Wait for rank R.
// --pingpong N: osu_latency's pattern between ranks 0 and 1 (the others only join the barriers): for each of the
// kPingPongSizes message sizes, MPI_Barrier, then N round trips of blocking MPI_Send / MPI_Recv (rank 0 sends
// first), tag 100 + the size's index. So ranks 0 and 1 each make 4 N sends and 4 N receives, and every rank
// 1 + 4 barriers.
// "Compute" sleeps, so that 4 ranks on 2 cores keep their timing (the wall time of a step is what is measured);
// --spin: it runs on the CPU instead, by the calling thread's CPU time (real work, for as many ranks as cores).
#include <mpi.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <thread>
#include <vector>

namespace {

bool g_spin = false;
void compute(double ms) {
  if (!g_spin) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    return;
  }
  const auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
  };
  const double until = cpu_ms() + ms;
  volatile double x = 1;
  while (cpu_ms() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001;
}

constexpr int kPingPongSizes[] = {8, 512, 4096, 65536};  // bytes (65536: a rendezvous transfer in Open MPI's vader)

void pingpong(int rank, int round_trips) {
  std::vector<char> buffer(65536);
  for (int s = 0; s < static_cast<int>(std::size(kPingPongSizes)); ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const int bytes = kPingPongSizes[s], tag = 100 + s;
    for (int i = 0; i < round_trips; ++i) {
      if (rank == 0) {
        MPI_Send(buffer.data(), bytes, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), bytes, MPI_CHAR, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buffer.data(), bytes, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), bytes, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, slow_rank = -1, round_trips = 0;
  double compute_ms = 10, slow_ms = 0;
  bool overlap = false, sendrecv = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--compute-ms") && i + 1 < argc) compute_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--slow-rank") && i + 1 < argc) slow_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--slow-ms") && i + 1 < argc) slow_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--spin")) g_spin = true;
    else if (!std::strcmp(argv[i], "--overlap")) overlap = true;
    else if (!std::strcmp(argv[i], "--sendrecv")) sendrecv = true;
    else if (!std::strcmp(argv[i], "--pingpong") && i + 1 < argc) round_trips = std::atoi(argv[++i]);
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double my_compute = compute_ms + (rank == slow_rank ? slow_ms : 0);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  std::vector<double> send_left(1024, rank), send_right(1024, rank), from_left(1024), from_right(1024);
  std::vector<float> grad(16384, 1.0f), sum(16384);
  MPI_Barrier(MPI_COMM_WORLD);
  if (round_trips > 0) {
    pingpong(rank, round_trips);
    std::printf("halo_probe rank %d: %d round trips of each of 4 sizes done\n", rank, round_trips);
    MPI_Finalize();
    return 0;
  }
  for (int step = 0; step < steps; ++step) {
    if (overlap) {
      MPI_Request req;
      MPI_Iallreduce(grad.data(), sum.data(), 16384, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
      compute(my_compute);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      continue;
    }
    compute(my_compute);
    if (sendrecv) {
      MPI_Sendrecv(send_right.data(), 1024, MPI_DOUBLE, right, 1, from_left.data(), 1024, MPI_DOUBLE, left, 1,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Sendrecv(send_left.data(), 1024, MPI_DOUBLE, left, 0, from_right.data(), 1024, MPI_DOUBLE, right, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
    MPI_Request reqs[4];
    MPI_Irecv(from_left.data(), 1024, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &reqs[0]);   // tag 1: moving right
    MPI_Irecv(from_right.data(), 1024, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &reqs[1]);  // tag 0: moving left
    MPI_Isend(send_left.data(), 1024, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &reqs[2]);
    MPI_Isend(send_right.data(), 1024, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &reqs[3]);
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    }
    double residual = from_left[0] + from_right[0], total = 0;
    MPI_Allreduce(&residual, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  std::printf("halo_probe rank %d: %d steps done\n", rank, steps);
  MPI_Finalize();
  return 0;
}
