// CUDA build of the batched selectors: the same Thrust code as select_cpu.cpp on the CUDA device system.
// Kept to one translation unit because every Thrust sort/scan instantiation costs nvcc tens of seconds.
#include <cuda_runtime.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system/cuda/memory.h>

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>

#define KVAUDIT_GPU_NS cuda
#define KVAUDIT_GPU_SYNC() kvaudit::gpu::cuda::detail_sync()
#define KVAUDIT_GPU_EXEC() thrust::cuda::par_nosync(kvaudit::gpu::cuda::temporary_cache())

namespace kvaudit::gpu::cuda {
inline void detail_sync() {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(e));
}

// Thrust's temporary storage (sort, scan, reduce_by_key, copy_if), kept for reuse: cudaMalloc and cudaFree
// cost tens of microseconds each and synchronize the device. A freed block is reused by the next request it
// can hold; every request is issued on the one stream, so a reused block is never read by an earlier kernel.
// One cache per host thread (Thrust calls it from the calling thread); blocks live until the thread ends.
class TemporaryCache {
 public:
  using value_type = char;
  TemporaryCache() = default;
  TemporaryCache(const TemporaryCache&) = delete;
  TemporaryCache& operator=(const TemporaryCache&) = delete;
  ~TemporaryCache() {  // at thread exit: errors (a runtime already unloading) are not worth a throw here
    for (auto& [size, p] : free_) (void)cudaFree(p);
    for (auto& [p, size] : used_) (void)cudaFree(p);
  }
  char* allocate(std::ptrdiff_t bytes) {
    char* p = nullptr;
    if (auto it = free_.lower_bound(bytes); it != free_.end()) {
      bytes = it->first;
      p = it->second;
      free_.erase(it);
    } else {
      p = thrust::cuda::malloc<char>(static_cast<std::size_t>(bytes)).get();
    }
    used_.emplace(p, bytes);
    return p;
  }
  void deallocate(char* p, std::size_t) {
    const auto it = used_.find(p);
    if (it == used_.end()) throw std::logic_error("TemporaryCache: a pointer it did not allocate");
    free_.emplace(it->second, p);
    used_.erase(it);
  }

 private:
  std::multimap<std::ptrdiff_t, char*> free_;  // size -> block
  std::map<char*, std::ptrdiff_t> used_;       // block -> size
};

inline TemporaryCache& temporary_cache() {
  thread_local TemporaryCache cache;
  return cache;
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
