// The GPU check's job: one GPU, a single-rank NCCL communicator, several collectives of several sizes, a
// kernel, copies (H2D, D2D into a fusion buffer, D2H), a memset and NVTX ranges. It prints what it did, as
// `expect KEY VALUE` lines, which run.sh compares with the trace.
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

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

__global__ void scale_kernel(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

int main() {
  constexpr int kIterations = 3;
  constexpr int kTensors = 3;
  constexpr size_t kTensorFloats = 1 << 14;
  const size_t sizes[] = {1024, 1 << 16, 1 << 20};  // floats per allreduce
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));

  float *big, *other, *fusion, *tensors;
  CHECK_CUDA(cudaMalloc(&big, sizeof(float) * (1 << 20)));
  CHECK_CUDA(cudaMalloc(&other, sizeof(float) * (1 << 20)));
  CHECK_CUDA(cudaMalloc(&fusion, sizeof(float) * kTensors * kTensorFloats));
  CHECK_CUDA(cudaMalloc(&tensors, sizeof(float) * kTensors * kTensorFloats));
  float* host = static_cast<float*>(std::malloc(sizeof(float) * (1 << 20)));
  float* host_out = static_cast<float*>(std::malloc(sizeof(float) * 1024));
  for (int i = 0; i < (1 << 20); ++i) host[i] = 1.0f;

  int collectives = 0;
  nvtxRangePushA("gpu-check");
  for (int it = 0; it < kIterations; ++it) {
    nvtxRangePushA("iter");
    CHECK_CUDA(cudaMemcpyAsync(big, host, sizeof(float) * (1 << 20), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemsetAsync(other, 0, sizeof(float) * (1 << 20), stream));
    scale_kernel<<<(1 << 20) / 256, 256, 0, stream>>>(big, 1 << 20, 2.0f);
    for (size_t n : sizes) {
      CHECK_NCCL(ncclAllReduce(big, big, n, ncclFloat32, ncclSum, comm, stream));
      ++collectives;
    }
    // Fusion buffer: pack the tensors with device-to-device copies, then one allreduce on the buffer.
    for (int t = 0; t < kTensors; ++t)
      CHECK_CUDA(cudaMemcpyAsync(fusion + t * kTensorFloats, tensors + t * kTensorFloats, sizeof(float) * kTensorFloats,
                                 cudaMemcpyDeviceToDevice, stream));
    CHECK_NCCL(ncclAllReduce(fusion, fusion, kTensors * kTensorFloats, ncclFloat32, ncclSum, comm, stream));
    ++collectives;
    CHECK_NCCL(ncclBroadcast(big, other, 4096, ncclFloat32, 0, comm, stream));
    CHECK_NCCL(ncclAllGather(big, other, 4096, ncclFloat32, comm, stream));
    CHECK_NCCL(ncclReduceScatter(big, other, 4096, ncclFloat32, ncclSum, comm, stream));
    collectives += 3;
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(big, big, 2048, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclAllReduce(other, other, 2048, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    collectives += 2;
    CHECK_CUDA(cudaMemcpyAsync(host_out, big, sizeof(float) * 1024, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    nvtxRangePop();
  }
  nvtxRangePop();
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("expect devices %d\n", devices);
  std::printf("expect collectives %d\n", collectives);
  std::printf("expect iterations %d\n", kIterations);
  std::printf("expect scale_kernels %d\n", kIterations);
  std::printf("expect fusion_tensors %d\n", kIterations * kTensors);
  std::printf("expect fusion_address %llu\n", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(fusion)));
  std::printf("result %.1f\n", host_out[0]);  // 1 * 2 (kernel) * 1 (single-rank allreduces)
  return 0;
}
