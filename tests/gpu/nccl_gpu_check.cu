// The GPU check's one-rank job (tests/gpu/run.sh, check (a) and (b)): one GPU, a one-rank NCCL communicator, its
// own kernel, copies (H2D, D2D into a fusion buffer, D2H), a memset and NVTX ranges. On one rank NCCL gives a
// collective no kernel: an out-of-place collective is a device-to-device copy, an in-place sum is nothing at all,
// ncclAvg is a `oneRankReduce` kernel; a send/receive to itself is a real ncclDevKernel_SendRecv kernel. The job
// prints what it did as `expect KEY VALUE` lines, which check_trace.py compares with the trace.
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "check_calls.cuh"


__global__ void scale_kernel(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

int main() {
  constexpr int kIterations = 3;
  constexpr int kTensors = 3;
  constexpr size_t kTensorFloats = 1 << 14;
  constexpr int kBig = 1 << 20;  // floats
  const size_t sizes[] = {1024, 1 << 16, 1 << 20};  // floats per out-of-place allreduce
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));

  float *big, *other, *fusion, *tensors, *peer_in, *peer_out;
  CHECK_CUDA(cudaMalloc(&big, sizeof(float) * kBig));
  CHECK_CUDA(cudaMalloc(&other, sizeof(float) * kBig));
  CHECK_CUDA(cudaMalloc(&fusion, sizeof(float) * kTensors * kTensorFloats));
  CHECK_CUDA(cudaMalloc(&tensors, sizeof(float) * kTensors * kTensorFloats));
  CHECK_CUDA(cudaMalloc(&peer_in, sizeof(float) * 4096));
  CHECK_CUDA(cudaMalloc(&peer_out, sizeof(float) * 4096));
  float* host = static_cast<float*>(std::malloc(sizeof(float) * kBig));
  float* host_out = static_cast<float*>(std::malloc(sizeof(float) * 1024));
  for (int i = 0; i < kBig; ++i) host[i] = 1.0f;

  int collectives = 0, with_gpu_work = 0, p2p = 0, nccl_copies = 0;
  nvtxRangePushA("gpu-check");
  for (int it = 0; it < kIterations; ++it) {
    nvtxRangePushA("iter");
    CHECK_CUDA(cudaMemcpyAsync(big, host, sizeof(float) * kBig, cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemsetAsync(other, 0, sizeof(float) * kBig, stream));
    scale_kernel<<<kBig / 256, 256, 0, stream>>>(big, kBig, 2.0f);
    CHECK_CUDA(cudaGetLastError());
    for (size_t n : sizes) {  // out of place: NCCL copies big -> other
      CHECK_NCCL(ncclAllReduce(big, other, n, ncclFloat32, ncclSum, comm, stream));
      ++collectives, ++with_gpu_work, ++nccl_copies;
    }
    CHECK_NCCL(ncclAllReduce(big, big, 4096, ncclFloat32, ncclSum, comm, stream));  // in place: no GPU work
    ++collectives;
    CHECK_NCCL(ncclAllReduce(other, other, 4096, ncclFloat32, ncclAvg, comm, stream));  // oneRankReduce kernel
    ++collectives, ++with_gpu_work;
    // Fusion buffer: pack the tensors with device-to-device copies, then one allreduce on the buffer (in place).
    for (int t = 0; t < kTensors; ++t)
      CHECK_CUDA(cudaMemcpyAsync(fusion + t * kTensorFloats, tensors + t * kTensorFloats, sizeof(float) * kTensorFloats,
                                 cudaMemcpyDeviceToDevice, stream));
    CHECK_NCCL(ncclAllReduce(fusion, fusion, kTensors * kTensorFloats, ncclFloat32, ncclSum, comm, stream));
    ++collectives;
    CHECK_NCCL(ncclBroadcast(big, other, 4096, ncclFloat32, 0, comm, stream));
    CHECK_NCCL(ncclAllGather(big, other, 4096, ncclFloat32, comm, stream));
    CHECK_NCCL(ncclReduceScatter(big, other, 4096, ncclFloat32, ncclSum, comm, stream));
    collectives += 3, with_gpu_work += 3, nccl_copies += 3;
    CHECK_NCCL(ncclGroupStart());  // two in-place sums: no GPU work
    CHECK_NCCL(ncclAllReduce(big, big, 2048, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclAllReduce(other, other, 2048, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    collectives += 2;
    CHECK_NCCL(ncclGroupStart());  // to itself: NCCL's SendRecv kernel, and the profiler's point-to-point events
    CHECK_NCCL(ncclSend(big, 4096, ncclFloat32, 0, comm, stream));
    CHECK_NCCL(ncclRecv(peer_out, 4096, ncclFloat32, 0, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    collectives += 2, with_gpu_work += 2, p2p += 2;
    CHECK_CUDA(cudaMemcpyAsync(host_out, peer_out, sizeof(float) * 1024, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    nvtxRangePop();
  }
  nvtxRangePop();
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("expect devices %d\n", devices);
  std::printf("expect collectives %d\n", collectives);
  std::printf("expect gpu_timed_collectives %d\n", with_gpu_work);
  std::printf("expect p2p %d\n", p2p);
  std::printf("expect iterations %d\n", kIterations);
  std::printf("expect scale_kernels %d\n", kIterations);
  std::printf("expect h2d %d\n", kIterations);
  std::printf("expect d2h %d\n", kIterations);
  std::printf("expect d2d %d\n", kIterations * kTensors + nccl_copies);
  std::printf("expect nccl_copies %d\n", nccl_copies);
  std::printf("expect fusion_tensors %d\n", kIterations * kTensors);
  std::printf("expect fusion_address %llu\n", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(fusion)));
  std::printf("result %.1f\n", host_out[0]);  // 1 * 2 (kernel), sent to itself
  return 0;
}
