// Additive (Bahdanau) attention scores and their gradients. Dot-product attention needs none of
// this: its scores are a cuBLAS batched GEMM.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

// One thread per score (b, h, i, j), looping over the head's features.
template <class T>
__global__ void additive_scores_kernel(const T* q, const T* k, const T* w, const T* bias, const T* g, T* scores,
                                       AdditiveDims d) {
  const std::int64_t features = d.heads * d.head_dim;
  const float scale = to_f32(*g);
  PARASIM_GRID_STRIDE_LOOP(idx, d.batch * d.heads * d.tq * d.tk) {
    const std::int64_t j = idx % d.tk;
    const std::int64_t i = (idx / d.tk) % d.tq;
    const std::int64_t h = (idx / (d.tk * d.tq)) % d.heads;
    const std::int64_t b = idx / (d.tk * d.tq * d.heads);
    const T* qi = q + (b * d.tq + i) * features + h * d.head_dim;
    const T* kj = k + (b * d.tk + j) * features + h * d.head_dim;
    const T* wh = w + h * d.head_dim;
    const T* bh = bias + h * d.head_dim;
    float acc = 0.0f;
    for (std::int64_t f = 0; f < d.head_dim; ++f)
      acc += to_f32(wh[f]) * tanhf(to_f32(qi[f]) + to_f32(kj[f]) + to_f32(bh[f]));
    scores[idx] = from_f32<T>(scale * acc);
  }
}

// One thread per (b, i, feature): dq and the per-row partial of dw, looping over keys j.
template <class T>
__global__ void additive_backward_q_kernel(const T* q, const T* k, const T* w, const T* bias, const T* g,
                                           const T* dscores, T* dq, T* dw_partial, AdditiveDims d) {
  const std::int64_t features = d.heads * d.head_dim;
  const float scale = to_f32(*g);
  PARASIM_GRID_STRIDE_LOOP(idx, d.batch * d.tq * features) {
    const std::int64_t f = idx % features;
    const std::int64_t i = (idx / features) % d.tq;
    const std::int64_t b = idx / (features * d.tq);
    const std::int64_t h = f / d.head_dim;
    const float qf = to_f32(q[idx]) + to_f32(bias[f]);
    const float wf = to_f32(w[f]);
    const T* ds = dscores + ((b * d.heads + h) * d.tq + i) * d.tk;
    float dqf = 0.0f, dwf = 0.0f;
    for (std::int64_t j = 0; j < d.tk; ++j) {
      const float t = tanhf(qf + to_f32(k[(b * d.tk + j) * features + f]));
      const float s = scale * to_f32(ds[j]);
      dqf += s * wf * (1.0f - t * t);
      dwf += s * t;
    }
    dq[idx] = from_f32<T>(dqf);
    dw_partial[idx] = from_f32<T>(dwf);
  }
}

// One thread per (b, j, feature): dk, looping over queries i.
template <class T>
__global__ void additive_backward_k_kernel(const T* q, const T* k, const T* w, const T* bias, const T* g,
                                           const T* dscores, T* dk, AdditiveDims d) {
  const std::int64_t features = d.heads * d.head_dim;
  const float scale = to_f32(*g);
  PARASIM_GRID_STRIDE_LOOP(idx, d.batch * d.tk * features) {
    const std::int64_t f = idx % features;
    const std::int64_t j = (idx / features) % d.tk;
    const std::int64_t b = idx / (features * d.tk);
    const std::int64_t h = f / d.head_dim;
    const float kf = to_f32(k[idx]) + to_f32(bias[f]);
    const float wf = to_f32(w[f]);
    float dkf = 0.0f;
    for (std::int64_t i = 0; i < d.tq; ++i) {
      const float t = tanhf(kf + to_f32(q[(b * d.tq + i) * features + f]));
      dkf += scale * to_f32(dscores[((b * d.heads + h) * d.tq + i) * d.tk + j]) * wf * (1.0f - t * t);
    }
    dk[idx] = from_f32<T>(dkf);
  }
}

}  // namespace

void additive_attention_scores(const void* q, const void* k, const void* w, const void* bias, const void* g,
                               void* scores, const AdditiveDims& d, Elem dtype, cudaStream_t stream) {
  const std::int64_t n = d.batch * d.heads * d.tq * d.tk;
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    additive_scores_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<const T*>(g), static_cast<T*>(scores), d);
  });
  PARASIM_CHECK_LAUNCH();
}

void additive_attention_backward(const void* q, const void* k, const void* w, const void* bias, const void* g,
                                 const void* dscores, void* dq, void* dw_partial, void* dk, const AdditiveDims& d,
                                 Elem dtype, cudaStream_t stream) {
  const std::int64_t features = d.heads * d.head_dim;
  if (d.batch * features <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    additive_backward_q_kernel<T><<<grid_for(d.batch * d.tq * features), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<const T*>(g), static_cast<const T*>(dscores), static_cast<T*>(dq), static_cast<T*>(dw_partial), d);
    additive_backward_k_kernel<T><<<grid_for(d.batch * d.tk * features), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<const T*>(g), static_cast<const T*>(dscores), static_cast<T*>(dk), d);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
