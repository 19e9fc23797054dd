/* OSU-style MPI micro-benchmarks at OSU 7's default iteration counts, for measuring what tracing costs the job
 * where it is most sensitive (tracer/bench/osu_overhead.sh runs it traced and untraced, alternated).
 *   osu_style [--max-bytes N]
 * Per benchmark and message size, one line: "<bench> <bytes> <average latency, us>", as OSU prints them.
 *   latency    ping-pong MPI_Send/MPI_Recv between ranks 0 and 1 (osu_latency), one-way latency
 *   bw         64 MPI_Isend/MPI_Irecv then MPI_Waitall per iteration (osu_bw's window), time per iteration
 *   allreduce  MPI_Allreduce of floats, MPI_SUM (osu_allreduce), average over ranks' mean
 *   bcast      MPI_Bcast from rank 0 (osu_bcast)
 *   allgather  MPI_Allgather (osu_allgather)
 * Iterations: 10 000 timed after 1 000 warm-up up to 8 KiB, 1 000 after 100 above (OSU's defaults). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWindow = 64, kLargeMessage = 8192 };

static int iterations(long bytes) { return bytes > kLargeMessage ? 1000 : 10000; }
static int warmup(long bytes) { return bytes > kLargeMessage ? 100 : 1000; }

static void report(const char* name, long bytes, double local_us, int rank, int size) {
  double sum = 0;
  MPI_Reduce(&local_us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%s %ld %.3f\n", name, bytes, sum / size);
}

int main(int argc, char** argv) {
  long max_bytes = 4096;
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "--max-bytes") == 0) max_bytes = atol(argv[i + 1]);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char* send = calloc((size_t)max_bytes * (size_t)(size > kWindow ? size : kWindow), 1);
  char* recv = calloc((size_t)max_bytes * (size_t)(size > kWindow ? size : kWindow), 1);
  MPI_Request requests[kWindow];
  for (long bytes = 4; bytes <= max_bytes; bytes *= 2) {
    const int n = iterations(bytes), skip = warmup(bytes);
    double t0 = 0;
    /* latency: ranks 0 and 1 ping-pong; the others wait at the barrier */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n + skip; ++i) {
      if (i == skip) t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(send, (int)bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(recv, (int)bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(recv, (int)bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(send, (int)bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) printf("latency %ld %.3f\n", bytes, (MPI_Wtime() - t0) * 1e6 / (2.0 * n));
    /* bw: a window of non-blocking sends from 0 to 1, acknowledged */
    MPI_Barrier(MPI_COMM_WORLD);
    const int bw_n = n / 10, bw_skip = skip / 10;
    for (int i = 0; i < bw_n + bw_skip; ++i) {
      if (i == bw_skip) t0 = MPI_Wtime();
      if (rank == 0) {
        for (int w = 0; w < kWindow; ++w) MPI_Isend(send + w * bytes, (int)bytes, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &requests[w]);
        MPI_Waitall(kWindow, requests, MPI_STATUSES_IGNORE);
        MPI_Recv(recv, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        for (int w = 0; w < kWindow; ++w) MPI_Irecv(recv + w * bytes, (int)bytes, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &requests[w]);
        MPI_Waitall(kWindow, requests, MPI_STATUSES_IGNORE);
        MPI_Send(send, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) printf("bw %ld %.3f\n", bytes, (MPI_Wtime() - t0) * 1e6 / bw_n);
    /* collectives */
    const long floats = bytes / 4;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n + skip; ++i) {
      if (i == skip) t0 = MPI_Wtime();
      MPI_Allreduce(send, recv, (int)floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    report("allreduce", bytes, (MPI_Wtime() - t0) * 1e6 / n, rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n + skip; ++i) {
      if (i == skip) t0 = MPI_Wtime();
      MPI_Bcast(send, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    report("bcast", bytes, (MPI_Wtime() - t0) * 1e6 / n, rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n + skip; ++i) {
      if (i == skip) t0 = MPI_Wtime();
      MPI_Allgather(send, (int)bytes, MPI_CHAR, recv, (int)bytes, MPI_CHAR, MPI_COMM_WORLD);
    }
    report("allgather", bytes, (MPI_Wtime() - t0) * 1e6 / n, rank, size);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
