/* The part of the MPI 5.0 standard ABI (the mpi.h of libmpi_abi, MPI 5.0 chapter 20 and annex A) that collscope's
 * MPI wrappers use: handle and integer types, the status layout, and the constants the wrappers compare against.
 * Written from the standard's values for mpi/abi_standard.cpp; it declares no functions (the wrappers' prototypes
 * come from mpi/functions.txt) and is not a usable mpi.h for programs. */
#ifndef COLLSCOPE_MPI_STANDARD_ABI_SUBSET_H
#define COLLSCOPE_MPI_STANDARD_ABI_SUBSET_H

#include <stdint.h>

typedef intptr_t MPI_Aint;
typedef int64_t MPI_Offset;
typedef int64_t MPI_Count;
typedef int MPI_Fint;

/* Handles: pointers to incomplete types; predefined handles are small integer constants. */
typedef struct MPI_ABI_Comm* MPI_Comm;
typedef struct MPI_ABI_Datatype* MPI_Datatype;
typedef struct MPI_ABI_Errhandler* MPI_Errhandler;
typedef struct MPI_ABI_Group* MPI_Group;
typedef struct MPI_ABI_Info* MPI_Info;
typedef struct MPI_ABI_Message* MPI_Message;
typedef struct MPI_ABI_Op* MPI_Op;
typedef struct MPI_ABI_Request* MPI_Request;

typedef struct {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int internal[5];
} MPI_Status;

#define MPI_OP_NULL ((MPI_Op)0x20)
#define MPI_SUM ((MPI_Op)0x21)
#define MPI_MIN ((MPI_Op)0x22)
#define MPI_MAX ((MPI_Op)0x23)
#define MPI_PROD ((MPI_Op)0x24)
#define MPI_BAND ((MPI_Op)0x28)
#define MPI_BOR ((MPI_Op)0x29)
#define MPI_BXOR ((MPI_Op)0x2a)
#define MPI_LAND ((MPI_Op)0x30)
#define MPI_LOR ((MPI_Op)0x31)
#define MPI_LXOR ((MPI_Op)0x32)
#define MPI_MINLOC ((MPI_Op)0x38)
#define MPI_MAXLOC ((MPI_Op)0x39)
#define MPI_REPLACE ((MPI_Op)0x3c)
#define MPI_NO_OP ((MPI_Op)0x3d)

#define MPI_COMM_NULL ((MPI_Comm)0x100)
#define MPI_COMM_WORLD ((MPI_Comm)0x101)
#define MPI_COMM_SELF ((MPI_Comm)0x102)
#define MPI_MESSAGE_NULL ((MPI_Message)0x128)
#define MPI_INFO_NULL ((MPI_Info)0x130)
#define MPI_REQUEST_NULL ((MPI_Request)0x180)
#define MPI_DATATYPE_NULL ((MPI_Datatype)0x200)
#define MPI_BYTE ((MPI_Datatype)0x247)

#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 16
#define MPI_ERR_IN_STATUS 19

#define MPI_IN_PLACE ((void*)1)
#define MPI_STATUS_IGNORE ((MPI_Status*)0)
#define MPI_STATUSES_IGNORE ((MPI_Status*)0)

#define MPI_ANY_SOURCE (-1)
#define MPI_PROC_NULL (-2)
#define MPI_ANY_TAG (-31)
#define MPI_UNDEFINED (-32766)

#define MPI_GRAPH 201
#define MPI_DIST_GRAPH 202
#define MPI_CART 203
#define MPI_COMBINER_NAMED 301

#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_LIBRARY_VERSION_STRING 8192

#endif
