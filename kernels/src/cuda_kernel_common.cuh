// Device-side helpers shared by the .cu files: fp32 <-> storage type conversion, grid sizing,
// the dtype dispatch, a counter-based random number and the launch check.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda_kernels.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels::cuda {

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/// splitmix64: a counter-based generator, so every element's value depends only on (seed, index).
__device__ __forceinline__ std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// Uniform in [0, 1).
__device__ __forceinline__ float uniform01(std::uint64_t seed, std::int64_t i) {
  return static_cast<float>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 40) * (1.0f / 16777216.0f);
}

inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n elements: enough to fill the GPU, never more than n needs.
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  constexpr std::int64_t kMaxBlocks = 65535LL * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

#define PARASIM_GRID_STRIDE_LOOP(i, n)                                                             \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

/// Calls f(T{}) with T the storage type of `dtype`.
template <class F>
void dispatch_dtype(Elem dtype, F&& f) {
  switch (dtype) {
    case Elem::F32: f(float{}); break;
    case Elem::F16: f(__half{}); break;
    case Elem::BF16: f(__nv_bfloat16{}); break;
  }
}

/// Checks the most recent launch (bad configuration, missing kernel image for this GPU).
#define PARASIM_CHECK_LAUNCH() PARASIM_CUDA_CHECK(cudaGetLastError())

}  // namespace parasim::kernels::cuda
