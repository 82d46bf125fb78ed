// Embedding lookup (gather) and its gradient (scatter-add into the dense table gradient); the
// gather op's selection of positions along the sequence axis and its scatter-add backward.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

template <class T>
__global__ void gather_kernel(const std::int32_t* ids, const T* table, T* out, std::int64_t count, std::int64_t dim) {
  PARASIM_GRID_STRIDE_LOOP(i, count * dim) {
    const std::int64_t row = i / dim;
    out[i] = table[static_cast<std::int64_t>(ids[row]) * dim + (i - row * dim)];
  }
}

// Atomic adds: ids repeat (frequent tokens), and fp16/bf16 atomics exist from sm_70/sm_80 on,
// which CMAKE_CUDA_ARCHITECTURES (80, 90) guarantees.
template <class T>
__global__ void scatter_add_kernel(const std::int32_t* ids, const T* dout, T* dtable, std::int64_t count,
                                   std::int64_t dim) {
  PARASIM_GRID_STRIDE_LOOP(i, count * dim) {
    const std::int64_t row = i / dim;
    atomicAdd(&dtable[static_cast<std::int64_t>(ids[row]) * dim + (i - row * dim)], dout[i]);
  }
}

// Element i of the gathered [B, P, D] tensor: its offset in the [B, T, D] source.
__device__ inline std::int64_t sequence_source(std::int64_t i, const std::int64_t* idx, std::int64_t seq,
                                               std::int64_t positions, std::int64_t dim) {
  const std::int64_t row = i / dim;  // b * positions + p
  const std::int64_t b = row / positions;
  return (b * seq + idx[row - b * positions]) * dim + (i - row * dim);
}

template <class T>
__global__ void sequence_gather_kernel(const std::int64_t* idx, const T* x, T* y, std::int64_t batch,
                                       std::int64_t seq, std::int64_t positions, std::int64_t dim) {
  PARASIM_GRID_STRIDE_LOOP(i, batch * positions * dim) { y[i] = x[sequence_source(i, idx, seq, positions, dim)]; }
}

template <class T>
__global__ void sequence_scatter_add_kernel(const std::int64_t* idx, const T* dy, T* dx, std::int64_t batch,
                                            std::int64_t seq, std::int64_t positions, std::int64_t dim) {
  PARASIM_GRID_STRIDE_LOOP(i, batch * positions * dim) {
    atomicAdd(&dx[sequence_source(i, idx, seq, positions, dim)], dy[i]);
  }
}

}  // namespace

void sequence_gather(const std::int64_t* idx, const void* x, void* y, std::int64_t batch, std::int64_t seq,
                     std::int64_t positions, std::int64_t dim, Elem dtype, cudaStream_t stream) {
  const std::int64_t n = batch * positions * dim;
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    sequence_gather_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(idx, static_cast<const T*>(x), static_cast<T*>(y),
                                                                   batch, seq, positions, dim);
  });
  PARASIM_CHECK_LAUNCH();
}

void sequence_scatter_add(const std::int64_t* idx, const void* dy, void* dx, std::int64_t batch, std::int64_t seq,
                          std::int64_t positions, std::int64_t dim, Elem dtype, cudaStream_t stream) {
  const std::int64_t n = batch * positions * dim;
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    sequence_scatter_add_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        idx, static_cast<const T*>(dy), static_cast<T*>(dx), batch, seq, positions, dim);
  });
  PARASIM_CHECK_LAUNCH();
}

void embedding_gather(const std::int32_t* ids, const void* table, void* out, std::int64_t count, std::int64_t dim,
                      Elem dtype, cudaStream_t stream) {
  if (count * dim <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<grid_for(count * dim), kThreads, 0, stream>>>(ids, static_cast<const T*>(table),
                                                                     static_cast<T*>(out), count, dim);
  });
  PARASIM_CHECK_LAUNCH();
}

void embedding_scatter_add(const std::int32_t* ids, const void* dout, void* dtable, std::int64_t count,
                           std::int64_t dim, Elem dtype, cudaStream_t stream) {
  if (count * dim <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    scatter_add_kernel<T><<<grid_for(count * dim), kThreads, 0, stream>>>(ids, static_cast<const T*>(dout),
                                                                          static_cast<T*>(dtable), count, dim);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
