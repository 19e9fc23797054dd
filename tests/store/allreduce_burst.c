/* Back-to-back small allreduces, as OSU's osu_allreduce runs them by default: the rate a tracer must keep up with.
 *   allreduce_burst [--iterations N] [--bytes B] [--sweep]
 * --sweep: OSU's sequence instead: sizes 4 B to 1 MiB by powers of 2, each with 1000 (small) or 100 (large)
 * warm-up calls and 10000 or 1000 timed calls, a barrier between sizes.
 * Prints "rank R: N allreduces, T us, peak RSS K KiB"; exit 0. */
#include <mpi.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long run(long iterations, int bytes, char* send, char* recv) {
  for (long i = 0; i < iterations; ++i) MPI_Allreduce(send, recv, bytes, MPI_CHAR, MPI_BOR, MPI_COMM_WORLD);
  return iterations;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long iterations = 10000;
  int bytes = 8, sweep = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = atol(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sweep")) sweep = 1;
  }
  const int max_bytes = sweep ? (1 << 20) : bytes;
  char* send = calloc((size_t)max_bytes, 1);
  char* recv = calloc((size_t)max_bytes, 1);
  long calls = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (sweep) {
    for (int b = 4; b <= max_bytes; b *= 2) {
      const int large = b > 8192;
      calls += run(large ? 100 : 1000, b, send, recv);
      calls += run(large ? 1000 : 10000, b, send, recv);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  } else {
    calls += run(iterations, bytes, send, recv);
  }
  const double us = (MPI_Wtime() - t0) * 1e6;
  MPI_Barrier(MPI_COMM_WORLD);
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("rank %d: %ld allreduces, %.0f us, peak RSS %ld KiB\n", rank, calls, us, usage.ru_maxrss);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
