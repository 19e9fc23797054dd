/* Every kind of MPI communication call, each printed as it is made, so a test can compare the trace with the
 * program's own account exactly. Plain C, built against Open MPI (mpi_calls_probe_openmpi) and against MPICH
 * (mpi_calls_probe_mpich) from the same source; run with 2 ranks (the point-to-point part pairs ranks 0 and 1).
 *
 * Each line: "rank R: coll OP comm=C count=N bytes=B root=T" or
 *            "rank R: p2p OP comm=C count=N send=PEER/TAG/BYTES recv=PEER/TAG/BYTES"
 * where PEER is a world rank, "null" for MPI_PROC_NULL, "-" for no such side. Non-blocking calls are printed when
 * posted; persistent ones at each start. Then "rank R: overlap compute_ns=N" for the non-blocking allreduce
 * overlapped with computation, and "rank R: done". With COLLSCOPE_PROBE_OUT=PATH each rank writes its lines to
 * PATH.R instead of stdout (a launcher may split lines when it merges the ranks' output).
 *
 * mpi_calls_probe --burst N [--pause-ms P]: only N MPI_Allreduce of one int on MPI_COMM_WORLD back to back, a
 * pause of P ms (default 1000), 10 more; prints "rank R: burst N+10 calls". */
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h> /* MPIX_*_init: Open MPI 4's persistent collectives */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;
static FILE* out;

static void coll(const char* op, const char* comm, long count, long bytes, int root) {
  fprintf(out, "rank %d: coll %s comm=%s count=%ld bytes=%ld root=%d\n", rank, op, comm, count, bytes, root);
}

static void side(char* text, int peer, int tag, long bytes) {
  if (peer == -1000) strcpy(text, "-");
  else if (peer == MPI_PROC_NULL) sprintf(text, "null/%d/0", tag);
  else sprintf(text, "%d/%d/%ld", peer, tag, bytes);
}

/* A point-to-point call: its send side (dst, tag, bytes) and receive side (src, tag, bytes); -1000: none. */
static void p2p(const char* op, const char* comm, long count, int dst, int stag, long sbytes, int src, int rtag,
                long rbytes) {
  char s[64], r[64];
  side(s, dst, stag, sbytes);
  side(r, src, rtag, rbytes);
  fprintf(out, "rank %d: p2p %s comm=%s count=%ld send=%s recv=%s\n", rank, op, comm, count, s, r);
}
#define NONE (-1000)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void wait1(MPI_Request* r) { MPI_Wait(r, MPI_STATUS_IGNORE); }

/* In collectives() and neighbourhood(): the blocking call, or (nb) the non-blocking one completed by MPI_Wait
 * on the request q; and the op's name in that form. */
#define CALL(blocking, nonblocking) \
  do {                              \
    if (nb) {                       \
      nonblocking;                  \
      wait1(&q);                    \
    } else {                        \
      blocking;                     \
    }                               \
  } while (0)
#define OP(name) (nb ? "i" name : name)

/* Every collective, blocking (nb = 0) or non-blocking and completed by MPI_Wait (nb = 1), on MPI_COMM_WORLD. */
static void collectives(int nb) {
  const char* w = "world";
  int n = size, i;
  int ints[64], intr[64], counts[8], displs[8], rcounts[8], rdispls[8];
  double d[64], dr[64];
  float f[64], fr[64];
  short sh[64];
  MPI_Datatype types[8], rtypes[8];
  MPI_Request q;
  memset(ints, 0, sizeof ints);
  memset(d, 0, sizeof d);
  memset(f, 0, sizeof f);
  memset(sh, 0, sizeof sh);

  coll(OP("barrier"), w, 0, 0, -1);
  CALL(MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, &q));
  coll(OP("bcast"), w, 10, 40, 0);
  CALL(MPI_Bcast(ints, 10, MPI_INT, 0, MPI_COMM_WORLD), MPI_Ibcast(ints, 10, MPI_INT, 0, MPI_COMM_WORLD, &q));
  coll(OP("reduce"), w, 5, 40, 1);
  CALL(MPI_Reduce(d, dr, 5, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD),
       MPI_Ireduce(d, dr, 5, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD, &q));
  coll(OP("allreduce"), w, 16, 64, -1);
  CALL(MPI_Allreduce(f, fr, 16, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD),
       MPI_Iallreduce(f, fr, 16, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &q));
  coll(OP("gather"), w, 3, 3L * 4 * n, 0);
  CALL(MPI_Gather(ints, 3, MPI_INT, intr, 3, MPI_INT, 0, MPI_COMM_WORLD),
       MPI_Igather(ints, 3, MPI_INT, intr, 3, MPI_INT, 0, MPI_COMM_WORLD, &q));
  for (i = 0; i < n; ++i) counts[i] = 2 + i, displs[i] = i * 8;
  coll(OP("gatherv"), w, 2 + rank, (2L + rank) * 4, 0);
  CALL(MPI_Gatherv(ints, 2 + rank, MPI_INT, intr, counts, displs, MPI_INT, 0, MPI_COMM_WORLD),
       MPI_Igatherv(ints, 2 + rank, MPI_INT, intr, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &q));
  coll(OP("scatter"), w, 4, 4L * 4 * n, 0);
  CALL(MPI_Scatter(ints, 4, MPI_INT, intr, 4, MPI_INT, 0, MPI_COMM_WORLD),
       MPI_Iscatter(ints, 4, MPI_INT, intr, 4, MPI_INT, 0, MPI_COMM_WORLD, &q));
  coll(OP("scatterv"), w, 2 + rank, (2L + rank) * 4, 0);
  CALL(MPI_Scatterv(ints, counts, displs, MPI_INT, intr, 2 + rank, MPI_INT, 0, MPI_COMM_WORLD),
       MPI_Iscatterv(ints, counts, displs, MPI_INT, intr, 2 + rank, MPI_INT, 0, MPI_COMM_WORLD, &q));
  coll(OP("allgather"), w, 5, 5L * 2 * n, -1);
  CALL(MPI_Allgather(sh, 5, MPI_SHORT, sh + 10, 5, MPI_SHORT, MPI_COMM_WORLD),
       MPI_Iallgather(sh, 5, MPI_SHORT, sh + 10, 5, MPI_SHORT, MPI_COMM_WORLD, &q));
  long sum = 0;
  for (i = 0; i < n; ++i) sum += counts[i];
  coll(OP("allgatherv"), w, 2 + rank, sum * 8, -1);
  CALL(MPI_Allgatherv(d, 2 + rank, MPI_DOUBLE, dr, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD),
       MPI_Iallgatherv(d, 2 + rank, MPI_DOUBLE, dr, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &q));
  coll(OP("alltoall"), w, 2, 2L * 4 * n, -1);
  CALL(MPI_Alltoall(ints, 2, MPI_INT, intr, 2, MPI_INT, MPI_COMM_WORLD),
       MPI_Ialltoall(ints, 2, MPI_INT, intr, 2, MPI_INT, MPI_COMM_WORLD, &q));
  /* rank r sends i+1 ints to rank i and receives r+1 from each */
  for (i = 0; i < n; ++i) rcounts[i] = rank + 1, rdispls[i] = i * 8;
  coll(OP("alltoallv"), w, sum - n, (sum - n) * 4, -1); /* sum of i+1 */
  for (i = 0; i < n; ++i) counts[i] = i + 1;
  CALL(MPI_Alltoallv(ints, counts, displs, MPI_INT, intr, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD),
       MPI_Ialltoallv(ints, counts, displs, MPI_INT, intr, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD, &q));
  /* alltoallw: one element to each rank, an int to even ranks, a double to odd ones (byte displacements) */
  long wbytes = 0;
  for (i = 0; i < n; ++i) {
    counts[i] = 1;
    displs[i] = i * 8;
    types[i] = i % 2 ? MPI_DOUBLE : MPI_INT;
    wbytes += i % 2 ? 8 : 4;
    rcounts[i] = 1;
    rdispls[i] = i * 8;
    rtypes[i] = rank % 2 ? MPI_DOUBLE : MPI_INT;
  }
  coll(OP("alltoallw"), w, n, wbytes, -1);
  CALL(MPI_Alltoallw(d, counts, displs, types, dr, rcounts, rdispls, rtypes, MPI_COMM_WORLD),
       MPI_Ialltoallw(d, counts, displs, types, dr, rcounts, rdispls, rtypes, MPI_COMM_WORLD, &q));
  for (i = 0; i < n; ++i) counts[i] = i + 1;
  coll(OP("reduce_scatter"), w, sum - n, (sum - n) * 4, -1);
  CALL(MPI_Reduce_scatter(f, fr, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
       MPI_Ireduce_scatter(f, fr, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q));
  coll(OP("reduce_scatter_block"), w, 3, 3L * 4 * n, -1);
  CALL(MPI_Reduce_scatter_block(f, fr, 3, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
       MPI_Ireduce_scatter_block(f, fr, 3, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q));
  coll(OP("scan"), w, 7, 28, -1);
  CALL(MPI_Scan(ints, intr, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
       MPI_Iscan(ints, intr, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
  coll(OP("exscan"), w, 7, 28, -1);
  CALL(MPI_Exscan(ints, intr, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
       MPI_Iexscan(ints, intr, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
  /* In place: the bytes are the receive side's; the ignored send count and type are never asked about. */
  coll(OP("allreduce"), w, 8, 64, -1);
  CALL(MPI_Allreduce(MPI_IN_PLACE, d, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
       MPI_Iallreduce(MPI_IN_PLACE, d, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
#if MPI_VERSION >= 4
  { /* large-count forms: MPI_Count counts, MPI_Aint displacements */
    MPI_Count ccounts[8], crcounts[8];
    MPI_Aint cdispls[8], crdispls[8];
    for (i = 0; i < n; ++i) ccounts[i] = i + 1, cdispls[i] = i * 8, crcounts[i] = rank + 1, crdispls[i] = i * 8;
    coll(OP("allreduce"), w, 6, 24, -1);
    CALL(MPI_Allreduce_c(f, fr, (MPI_Count)6, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
         MPI_Iallreduce_c(f, fr, (MPI_Count)6, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q));
    coll(OP("alltoallv"), w, sum - n, (sum - n) * 4, -1);
    CALL(MPI_Alltoallv_c(ints, ccounts, cdispls, MPI_INT, intr, crcounts, crdispls, MPI_INT, MPI_COMM_WORLD),
         MPI_Ialltoallv_c(ints, ccounts, cdispls, MPI_INT, intr, crcounts, crdispls, MPI_INT, MPI_COMM_WORLD, &q));
  }
#endif
  coll(OP("alltoall"), w, 0, 2L * 4 * n, -1);
  CALL(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, intr, 2, MPI_INT, MPI_COMM_WORLD),
       MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, intr, 2, MPI_INT, MPI_COMM_WORLD, &q));
}

/* Neighbourhood collectives on a periodic ring (2 out-neighbours each, the same rank twice when size is 2). */
static void neighbourhood(MPI_Comm ring, int nb) {
  const char* c = "cart";
  /* With 2 ranks both neighbours are the same rank, so the two blocks are alike (which one arrives first is the
   * implementation's choice). */
  int ints[16] = {0}, intr[16], counts[2] = {2, 2}, displs[2] = {0, 4}, rcounts[2] = {2, 2}, rdispls[2] = {0, 4};
  int gcounts[2] = {2, 2};
  MPI_Aint wdispls[2] = {0, 16}, wrdispls[2] = {0, 16};
  MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE}, rtypes[2] = {MPI_DOUBLE, MPI_DOUBLE};
  double d[8] = {0}, dr[8];
  MPI_Request q;
  coll(OP("neighbor_allgather"), c, 3, 24, -1);
  CALL(MPI_Neighbor_allgather(ints, 3, MPI_INT, intr, 3, MPI_INT, ring),
       MPI_Ineighbor_allgather(ints, 3, MPI_INT, intr, 3, MPI_INT, ring, &q));
  coll(OP("neighbor_allgatherv"), c, 2, 16, -1);
  CALL(MPI_Neighbor_allgatherv(ints, 2, MPI_INT, intr, gcounts, rdispls, MPI_INT, ring),
       MPI_Ineighbor_allgatherv(ints, 2, MPI_INT, intr, gcounts, rdispls, MPI_INT, ring, &q));
  coll(OP("neighbor_alltoall"), c, 2, 16, -1);
  CALL(MPI_Neighbor_alltoall(ints, 2, MPI_INT, intr, 2, MPI_INT, ring),
       MPI_Ineighbor_alltoall(ints, 2, MPI_INT, intr, 2, MPI_INT, ring, &q));
  coll(OP("neighbor_alltoallv"), c, 4, 16, -1);
  CALL(MPI_Neighbor_alltoallv(ints, counts, displs, MPI_INT, intr, rcounts, rdispls, MPI_INT, ring),
       MPI_Ineighbor_alltoallv(ints, counts, displs, MPI_INT, intr, rcounts, rdispls, MPI_INT, ring, &q));
  coll(OP("neighbor_alltoallw"), c, 2, 16, -1);
  int wcounts[2] = {1, 1};
  CALL(MPI_Neighbor_alltoallw(d, wcounts, wdispls, types, dr, wcounts, wrdispls, rtypes, ring),
       MPI_Ineighbor_alltoallw(d, wcounts, wdispls, types, dr, wcounts, wrdispls, rtypes, ring, &q));
}

/* Persistent collectives: MPI 4.0, or Open MPI 4's MPIX_ spelling. */
static void persistent(void) {
#if MPI_VERSION >= 4
#define ALLREDUCE_INIT MPI_Allreduce_init
#define BARRIER_INIT MPI_Barrier_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define ALLREDUCE_INIT MPIX_Allreduce_init
#define BARRIER_INIT MPIX_Barrier_init
#endif
#ifdef ALLREDUCE_INIT
  int in[32] = {0}, out[32];
  MPI_Request a, b[2];
  ALLREDUCE_INIT(in, out, 32, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &a);
  BARRIER_INIT(MPI_COMM_WORLD, MPI_INFO_NULL, &b[0]);
  for (int k = 0; k < 3; ++k) {
    coll("allreduce_init", "world", 32, 128, -1);
    MPI_Start(&a);
    wait1(&a);
  }
  for (int k = 0; k < 2; ++k) {
    coll("barrier_init", "world", 0, 0, -1);
    MPI_Startall(1, b);
    MPI_Waitall(1, b, MPI_STATUSES_IGNORE);
  }
  MPI_Request_free(&a);
  MPI_Request_free(&b[0]);
#endif
}

/* Point-to-point between ranks 0 and 1 (others only take part in the ring exchanges and the barriers). */
static void point_to_point(void) {
  const char* w = "world";
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int ints[64] = {0}, intr[64];
  double d[32] = {0};
  char chars[16] = {0};
  float f[8] = {0}, fr[8];
  MPI_Request q[4];
  MPI_Status st;
  int flag = 0, index = -1, outcount = 0, indices[4];

  if (rank == 0) {
    p2p("send", w, 10, 1, 5, 40, NONE, 0, 0);
    MPI_Send(ints, 10, MPI_INT, 1, 5, MPI_COMM_WORLD);
  } else if (rank == 1) {
    p2p("recv", w, 10, NONE, 0, 0, 0, 5, 40);
    MPI_Recv(intr, 10, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
  }
  /* A wildcard receive whose status the program ignores: source, tag and size still come from the status. */
  if (rank == 1) {
    p2p("ssend", w, 20, 0, 6, 160, NONE, 0, 0);
    MPI_Ssend(d, 20, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
  } else if (rank == 0) {
    p2p("recv", w, 32, NONE, 0, 0, 1, 6, 160);
    MPI_Recv(d, 32, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  static char bsend_buffer[1024];
  MPI_Buffer_attach(bsend_buffer, sizeof bsend_buffer);
  if (rank == 0) {
    p2p("bsend", w, 4, 1, 7, 16, NONE, 0, 0);
    MPI_Bsend(ints, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
  } else if (rank == 1) {
    p2p("recv", w, 4, NONE, 0, 0, 0, 7, 16);
    MPI_Recv(intr, 4, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  void* detached;
  int detached_size;
  MPI_Buffer_detach(&detached, &detached_size);
  /* Rsend needs the receive posted first: the barrier orders them. */
  if (rank == 1) {
    p2p("irecv", w, 6, NONE, 0, 0, 0, 8, 24);
    MPI_Irecv(intr, 6, MPI_INT, 0, 8, MPI_COMM_WORLD, &q[0]);
  }
  coll("barrier", w, 0, 0, -1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    p2p("rsend", w, 6, 1, 8, 24, NONE, 0, 0);
    MPI_Rsend(ints, 6, MPI_INT, 1, 8, MPI_COMM_WORLD);
  } else if (rank == 1) {
    wait1(&q[0]);
  }
  /* The ring: non-blocking both ways, completed together. */
  p2p("irecv", w, 3, NONE, 0, 0, left, 9, 12);
  MPI_Irecv(fr, 3, MPI_FLOAT, left, 9, MPI_COMM_WORLD, &q[0]);
  p2p("isend", w, 3, right, 9, 12, NONE, 0, 0);
  MPI_Isend(f, 3, MPI_FLOAT, right, 9, MPI_COMM_WORLD, &q[1]);
  MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
  p2p("sendrecv", w, 6, right, 10, 24, left, 10, 24);
  MPI_Sendrecv(ints, 6, MPI_INT, right, 10, intr, 6, MPI_INT, left, 10, MPI_COMM_WORLD, &st);
  p2p("sendrecv_replace", w, 5, left, 11, 20, right, 11, 20);
  MPI_Sendrecv_replace(ints, 5, MPI_INT, left, 11, right, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  /* Probes: a blocking probe, a polled one (only the probe that finds the message is a call in the trace), a
   * matched probe and its receive. */
  if (rank == 0) {
    p2p("send", w, 7, 1, 12, 7, NONE, 0, 0);
    MPI_Send(chars, 7, MPI_CHAR, 1, 12, MPI_COMM_WORLD);
    p2p("send", w, 9, 1, 13, 36, NONE, 0, 0);
    MPI_Send(ints, 9, MPI_INT, 1, 13, MPI_COMM_WORLD);
    p2p("send", w, 3, 1, 14, 12, NONE, 0, 0);
    MPI_Send(ints, 3, MPI_INT, 1, 14, MPI_COMM_WORLD);
  } else if (rank == 1) {
    p2p("probe", w, 0, NONE, 0, 0, 0, 12, 7);
    MPI_Probe(MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &st);
    p2p("recv", w, 7, NONE, 0, 0, 0, 12, 7);
    MPI_Recv(chars, 7, MPI_CHAR, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    p2p("iprobe", w, 0, NONE, 0, 0, 0, 13, 36);
    for (flag = 0; !flag;) MPI_Iprobe(0, 13, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    p2p("recv", w, 9, NONE, 0, 0, 0, 13, 36);
    MPI_Recv(intr, 9, MPI_INT, 0, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Message message;
    p2p("mprobe", w, 0, NONE, 0, 0, 0, 14, 12);
    MPI_Mprobe(0, 14, MPI_COMM_WORLD, &message, &st);
    p2p("mrecv", w, 3, NONE, 0, 0, 0, 14, 12);
    MPI_Mrecv(intr, 3, MPI_INT, &message, MPI_STATUS_IGNORE);
  }
  /* Persistent point-to-point, started twice; completed by Waitany, Testsome. */
  if (rank < 2) {
    MPI_Request p;
    const int other = 1 - rank;
    if (rank == 0) MPI_Send_init(ints, 2, MPI_INT, other, 15, MPI_COMM_WORLD, &p);
    else MPI_Recv_init(intr, 2, MPI_INT, other, 15, MPI_COMM_WORLD, &p);
    for (int k = 0; k < 2; ++k) {
      if (rank == 0) p2p("send_init", w, 2, other, 15, 8, NONE, 0, 0);
      else p2p("recv_init", w, 2, NONE, 0, 0, other, 15, 8);
      MPI_Start(&p);
      if (k == 0) {
        MPI_Waitany(1, &p, &index, MPI_STATUS_IGNORE);
      } else {
        for (outcount = 0; outcount == 0;) MPI_Testsome(1, &p, &outcount, indices, MPI_STATUSES_IGNORE);
      }
    }
    MPI_Request_free(&p);
    /* Testany and Waitsome on plain requests. */
    if (rank == 0) {
      p2p("isend", w, 1, 1, 17, 8, NONE, 0, 0);
      MPI_Isend(d, 1, MPI_DOUBLE, 1, 17, MPI_COMM_WORLD, &q[0]);
      for (flag = 0; !flag;) MPI_Testany(1, q, &index, &flag, MPI_STATUS_IGNORE);
    } else {
      p2p("irecv", w, 1, NONE, 0, 0, 0, 17, 8);
      MPI_Irecv(d, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 17, MPI_COMM_WORLD, &q[0]);
      MPI_Waitsome(1, q, &outcount, indices, MPI_STATUSES_IGNORE);
    }
  }
#if MPI_VERSION >= 4
  p2p("isendrecv", w, 2, right, 18, 8, left, 18, 8);
  MPI_Isendrecv(ints, 2, MPI_INT, right, 18, intr, 2, MPI_INT, left, 18, MPI_COMM_WORLD, &q[0]);
  wait1(&q[0]);
#endif
#if MPI_VERSION >= 4
  /* MPI 4.0 large-count forms (MPI_Count counts). */
  if (rank == 0) {
    p2p("send", w, 3, 1, 19, 12, NONE, 0, 0);
    MPI_Send_c(ints, (MPI_Count)3, MPI_INT, 1, 19, MPI_COMM_WORLD);
  } else if (rank == 1) {
    p2p("recv", w, 3, NONE, 0, 0, 0, 19, 12);
    MPI_Recv_c(intr, (MPI_Count)3, MPI_INT, 0, 19, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
#endif
  /* To nobody: MPI_PROC_NULL moves nothing. */
  p2p("send", w, 5, MPI_PROC_NULL, 16, 0, NONE, 0, 0);
  MPI_Send(ints, 5, MPI_INT, MPI_PROC_NULL, 16, MPI_COMM_WORLD);
}

/* A non-blocking allreduce overlapped with known computation: the communication time recorded for it must
 * exclude the computation (the row spans it, its time inside calls does not). */
static void overlap(void) {
  static float big[1 << 16], bigr[1 << 16];
  MPI_Request q;
  coll("barrier", "world", 0, 0, -1);
  MPI_Barrier(MPI_COMM_WORLD);
  coll("iallreduce", "world", 1 << 16, 4L << 16, -1);
  MPI_Iallreduce(big, bigr, 1 << 16, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
  const double t0 = now_ns();
  volatile double x = 0;
  while (now_ns() - t0 < 150e6) x += 1.0; /* 150 ms of computation, inside no MPI call */
  const double compute = now_ns() - t0;
  wait1(&q);
  fprintf(out, "rank %d: overlap compute_ns=%.0f\n", rank, compute);
}

/* Back-to-back calls, more than the tracer's ring holds before its writer drains it. */
static int burst(long calls, int pause_ms) {
  int in = 1, sum = 0;
  for (long i = 0; i < calls; ++i) MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  for (int i = 0; i < 10; ++i) MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d: burst %ld calls\n", rank, calls + 10);
  MPI_Finalize();
  return 0;
}

int main(int argc, char** argv) {
  long burst_calls = 0;
  int pause_ms = 1000;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--burst") && i + 1 < argc) burst_calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) pause_ms = atoi(argv[++i]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (burst_calls > 0) return burst(burst_calls, pause_ms);
  out = stdout;
  const char* path = getenv("COLLSCOPE_PROBE_OUT");
  if (path && *path) {
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", path, rank);
    out = fopen(name, "w");
    if (!out) return 2;
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (rank == 0) printf("library %.*s\n", (int)strcspn(version, "\n"), version);
  collectives(0);
  collectives(1);
  MPI_Comm split, ring;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
  coll("allreduce", "split", 4, 16, -1);
  int a[4] = {0}, b[4];
  MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, split);
  int dims[1] = {size}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  neighbourhood(ring, 0);
  neighbourhood(ring, 1);
  persistent();
  point_to_point();
  overlap();
  MPI_Comm_free(&ring);
  MPI_Comm_free(&split);
  fprintf(out, "rank %d: done\n", rank);
  MPI_Finalize();
  return 0;
}
