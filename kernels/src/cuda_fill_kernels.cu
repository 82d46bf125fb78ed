// Buffer initialisation kernels: uniform values, random indices, zeros.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

template <class T>
__global__ void fill_uniform_kernel(T* x, std::int64_t n, float scale, std::uint64_t seed) {
  PARASIM_GRID_STRIDE_LOOP(i, n) x[i] = from_f32<T>((2.0f * uniform01(seed, i) - 1.0f) * scale);
}

__global__ void fill_indices_kernel(std::int32_t* ids, std::int64_t n, std::int32_t modulo, std::uint64_t seed) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    ids[i] = static_cast<std::int32_t>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) %
                                       static_cast<std::uint64_t>(modulo));
  }
}

template <class T>
__global__ void fill_zero_kernel(T* x, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) x[i] = from_f32<T>(0.0f);
}

}  // namespace

void fill_uniform(void* x, std::int64_t n, Elem dtype, float scale, std::uint64_t seed, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    fill_uniform_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), n, scale, seed);
  });
  PARASIM_CHECK_LAUNCH();
}

void fill_indices(std::int32_t* ids, std::int64_t n, std::int32_t modulo, std::uint64_t seed, cudaStream_t stream) {
  if (n <= 0) return;
  fill_indices_kernel<<<grid_for(n), kThreads, 0, stream>>>(ids, n, modulo < 1 ? 1 : modulo, seed);
  PARASIM_CHECK_LAUNCH();
}

void fill_zero(void* x, std::int64_t n, Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    fill_zero_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), n);
  });
  PARASIM_CHECK_LAUNCH();
}

void fill_zero_f32(float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  fill_zero_kernel<float><<<grid_for(n), kThreads, 0, stream>>>(x, n);
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
