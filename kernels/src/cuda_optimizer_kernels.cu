// Optimizer steps as fused elementwise kernels (one read of param, grad and state, one write),
// the way fused/foreach optimizers run. State is fp32, parameters and gradients in the op's dtype.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

template <class T>
__global__ void sgd_kernel(T* p, const T* g, std::int64_t n, float lr) {
  PARASIM_GRID_STRIDE_LOOP(i, n) p[i] = from_f32<T>(to_f32(p[i]) - lr * to_f32(g[i]));
}

template <class T>
__global__ void momentum_kernel(T* p, const T* g, float* v, std::int64_t n, float lr, float mu) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const float vel = mu * v[i] + to_f32(g[i]);
    v[i] = vel;
    p[i] = from_f32<T>(to_f32(p[i]) - lr * vel);
  }
}

template <class T>
__global__ void adam_kernel(T* p, const T* g, float* m, float* v, std::int64_t n, float lr, float b1, float b2,
                            float eps, float bc1, float bc2) {
  PARASIM_GRID_STRIDE_LOOP(i, n) {
    const float grad = to_f32(g[i]);
    const float mi = b1 * m[i] + (1.0f - b1) * grad;
    const float vi = b2 * v[i] + (1.0f - b2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = from_f32<T>(to_f32(p[i]) - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps));
  }
}

}  // namespace

void sgd_update(void* param, const void* grad, std::int64_t n, float lr, Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(param), static_cast<const T*>(grad), n, lr);
  });
  PARASIM_CHECK_LAUNCH();
}

void momentum_update(void* param, const void* grad, float* velocity, std::int64_t n, float lr, float momentum,
                     Elem dtype, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    momentum_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(param), static_cast<const T*>(grad),
                                                             velocity, n, lr, momentum);
  });
  PARASIM_CHECK_LAUNCH();
}

void adam_update(void* param, const void* grad, float* m, float* v, std::int64_t n, float lr, float beta1,
                 float beta2, float eps, float bias_correction1, float bias_correction2, Elem dtype,
                 cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    adam_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(param), static_cast<const T*>(grad), m, v,
                                                         n, lr, beta1, beta2, eps, bias_correction1,
                                                         bias_correction2);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
