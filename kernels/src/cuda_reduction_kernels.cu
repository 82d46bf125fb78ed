// Kernels that reduce: bias gradients (column sums), cross-entropy, layer norm.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

constexpr int kColTile = 32;   // columns per block of a column reduction (one warp wide: coalesced)
constexpr int kRowLanes = 8;   // rows read concurrently per block
constexpr int kRowsPerThread = 16;

/// Rows are processed one block per row; grid-stride over rows when there are more rows than blocks.
inline unsigned row_blocks(std::int64_t rows) {
  constexpr std::int64_t kMax = 65535LL * 4;
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > kMax ? kMax : rows));
}

/// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024). All threads get the result.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) total = s;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();  // `partial`/`total` are reused by the next call
  return result;
}

__device__ float block_max(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : -INFINITY;
    for (int offset = 16; offset > 0; offset /= 2) s = fmaxf(s, __shfl_down_sync(0xffffffffu, s, offset));
    if (threadIdx.x == 0) total = s;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();
  return result;
}

// ---- column sums: a block covers 32 columns; its 8 row lanes walk rows interleaved, and the
// blocks along y split the rows (grid-stride), partial sums are added atomically.
__device__ __forceinline__ std::int64_t first_row() {
  return static_cast<std::int64_t>(blockIdx.y) * kRowLanes + threadIdx.y;
}
__device__ __forceinline__ std::int64_t next_row(std::int64_t r) {
  return r + static_cast<std::int64_t>(gridDim.y) * kRowLanes;
}

template <class T>
__global__ void column_sum_kernel(const T* x, float* acc, std::int64_t rows, std::int64_t cols) {
  __shared__ float tile[kRowLanes][kColTile + 1];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  float s = 0.0f;
  if (col < cols)
    for (std::int64_t r = first_row(); r < rows; r = next_row(r)) s += to_f32(x[r * cols + col]);
  tile[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int k = 1; k < kRowLanes; ++k) s += tile[k][threadIdx.x];
    atomicAdd(&acc[col], s);
  }
}

template <class T>
__global__ void convert_kernel(const float* from, T* to, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) to[i] = from_f32<T>(from[i]);
}

// ---- cross-entropy, one block per row
template <class T>
__device__ void row_max_and_sum(const T* row, std::int64_t cols, float& mx, float& sum) {
  float m = -INFINITY;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, to_f32(row[c]));
  mx = block_max(m);
  float s = 0.0f;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(to_f32(row[c]) - mx);
  sum = block_sum(s);
}

template <class T>
__global__ void cross_entropy_forward_kernel(const T* logits, const std::int32_t* labels, float* loss,
                                             std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * cols;
    float mx, sum;
    row_max_and_sum(row, cols, mx, sum);
    if (threadIdx.x == 0) loss[r] = logf(sum) + mx - to_f32(row[labels[r]]);
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* logits, const std::int32_t* labels, T* dlogits,
                                              std::int64_t rows, std::int64_t cols) {
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * cols;
    float mx, sum;
    row_max_and_sum(row, cols, mx, sum);
    const float inv_sum = 1.0f / sum;
    const std::int64_t label = labels[r];
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float p = __expf(to_f32(row[c]) - mx) * inv_sum;
      dlogits[r * cols + c] = from_f32<T>((p - (c == label ? 1.0f : 0.0f)) * inv_rows);
    }
  }
}

// ---- layer norm, one block per row
constexpr float kLayerNormEps = 1e-5f;

template <class T>
__global__ void layernorm_forward_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean_out,
                                         float* rstd_out, std::int64_t rows, std::int64_t cols) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    float s = 0.0f, s2 = 0.0f;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float v = to_f32(xr[c]);
      s += v;
      s2 += v * v;
    }
    const float mean = block_sum(s) * inv_cols;
    const float var = fmaxf(block_sum(s2) * inv_cols - mean * mean, 0.0f);
    const float rstd = rsqrtf(var + kLayerNormEps);
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float xhat = (to_f32(xr[c]) - mean) * rstd;
      y[r * cols + c] = from_f32<T>(xhat * to_f32(gamma[c]) + to_f32(beta[c]));
    }
    if (threadIdx.x == 0) {
      mean_out[r] = mean;
      rstd_out[r] = rstd;
    }
  }
}

template <class T>
__global__ void layernorm_backward_data_kernel(const T* x, const T* gamma, const T* dy, const float* mean,
                                               const float* rstd, T* dx, std::int64_t rows, std::int64_t cols) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const float mu = mean[r];
    const float rs = rstd[r];
    float a = 0.0f, b = 0.0f;  // sum(dy*gamma), sum(dy*gamma*xhat)
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = to_f32(dyr[c]) * to_f32(gamma[c]);
      a += g;
      b += g * (to_f32(xr[c]) - mu) * rs;
    }
    const float mean_g = block_sum(a) * inv_cols;
    const float mean_gx = block_sum(b) * inv_cols;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = to_f32(dyr[c]) * to_f32(gamma[c]);
      const float xhat = (to_f32(xr[c]) - mu) * rs;
      dx[r * cols + c] = from_f32<T>(rs * (g - mean_g - xhat * mean_gx));
    }
  }
}

template <class T>
__global__ void layernorm_backward_weight_kernel(const T* x, const T* dy, const float* mean, const float* rstd,
                                                 float* acc_gamma, float* acc_beta, std::int64_t rows,
                                                 std::int64_t cols) {
  __shared__ float tile_g[kRowLanes][kColTile + 1];
  __shared__ float tile_b[kRowLanes][kColTile + 1];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (col < cols) {
    for (std::int64_t r = first_row(); r < rows; r = next_row(r)) {
      const float g = to_f32(dy[r * cols + col]);
      sg += g * (to_f32(x[r * cols + col]) - mean[r]) * rstd[r];
      sb += g;
    }
  }
  tile_g[threadIdx.y][threadIdx.x] = sg;
  tile_b[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int k = 1; k < kRowLanes; ++k) {
      sg += tile_g[k][threadIdx.x];
      sb += tile_b[k][threadIdx.x];
    }
    atomicAdd(&acc_gamma[col], sg);
    atomicAdd(&acc_beta[col], sb);
  }
}

// ---- row dot products, one warp per row
template <class T>
__global__ void row_dot_kernel(const T* a, const T* b, T* out, std::int64_t out_stride, std::int64_t rows,
                               std::int64_t cols) {
  const std::int64_t warps_per_block = blockDim.x / 32;
  const std::int64_t lane = threadIdx.x % 32;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; r < rows;
       r += static_cast<std::int64_t>(gridDim.x) * warps_per_block) {
    float acc = 0.0f;
    for (std::int64_t c = lane; c < cols; c += 32) acc += to_f32(a[r * cols + c]) * to_f32(b[r * cols + c]);
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) out[r * out_stride] = from_f32<T>(acc);
  }
}

dim3 column_grid(std::int64_t rows, std::int64_t cols) {
  // About kRowsPerThread rows per thread; the kernels grid-stride over rows beyond 65535 tiles.
  const std::int64_t gx = (cols + kColTile - 1) / kColTile;
  std::int64_t gy = (rows + kRowLanes * kRowsPerThread - 1) / (kRowLanes * kRowsPerThread);
  gy = gy < 1 ? 1 : (gy > 65535 ? 65535 : gy);
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
}

}  // namespace

void column_sum(const void* x, void* out, float* scratch, std::int64_t rows, std::int64_t cols, Elem dtype,
                cudaStream_t stream) {
  if (cols <= 0) return;
  fill_zero_f32(scratch, cols, stream);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    column_sum_kernel<T><<<column_grid(rows, cols), dim3(kColTile, kRowLanes), 0, stream>>>(
        static_cast<const T*>(x), scratch, rows, cols);
    convert_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(scratch, static_cast<T*>(out), cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void cross_entropy_forward(const void* logits, const std::int32_t* labels, float* loss, std::int64_t rows,
                           std::int64_t cols, Elem dtype, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_forward_kernel<T><<<row_blocks(rows), kThreads, 0, stream>>>(static_cast<const T*>(logits),
                                                                               labels, loss, rows, cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void cross_entropy_backward(const void* logits, const std::int32_t* labels, void* dlogits, std::int64_t rows,
                            std::int64_t cols, Elem dtype, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_kernel<T><<<row_blocks(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(logits), labels, static_cast<T*>(dlogits), rows, cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void layernorm_forward(const void* x, const void* gamma, const void* beta, void* y, float* mean, float* rstd,
                       std::int64_t rows, std::int64_t cols, Elem dtype, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    layernorm_forward_kernel<T><<<row_blocks(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta), static_cast<T*>(y),
        mean, rstd, rows, cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void layernorm_backward_data(const void* x, const void* gamma, const void* dy, const float* mean,
                             const float* rstd, void* dx, std::int64_t rows, std::int64_t cols, Elem dtype,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    layernorm_backward_data_kernel<T><<<row_blocks(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(dy), mean, rstd,
        static_cast<T*>(dx), rows, cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void layernorm_backward_weight(const void* x, const void* dy, const float* mean, const float* rstd, void* dgamma,
                               void* dbeta, float* scratch, std::int64_t rows, std::int64_t cols, Elem dtype,
                               cudaStream_t stream) {
  if (cols <= 0) return;
  fill_zero_f32(scratch, 2 * cols, stream);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    layernorm_backward_weight_kernel<T><<<column_grid(rows, cols), dim3(kColTile, kRowLanes), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), mean, rstd, scratch, scratch + cols, rows, cols);
    convert_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(scratch, static_cast<T*>(dgamma), cols);
    convert_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(scratch + cols, static_cast<T*>(dbeta), cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void row_dot(const void* a, const void* b, void* out, std::int64_t out_stride, std::int64_t rows, std::int64_t cols,
             Elem dtype, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    row_dot_kernel<T><<<grid_for(rows * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), out_stride, rows, cols);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
