#pragma once
// The GPU check's programs stop at the first failing CUDA or NCCL call, naming it (run.sh shows the line).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e = (x);                                                                     \
    if (e != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
#define CHECK_NCCL(x)                                                                        \
  do {                                                                                       \
    ncclResult_t r = (x);                                                                    \
    if (r != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
