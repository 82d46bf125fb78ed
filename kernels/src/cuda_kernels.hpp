// Launchers of parasim's own CUDA kernels (defined in cuda_*_kernels.cu). Private to the CUDA
// backend. Tensors are untyped device pointers whose element type is `dtype` (fp32/fp16/bf16);
// arithmetic is always done in fp32. Every launcher enqueues on `stream` and checks the launch.
//
// Example:
//   cuda::fill_uniform(x, n, Elem::F16, 1.0f, seed, stream);
//   cuda::activation_forward(cuda::Activation::Relu, x, y, n, Elem::F16, stream);
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace parasim::kernels::cuda {

/// Element type of a tensor. The backend maps models::DType onto it; the .cu files do not include
/// the model headers (Boost) so nvcc stays fast.
enum class Elem : std::uint8_t { F32, F16, BF16 };

// ---------------------------------------------------------------- initialisation (cuda_fill_kernels.cu)
/// x[i] = uniform in [-scale, scale), a pure function of (seed, i).
void fill_uniform(void* x, std::int64_t n, Elem dtype, float scale, std::uint64_t seed, cudaStream_t stream);
/// ids[i] = uniform integer in [0, modulo).
void fill_indices(std::int32_t* ids, std::int64_t n, std::int32_t modulo, std::uint64_t seed, cudaStream_t stream);
/// x[i] = 0 with a kernel (not cudaMemsetAsync) so that it appears among the phase's kernels.
void fill_zero(void* x, std::int64_t n, Elem dtype, cudaStream_t stream);
void fill_zero_f32(float* x, std::int64_t n, cudaStream_t stream);

// ---------------------------------------------------------------- elementwise (cuda_pointwise_kernels.cu)
enum class Activation : std::uint8_t { Relu, Gelu, Tanh, Sigmoid };
void activation_forward(Activation a, const void* x, void* y, std::int64_t n, Elem dtype, cudaStream_t stream);
/// dx = dy * f'(x); uses x (ReLU, GELU) or y (tanh, sigmoid) as the function needs.
void activation_backward(Activation a, const void* x, const void* y, const void* dy, void* dx, std::int64_t n,
                         Elem dtype, cudaStream_t stream);
/// y = a + b (y may alias a).
void add(const void* a, const void* b, void* y, std::int64_t n, Elem dtype, cudaStream_t stream);
/// y = a * b where b has n / inner elements broadcast over the trailing `inner` elements (inner = 1:
/// same shape).
void mul_forward(const void* a, const void* b, void* y, std::int64_t n, std::int64_t inner, Elem dtype,
                 cudaStream_t stream);
/// da = dy * b; db = sum over the broadcast of dy * a (one warp per element of b when inner > 1).
void mul_backward(const void* a, const void* b, const void* dy, void* da, void* db, std::int64_t n,
                  std::int64_t inner, Elem dtype, cudaStream_t stream);
/// y = x * keep / (1 - p), keep ~ Bernoulli(1 - p) from (seed, i); the mask is kept for backward.
void dropout_forward(const void* x, void* y, std::uint8_t* mask, std::int64_t n, float p, std::uint64_t seed,
                     Elem dtype, cudaStream_t stream);
void dropout_backward(const void* dy, const std::uint8_t* mask, void* dx, std::int64_t n, float p, Elem dtype,
                      cudaStream_t stream);
/// y[r, c] += bias[c] for a row-major [rows, cols] tensor.
void add_bias(void* y, const void* bias, std::int64_t rows, std::int64_t cols, Elem dtype, cudaStream_t stream);
/// Copies `outer` chunks of `chunk` elements:
///   dst[o * dst_stride + dst_offset + j] = src[o * src_stride + src_offset + j]
/// (concat forward and its split backward).
void strided_copy(const void* src, std::int64_t src_stride, std::int64_t src_offset, void* dst,
                  std::int64_t dst_stride, std::int64_t dst_offset, std::int64_t outer, std::int64_t chunk,
                  Elem dtype, cudaStream_t stream);

/// y[r, :] = (accumulate ? y[r, :] : 0) + scale[r * scale_stride] * x[r, :] (sampled softmax's true-class rows).
void row_scale_add(const void* scale, std::int64_t scale_stride, const void* x, void* y, std::int64_t rows,
                   std::int64_t cols, bool accumulate, Elem dtype, cudaStream_t stream);

// ---------------------------------------------------------------- reductions (cuda_reduction_kernels.cu)
/// out[r * out_stride] = dot(a[r, :], b[r, :]) (one warp per row).
void row_dot(const void* a, const void* b, void* out, std::int64_t out_stride, std::int64_t rows, std::int64_t cols,
             Elem dtype, cudaStream_t stream);
/// out[c] = sum_r x[r, c] (bias gradients). `scratch` holds `cols` floats.
void column_sum(const void* x, void* out, float* scratch, std::int64_t rows, std::int64_t cols, Elem dtype,
                cudaStream_t stream);
/// loss[r] = logsumexp(logits[r, :]) - logits[r, labels[r]].
void cross_entropy_forward(const void* logits, const std::int32_t* labels, float* loss, std::int64_t rows,
                           std::int64_t cols, Elem dtype, cudaStream_t stream);
/// dlogits[r, c] = (softmax(logits[r, :])[c] - [c == labels[r]]) / rows.
void cross_entropy_backward(const void* logits, const std::int32_t* labels, void* dlogits, std::int64_t rows,
                            std::int64_t cols, Elem dtype, cudaStream_t stream);
/// Layer norm over the last dim; gamma/beta have `cols` elements of `dtype`; mean/rstd: `rows` floats.
void layernorm_forward(const void* x, const void* gamma, const void* beta, void* y, float* mean, float* rstd,
                       std::int64_t rows, std::int64_t cols, Elem dtype, cudaStream_t stream);
void layernorm_backward_data(const void* x, const void* gamma, const void* dy, const float* mean,
                             const float* rstd, void* dx, std::int64_t rows, std::int64_t cols, Elem dtype,
                             cudaStream_t stream);
/// dgamma/dbeta; `scratch` holds 2 * cols floats.
void layernorm_backward_weight(const void* x, const void* dy, const float* mean, const float* rstd, void* dgamma,
                               void* dbeta, float* scratch, std::int64_t rows, std::int64_t cols, Elem dtype,
                               cudaStream_t stream);

// ---------------------------------------------------------------- embeddings (cuda_embedding_kernels.cu)
/// out[i, :] = table[ids[i], :] for `count` ids of a [*, dim] table.
void embedding_gather(const std::int32_t* ids, const void* table, void* out, std::int64_t count, std::int64_t dim,
                      Elem dtype, cudaStream_t stream);
/// dtable[ids[i], :] += dout[i, :] (atomic: repeated ids accumulate).
void embedding_scatter_add(const std::int32_t* ids, const void* dout, void* dtable, std::int64_t count,
                           std::int64_t dim, Elem dtype, cudaStream_t stream);
/// y[b, p, :] = x[b, idx[p], :] for x [batch, seq, dim], y [batch, positions, dim] (index_select, axis 1).
void sequence_gather(const std::int64_t* idx, const void* x, void* y, std::int64_t batch, std::int64_t seq,
                     std::int64_t positions, std::int64_t dim, Elem dtype, cudaStream_t stream);
/// dx[b, idx[p], :] += dy[b, p, :] into a zeroed dx (atomic: index_add_ allows repeated indices).
void sequence_scatter_add(const std::int64_t* idx, const void* dy, void* dx, std::int64_t batch, std::int64_t seq,
                          std::int64_t positions, std::int64_t dim, Elem dtype, cudaStream_t stream);

// ---------------------------------------------------------------- LSTM cell (cuda_lstm_kernels.cu)
/// gates: [batch, 4*hidden] pre-activations in the order i, f, g, o, overwritten with activations;
/// c_out = f*c_prev + i*g, h_out = o*tanh(c_out).
void lstm_cell_forward(void* gates, const void* bias, const void* c_prev, void* c_out, void* h_out,
                       std::int64_t batch, std::int64_t hidden, Elem dtype, cudaStream_t stream);
/// From the activations, cells and dh: dgates ([batch, 4*hidden]) and dc (in: from t+1, out: to t-1).
void lstm_cell_backward(const void* gates, const void* c_prev, const void* c, const void* dh, void* dc,
                        void* dgates, std::int64_t batch, std::int64_t hidden, Elem dtype, cudaStream_t stream);

// ---------------------------------------------------------------- additive attention (cuda_attention_kernels.cu)
/// Bahdanau scores:
///   scores[b, h, i, j] = g * sum_d w[h*dh + d] * tanh(q[b, i, h*dh + d] + k[b, j, h*dh + d] + bias[h*dh + d])
/// for q [B, Tq, H*dh], k [B, Tk, H*dh]; scores [B*H, Tq, Tk]. `g` is a device scalar.
struct AdditiveDims {
  std::int64_t batch, heads, tq, tk, head_dim;
};
void additive_attention_scores(const void* q, const void* k, const void* w, const void* bias, const void* g,
                               void* scores, const AdditiveDims& d, Elem dtype, cudaStream_t stream);
/// From dscores: dq [B, Tq, D], dw_partial [B*Tq, D] (column-summed into dw later), dk [B, Tk, D].
void additive_attention_backward(const void* q, const void* k, const void* w, const void* bias, const void* g,
                                 const void* dscores, void* dq, void* dw_partial, void* dk, const AdditiveDims& d,
                                 Elem dtype, cudaStream_t stream);

// ---------------------------------------------------------------- optimizers (cuda_optimizer_kernels.cu)
/// Parameters and gradients in `dtype`, optimizer state in fp32.
void sgd_update(void* param, const void* grad, std::int64_t n, float lr, Elem dtype, cudaStream_t stream);
void momentum_update(void* param, const void* grad, float* velocity, std::int64_t n, float lr, float momentum,
                     Elem dtype, cudaStream_t stream);
/// bias_correction1/2 = 1 - beta^step, computed by the caller.
void adam_update(void* param, const void* grad, float* m, float* v, std::int64_t n, float lr, float beta1,
                 float beta2, float eps, float bias_correction1, float bias_correction2, Elem dtype,
                 cudaStream_t stream);

}  // namespace parasim::kernels::cuda
