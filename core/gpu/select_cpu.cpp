// CPU build of the batched selectors: the same Thrust code as select_cuda.cu on Thrust's OpenMP device
// system (THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP is set on this file by core/gpu/CMakeLists.txt).
#define KVAUDIT_GPU_NS cpu
#define KVAUDIT_GPU_SYNC() ((void)0)
#define KVAUDIT_GPU_EXEC() thrust::device
#include "core/gpu/select_impl.inl"
#include "core/gpu/page_impl.inl"

namespace kvaudit::gpu::cpu {
int device_count() { return 1; }
const char* backend_name() { return "thrust-omp"; }
}  // namespace kvaudit::gpu::cpu
