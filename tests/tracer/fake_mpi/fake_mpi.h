/* TEST DOUBLE: an MPI library of an ABI collscope does not know (handles are 64-bit integers counted from 1000,
 * its version string names no known implementation). One process, no communication: enough to show that the
 * preload passes every call through untouched, says so once, and never calls a function the library lacks. */
#ifndef FAKE_MPI_H
#define FAKE_MPI_H
typedef long long MPI_Comm;
typedef long long MPI_Datatype;
typedef long long MPI_Op;
#define MPI_COMM_WORLD ((MPI_Comm)1001)
#define MPI_INT ((MPI_Datatype)1002)
#define MPI_SUM ((MPI_Op)1003)
#define MPI_SUCCESS 0
#define MPI_MAX_LIBRARY_VERSION_STRING 64
int MPI_Init(int* argc, char*** argv);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm comm, int* rank);
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int MPI_Get_library_version(char* version, int* len);
#endif
