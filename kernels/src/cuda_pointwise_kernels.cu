// Elementwise kernels: activations, add, mul, dropout, bias add and the strided copies of concat.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

template <class T, Activation A>
__global__ void activation_forward_kernel(const T* x, T* y, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const float v = to_f32(x[i]);
    float r;
    if constexpr (A == Activation::Relu) r = v > 0.0f ? v : 0.0f;
    if constexpr (A == Activation::Gelu) r = 0.5f * v * (1.0f + erff(v * kInvSqrt2));  // exact (erf) GELU
    if constexpr (A == Activation::Tanh) r = tanhf(v);
    if constexpr (A == Activation::Sigmoid) r = 1.0f / (1.0f + __expf(-v));
    y[i] = from_f32<T>(r);
  }
}

template <class T, Activation A>
__global__ void activation_backward_kernel(const T* x, const T* y, const T* dy, T* dx, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const float g = to_f32(dy[i]);
    float d;
    if constexpr (A == Activation::Relu) d = to_f32(x[i]) > 0.0f ? g : 0.0f;
    if constexpr (A == Activation::Gelu) {
      const float v = to_f32(x[i]);
      d = g * (0.5f * (1.0f + erff(v * kInvSqrt2)) + v * kInvSqrt2Pi * __expf(-0.5f * v * v));
    }
    if constexpr (A == Activation::Tanh) {
      const float t = to_f32(y[i]);
      d = g * (1.0f - t * t);
    }
    if constexpr (A == Activation::Sigmoid) {
      const float s = to_f32(y[i]);
      d = g * s * (1.0f - s);
    }
    dx[i] = from_f32<T>(d);
  }
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) y[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

template <class T>
__global__ void mul_forward_kernel(const T* a, const T* b, T* y, std::int64_t n, std::int64_t inner) {
  PARASIM_GRID_STRIDE_LOOP(i, n) y[i] = from_f32<T>(to_f32(a[i]) * to_f32(b[i / inner]));
}

// Same shapes: da and db in one pass.
template <class T>
__global__ void mul_backward_same_kernel(const T* a, const T* b, const T* dy, T* da, T* db, std::int64_t n) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const float g = to_f32(dy[i]);
    da[i] = from_f32<T>(g * to_f32(b[i]));
    db[i] = from_f32<T>(g * to_f32(a[i]));
  }
}

// Broadcast b: da elementwise, db[j] = sum_k dy[j, k] * a[j, k] with one warp per j.
template <class T>
__global__ void mul_backward_broadcast_kernel(const T* a, const T* b, const T* dy, T* da, T* db, std::int64_t rows,
                                              std::int64_t inner) {
  const std::int64_t warps_per_block = blockDim.x / 32;
  const std::int64_t lane = threadIdx.x % 32;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < rows;
       j += static_cast<std::int64_t>(gridDim.x) * warps_per_block) {
    const float bj = to_f32(b[j]);
    float acc = 0.0f;
    for (std::int64_t k = lane; k < inner; k += 32) {
      const std::int64_t i = j * inner + k;
      const float g = to_f32(dy[i]);
      da[i] = from_f32<T>(g * bj);
      acc += g * to_f32(a[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) db[j] = from_f32<T>(acc);
  }
}

template <class T>
__global__ void dropout_forward_kernel(const T* x, T* y, std::uint8_t* mask, std::int64_t n, float p, float scale,
                                       std::uint64_t seed) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const bool keep = uniform01(seed, i) >= p;
    mask[i] = keep ? 1 : 0;
    y[i] = from_f32<T>(keep ? to_f32(x[i]) * scale : 0.0f);
  }
}

template <class T>
__global__ void dropout_backward_kernel(const T* dy, const std::uint8_t* mask, T* dx, std::int64_t n, float scale) {
  PARASIM_GRID_STRIDE_LOOP(i, n) dx[i] = from_f32<T>(mask[i] ? to_f32(dy[i]) * scale : 0.0f);
}

template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, std::int64_t n, std::int64_t cols) {
  PARASIM_GRID_STRIDE_LOOP(i, n) y[i] = from_f32<T>(to_f32(y[i]) + to_f32(bias[i % cols]));
}

template <class T>
__global__ void strided_copy_kernel(const T* src, std::int64_t src_stride, std::int64_t src_offset, T* dst,
                                    std::int64_t dst_stride, std::int64_t dst_offset, std::int64_t outer,
                                    std::int64_t chunk) {
  PARASIM_GRID_STRIDE_LOOP(i, outer * chunk) {
    const std::int64_t o = i / chunk;
    const std::int64_t j = i - o * chunk;
    dst[o * dst_stride + dst_offset + j] = src[o * src_stride + src_offset + j];
  }
}

template <class T>
__global__ void row_scale_add_kernel(const T* scale, std::int64_t scale_stride, const T* x, T* y, std::int64_t rows,
                                     std::int64_t cols, bool accumulate) {
  PARASIM_GRID_STRIDE_LOOP(i, rows * cols) {
    const std::int64_t r = i / cols;
    const float v = to_f32(scale[r * scale_stride]) * to_f32(x[i]);
    y[i] = from_f32<T>(accumulate ? to_f32(y[i]) + v : v);
  }
}

template <Activation A>
void launch_activation_forward(const void* x, void* y, std::int64_t n, Elem dtype, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    activation_forward_kernel<T, A><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                           static_cast<T*>(y), n);
  });
}

template <Activation A>
void launch_activation_backward(const void* x, const void* y, const void* dy, void* dx, std::int64_t n, Elem dtype,
                                cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    activation_backward_kernel<T, A><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n);
  });
}

}  // namespace

void activation_forward(Activation a, const void* x, void* y, std::int64_t n, Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  switch (a) {
    case Activation::Relu: launch_activation_forward<Activation::Relu>(x, y, n, dtype, stream); break;
    case Activation::Gelu: launch_activation_forward<Activation::Gelu>(x, y, n, dtype, stream); break;
    case Activation::Tanh: launch_activation_forward<Activation::Tanh>(x, y, n, dtype, stream); break;
    case Activation::Sigmoid: launch_activation_forward<Activation::Sigmoid>(x, y, n, dtype, stream); break;
  }
  PARASIM_CHECK_LAUNCH();
}

void activation_backward(Activation a, const void* x, const void* y, const void* dy, void* dx, std::int64_t n,
                         Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  switch (a) {
    case Activation::Relu: launch_activation_backward<Activation::Relu>(x, y, dy, dx, n, dtype, stream); break;
    case Activation::Gelu: launch_activation_backward<Activation::Gelu>(x, y, dy, dx, n, dtype, stream); break;
    case Activation::Tanh: launch_activation_backward<Activation::Tanh>(x, y, dy, dx, n, dtype, stream); break;
    case Activation::Sigmoid:
      launch_activation_backward<Activation::Sigmoid>(x, y, dy, dx, n, dtype, stream);
      break;
  }
  PARASIM_CHECK_LAUNCH();
}

void add(const void* a, const void* b, void* y, std::int64_t n, Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                        static_cast<T*>(y), n);
  });
  PARASIM_CHECK_LAUNCH();
}

void mul_forward(const void* a, const void* b, void* y, std::int64_t n, std::int64_t inner, Elem dtype,
                 cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    mul_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                static_cast<T*>(y), n, inner < 1 ? 1 : inner);
  });
  PARASIM_CHECK_LAUNCH();
}

void mul_backward(const void* a, const void* b, const void* dy, void* da, void* db, std::int64_t n,
                  std::int64_t inner, Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* ta = static_cast<const T*>(a);
    const T* tb = static_cast<const T*>(b);
    const T* tdy = static_cast<const T*>(dy);
    if (inner <= 1) {
      mul_backward_same_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(ta, tb, tdy, static_cast<T*>(da),
                                                                        static_cast<T*>(db), n);
    } else {
      const std::int64_t rows = n / inner;
      mul_backward_broadcast_kernel<T><<<grid_for(rows * 32), kThreads, 0, stream>>>(
          ta, tb, tdy, static_cast<T*>(da), static_cast<T*>(db), rows, inner);
    }
  });
  PARASIM_CHECK_LAUNCH();
}

void dropout_forward(const void* x, void* y, std::uint8_t* mask, std::int64_t n, float p, std::uint64_t seed,
                     Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    dropout_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                    mask, n, p, scale, seed);
  });
  PARASIM_CHECK_LAUNCH();
}

void dropout_backward(const void* dy, const std::uint8_t* mask, void* dx, std::int64_t n, float p, Elem dtype,
                      cudaStream_t stream) {
  if (n <= 0) return;
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    dropout_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), mask,
                                                                     static_cast<T*>(dx), n, scale);
  });
  PARASIM_CHECK_LAUNCH();
}

void add_bias(void* y, const void* bias, std::int64_t rows, std::int64_t cols, Elem dtype, cudaStream_t stream) {
  const std::int64_t n = rows * cols;
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    add_bias_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), n,
                                                             cols);
  });
  PARASIM_CHECK_LAUNCH();
}

void strided_copy(const void* src, std::int64_t src_stride, std::int64_t src_offset, void* dst,
                  std::int64_t dst_stride, std::int64_t dst_offset, std::int64_t outer, std::int64_t chunk,
                  Elem dtype, cudaStream_t stream) {
  if (outer * chunk <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    strided_copy_kernel<T><<<grid_for(outer * chunk), kThreads, 0, stream>>>(
        static_cast<const T*>(src), src_stride, src_offset, static_cast<T*>(dst), dst_stride, dst_offset, outer,
        chunk);
  });
  PARASIM_CHECK_LAUNCH();
}

void row_scale_add(const void* scale, std::int64_t scale_stride, const void* x, void* y, std::int64_t rows,
                   std::int64_t cols, bool accumulate, Elem dtype, cudaStream_t stream) {
  if (rows * cols <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    row_scale_add_kernel<T><<<grid_for(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(scale), scale_stride, static_cast<const T*>(x), static_cast<T*>(y), rows, cols,
        accumulate);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
