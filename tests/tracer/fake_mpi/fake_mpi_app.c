/* A program of the unknown MPI (fake_mpi.h): prints what its calls returned. With --call-missing it also calls
 * MPI_Barrier, which only the preload defines (looked up at run time, as a plugin would): the preload must
 * answer with an error, not jump to a null address. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fake_mpi.h"

int main(int argc, char** argv) {
  int rank = -1, in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  int rc = MPI_Init(&argc, &argv);
  printf("init %d\n", rc);
  rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf("rank %d rc %d\n", rank, rc);
  rc = MPI_Allreduce(in, out, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("allreduce %d -> %d %d %d\n", rc, out[0], out[1], out[2]);
  if (argc > 1 && !strcmp(argv[1], "--call-missing")) {
    int (*barrier)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPI_Barrier");
    printf("barrier %s %d\n", barrier ? "found" : "absent", barrier ? barrier(MPI_COMM_WORLD) : -1);
  }
  printf("finalize %d\n", MPI_Finalize());
  return 0;
}
