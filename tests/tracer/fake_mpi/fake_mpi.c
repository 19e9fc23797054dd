/* TEST DOUBLE of an unknown MPI library (fake_mpi.h): MPI_Allreduce doubles every int, so a pass-through that
 * reaches it is visible in the program's output. It has no MPI_Barrier at all. */
#include "fake_mpi.h"

#include <string.h>

#define BOTH(ret, name, args) \
  ret P##name args;           \
  ret name args __attribute__((alias("P" #name)));

BOTH(int, MPI_Init, (int* argc, char*** argv))
int PMPI_Init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  return MPI_SUCCESS;
}
BOTH(int, MPI_Finalize, (void))
int PMPI_Finalize(void) { return MPI_SUCCESS; }
BOTH(int, MPI_Comm_rank, (MPI_Comm comm, int* rank))
int PMPI_Comm_rank(MPI_Comm comm, int* rank) {
  *rank = 0;
  return comm == MPI_COMM_WORLD ? MPI_SUCCESS : 5;
}
BOTH(int, MPI_Allreduce, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm))
int PMPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (type != MPI_INT || op != MPI_SUM || comm != MPI_COMM_WORLD) return 3;
  for (int i = 0; i < count; ++i) ((int*)recvbuf)[i] = 2 * ((const int*)sendbuf)[i];
  return MPI_SUCCESS;
}
BOTH(int, MPI_Get_library_version, (char* version, int* len))
int PMPI_Get_library_version(char* version, int* len) {
  strcpy(version, "FakeMPI 0.1 (collscope test double)");
  *len = (int)strlen(version);
  return MPI_SUCCESS;
}
