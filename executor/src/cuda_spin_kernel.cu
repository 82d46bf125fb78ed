// A kernel that occupies its stream for a given time: stands in for compute tasks that have
// no real kernel (reported as such, never as a measurement).
#include <cstdint>

#include <cuda_runtime.h>

namespace parasim::executor::cuda_detail {

namespace {

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t until = global_timer_ns() + ns;
  while (global_timer_ns() < until) {
  }
}

}  // namespace

cudaError_t launch_spin_kernel(std::int64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<std::uint64_t>(ns > 0 ? ns : 0));
  return cudaGetLastError();
}

}  // namespace parasim::executor::cuda_detail
