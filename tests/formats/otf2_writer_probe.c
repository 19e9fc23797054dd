/* An OTF2 trace written by a program that is not collscope, the way Score-P's MPI adapter writes one: each rank
 * writes its own location's events through OTF2's MPI collectives (OTF2_MPI_Collectives.h), rank 0 writes the
 * global definitions, the timer is gettimeofday (Score-P's "gettimeofday" timer: microsecond ticks, resolution
 * 10^6 per second, global offset = the earliest tick), collective sizes are counted as Score-P counts them
 * (scorep_mpi_coll_bytes: an allreduce of B bytes on N ranks sends and receives N x B), and the MPI_COMM_LOCATIONS
 * group / COMM_GROUP / Comm definitions are those Score-P writes for MPI_COMM_WORLD.
 *
 * The job (2 ranks, mpirun -np 2 otf2_writer_probe DIR [ITERATIONS] [EXTRA_MS]):
 *   main { MPI_Barrier; ITERATIONS x { compute (rank 0: 20 ms, rank 1: 20 + EXTRA_MS ms of spinning);
 *          MPI_Allreduce of 16 doubles;
 *          rank 0 MPI_Send 1024 B tag 10 and 65536 B tag 11 to rank 1, MPI_Recv 8 B tag 20 from it (rank 1 the
 *          other side); rank 1 MPI_Isend 4096 B tag 30 to rank 0, rank 0 MPI_Irecv of it; both MPI_Wait } }
 * Defaults: 20 iterations, 30 ms extra. Per rank: 1 barrier, 20 allreduces; 80 messages in all (60 blocking,
 * 20 non-blocking). It writes DIR/traces.otf2, traces.def, traces/ and prints its own account of the messages.
 */
#include <mpi.h>
#include <otf2/OTF2_MPI_Collectives.h>
#include <otf2/otf2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

enum {
  kRegionMain,
  kRegionCompute,
  kRegionBarrier,
  kRegionAllreduce,
  kRegionSend,
  kRegionRecv,
  kRegionIsend,
  kRegionIrecv,
  kRegionWait,
  kRegions
};
static const char* const kRegionNames[kRegions] = {"main",     "compute",   "MPI_Barrier", "MPI_Allreduce", "MPI_Send",
                                                   "MPI_Recv", "MPI_Isend", "MPI_Irecv",   "MPI_Wait"};

static OTF2_TimeStamp now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (OTF2_TimeStamp)tv.tv_sec * 1000000u + (OTF2_TimeStamp)tv.tv_usec;
}

static OTF2_FlushType pre_flush(void* u, OTF2_FileType t, OTF2_LocationRef l, void* c, bool f) {
  (void)u, (void)t, (void)l, (void)c, (void)f;
  return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void* u, OTF2_FileType t, OTF2_LocationRef l) {
  (void)u, (void)t, (void)l;
  return now_us();
}

static void check(OTF2_ErrorCode code, const char* what) {
  if (code != OTF2_SUCCESS) {
    fprintf(stderr, "otf2_writer_probe: %s: %s\n", what, OTF2_Error_GetDescription(code));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* Spins for `ms` milliseconds of wall time: compute, not sleep, as a slow rank's extra work would be. */
static void compute(double ms) {
  const OTF2_TimeStamp until = now_us() + (OTF2_TimeStamp)(ms * 1000);
  volatile double x = 1;
  while (now_us() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2 || size != 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 otf2_writer_probe DIR [ITERATIONS] [EXTRA_MS]\n");
    MPI_Finalize();
    return 2;
  }
  const int iterations = argc > 2 ? atoi(argv[2]) : 20;
  const double extra_ms = argc > 3 ? atof(argv[3]) : 30;
  const OTF2_CommRef world = 0;
  const OTF2_LocationRef location = (OTF2_LocationRef)rank; /* Score-P: thread 0 of rank r is location r */
  const int peer = 1 - rank;

  OTF2_Archive* archive = OTF2_Archive_Open(argv[1], "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                            OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive) {
    fprintf(stderr, "otf2_writer_probe: %s: cannot open the archive\n", argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  OTF2_FlushCallbacks flush = {pre_flush, post_flush};
  check(OTF2_Archive_SetFlushCallbacks(archive, &flush, NULL), "flush callbacks");
  check(OTF2_MPI_Archive_SetCollectiveCallbacks(archive, MPI_COMM_WORLD, MPI_COMM_NULL), "MPI collectives");
  check(OTF2_Archive_SetCreator(archive, "otf2_writer_probe (collscope tests: MPI events as Score-P writes them)"),
        "creator");
  check(OTF2_Archive_OpenEvtFiles(archive), "event files");
  OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, location);

  double in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = rank + i;
  static char small[1024], large[65536], reply[8], nonblocking[4096];
  uint64_t request = 1;
  long sends = 0, recvs = 0, isends = 0, irecvs = 0;

  const OTF2_TimeStamp first = now_us();
  check(OTF2_EvtWriter_Enter(w, NULL, first, kRegionMain), "enter");
  check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionBarrier), "enter");
  check(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, now_us()), "begin");
  MPI_Barrier(MPI_COMM_WORLD);
  check(OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, now_us(), OTF2_COLLECTIVE_OP_BARRIER, world, OTF2_UNDEFINED_UINT32, 0,
                                        0),
        "end");
  check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionBarrier), "leave");

  for (int it = 0; it < iterations; ++it) {
    check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionCompute), "enter");
    compute(20 + (rank == 1 ? extra_ms : 0));
    check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionCompute), "leave");

    /* Score-P's allreduce size: N x count x type size sent and received (scorep_mpi_coll_bytes_allreduce). */
    check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionAllreduce), "enter");
    check(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, now_us()), "begin");
    MPI_Allreduce(in, out, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const uint64_t all = (uint64_t)size * sizeof in;
    check(OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, now_us(), OTF2_COLLECTIVE_OP_ALLREDUCE, world, OTF2_UNDEFINED_UINT32,
                                          all, all),
          "end");
    check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionAllreduce), "leave");

    /* Blocking: MpiSend at the call's entry, MpiRecv at its exit with the status's source, tag and size. */
    struct {
      int from, tag;
      int bytes;
      char* buf;
    } blocking[3] = {{0, 10, 1024, small}, {0, 11, 65536, large}, {1, 20, 8, reply}};
    for (int m = 0; m < 3; ++m) {
      if (blocking[m].from == rank) {
        check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionSend), "enter");
        check(OTF2_EvtWriter_MpiSend(w, NULL, now_us(), (uint32_t)peer, world, (uint32_t)blocking[m].tag,
                                     (uint64_t)blocking[m].bytes),
              "send");
        MPI_Send(blocking[m].buf, blocking[m].bytes, MPI_BYTE, peer, blocking[m].tag, MPI_COMM_WORLD);
        check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionSend), "leave");
        ++sends;
      } else {
        MPI_Status st;
        int got = 0;
        check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionRecv), "enter");
        MPI_Recv(blocking[m].buf, blocking[m].bytes, MPI_BYTE, peer, blocking[m].tag, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        check(OTF2_EvtWriter_MpiRecv(w, NULL, now_us(), (uint32_t)st.MPI_SOURCE, world, (uint32_t)st.MPI_TAG,
                                     (uint64_t)got),
              "recv");
        check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionRecv), "leave");
        ++recvs;
      }
    }

    /* Non-blocking: MpiIsend / MpiIrecvRequest in the posting call, MpiIsendComplete / MpiIrecv in MPI_Wait. */
    MPI_Request req;
    const uint64_t id = request++;
    if (rank == 1) {
      check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionIsend), "enter");
      check(OTF2_EvtWriter_MpiIsend(w, NULL, now_us(), (uint32_t)peer, world, 30, sizeof nonblocking, id), "isend");
      MPI_Isend(nonblocking, sizeof nonblocking, MPI_BYTE, peer, 30, MPI_COMM_WORLD, &req);
      check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionIsend), "leave");
      ++isends;
    } else {
      check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionIrecv), "enter");
      MPI_Irecv(nonblocking, sizeof nonblocking, MPI_BYTE, peer, 30, MPI_COMM_WORLD, &req);
      check(OTF2_EvtWriter_MpiIrecvRequest(w, NULL, now_us(), id), "irecv request");
      check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionIrecv), "leave");
    }
    MPI_Status st;
    check(OTF2_EvtWriter_Enter(w, NULL, now_us(), kRegionWait), "enter");
    MPI_Wait(&req, &st);
    if (rank == 1) {
      check(OTF2_EvtWriter_MpiIsendComplete(w, NULL, now_us(), id), "isend complete");
    } else {
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      check(OTF2_EvtWriter_MpiIrecv(w, NULL, now_us(), (uint32_t)st.MPI_SOURCE, world, (uint32_t)st.MPI_TAG,
                                    (uint64_t)got, id),
            "irecv");
      ++irecvs;
    }
    check(OTF2_EvtWriter_Leave(w, NULL, now_us(), kRegionWait), "leave");
  }
  const OTF2_TimeStamp last = now_us();
  check(OTF2_EvtWriter_Leave(w, NULL, last, kRegionMain), "leave");

  uint64_t events = 0;
  check(OTF2_EvtWriter_GetNumberOfEvents(w, &events), "event count");
  check(OTF2_Archive_CloseEvtWriter(archive, w), "close events");
  check(OTF2_Archive_CloseEvtFiles(archive), "close event files");
  check(OTF2_Archive_OpenDefFiles(archive), "definition files");
  OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(archive, location);
  check(OTF2_Archive_CloseDefWriter(archive, d), "close local definitions");
  check(OTF2_Archive_CloseDefFiles(archive), "close definition files");

  uint64_t all_events[2] = {0, 0}, offset = 0, end = 0;
  MPI_Gather(&events, 1, MPI_UINT64_T, all_events, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Reduce(&first, &offset, 1, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&last, &end, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
    /* gettimeofday ticks: 10^6 per second; the offset's wall-clock time in ns since 1970. */
    check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000, offset, end - offset + 1, offset * 1000), "clock");
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    const char* strings[] = {"",           "machine Linux", "machine",        host,           "node", "MPI Rank 0",
                             "MPI Rank 1", "Master thread", "MPI_COMM_WORLD", "MPI locations"};
    enum {
      sEmpty,
      sMachine,
      sMachineClass,
      sHost,
      sNodeClass,
      sRank0,
      sRank1,
      sThread,
      sWorld,
      sLocations,
      sFirstRegion
    };
    for (unsigned i = 0; i < sizeof strings / sizeof *strings; ++i)
      check(OTF2_GlobalDefWriter_WriteString(g, i, strings[i]), "string");
    for (int r = 0; r < kRegions; ++r)
      check(OTF2_GlobalDefWriter_WriteString(g, sFirstRegion + r, kRegionNames[r]), "string");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, sMachine, sMachineClass, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "node");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1, sHost, sNodeClass, 0), "node");
    for (int r = 0; r < 2; ++r) {
      check(OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, r ? sRank1 : sRank0,
                                                    OTF2_LOCATION_GROUP_TYPE_PROCESS, 1, OTF2_UNDEFINED_LOCATION_GROUP),
            "location group");
      check(OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)r, sThread, OTF2_LOCATION_TYPE_CPU_THREAD,
                                               all_events[r], (OTF2_LocationGroupRef)r),
            "location");
    }
    const OTF2_RegionRole roles[kRegions] = {
        OTF2_REGION_ROLE_FUNCTION,     OTF2_REGION_ROLE_FUNCTION,    OTF2_REGION_ROLE_BARRIER,
        OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_REGION_ROLE_POINT2POINT, OTF2_REGION_ROLE_POINT2POINT,
        OTF2_REGION_ROLE_POINT2POINT,  OTF2_REGION_ROLE_POINT2POINT, OTF2_REGION_ROLE_FUNCTION};
    for (int r = 0; r < kRegions; ++r)
      check(OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)r, sFirstRegion + r, sFirstRegion + r, sEmpty, roles[r],
                                             r < kRegionBarrier ? OTF2_PARADIGM_COMPILER : OTF2_PARADIGM_MPI,
                                             OTF2_REGION_FLAG_NONE, OTF2_UNDEFINED_STRING, 0, 0),
            "region");
    /* MPI_COMM_WORLD as Score-P defines it: the locations of the ranks in rank order, a group of world ranks over
     * them, and the communicator. */
    const uint64_t locations[2] = {0, 1}, ranks[2] = {0, 1};
    check(OTF2_GlobalDefWriter_WriteGroup(g, 0, sLocations, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, 2, locations),
          "group");
    check(OTF2_GlobalDefWriter_WriteGroup(g, 1, sEmpty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, 2, ranks),
          "group");
    check(OTF2_GlobalDefWriter_WriteComm(g, world, sWorld, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE), "comm");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  check(OTF2_Archive_Close(archive), "close archive");
  printf(
      "rank %d: %ld MPI_Send, %ld MPI_Recv, %ld MPI_Isend, %ld MPI_Irecv, 1 MPI_Barrier, %d MPI_Allreduce, %.0f ms "
      "extra per iteration\n",
      rank, sends, recvs, isends, irecvs, iterations, rank == 1 ? extra_ms : 0.0);
  MPI_Finalize();
  return 0;
}
