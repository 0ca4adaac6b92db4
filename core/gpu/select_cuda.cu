// CUDA build of the batched selectors: the same Thrust code as select_cpu.cpp on the CUDA device system.
// Kept to one translation unit because every Thrust sort/scan instantiation costs nvcc tens of seconds.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define KVAUDIT_GPU_NS cuda
#define KVAUDIT_GPU_SYNC() kvaudit::gpu::cuda::detail_sync()

namespace kvaudit::gpu::cuda {
inline void detail_sync() {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(e));
}
}  // namespace kvaudit::gpu::cuda

#include "core/gpu/select_impl.inl"
#include "core/gpu/page_impl.inl"

namespace kvaudit::gpu::cuda {
// cudaGetDeviceCount fails (no driver, no device) on CI machines: that is "no device", not an error.
int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}
const char* backend_name() { return "thrust-cuda"; }
}  // namespace kvaudit::gpu::cuda
