// A CPU job that has the CUDA runtime loaded (linked with libcudart) and asks for devices: on a machine without a
// driver or GPU the answer is an error, printed. Under the tracer the output and exit code must be the same; the
// trace notes once (meta gpu_capture) that no GPU activity is captured. MPI starts the tracer's file.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int devices = -1;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  std::printf("cudaGetDeviceCount -> %d, devices %d\n", static_cast<int>(rc), rc == cudaSuccess ? devices : 0);
  int x = 1, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // Long enough for a writer drain (COLLSCOPE_FLUSH_MS in the test) to run while the job is alive.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MPI_Finalize();
  return rc == cudaSuccess ? 0 : 3;
}
