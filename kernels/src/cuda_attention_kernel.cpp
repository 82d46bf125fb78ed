// The attention core (no projections): scores, softmax over keys, weighted sum of values.
//
// Dot-product: S = Q K^T / sqrt(d) and O = P V are cuBLAS strided-batched GEMMs over
// batch x heads; the softmax and its gradient are cuDNN. Backward: dP = dO V^T, dV = P^T dO,
// dS = softmax'(P, dP), dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d): four GEMMs and a softmax.
// Additive (Bahdanau, normalized): scores g * w . tanh(q + k + b) from our own kernels, the rest
// as above; the weight gradient is the column sums of the per-row partials (dw) and of dq (db);
// the scalar g's gradient (one dot product) is not computed.
//
// Q, K, V are held head-major ([batch * heads, T, head_dim]) so each head is one GEMM of the
// batch; the transposes from a packed [B, T, 3D] projection are the projection's business.
// The score-sized buffers (S, P, dP, dS) hold one chunk of (batch, head) matrices within
// kAttentionScoreBudget (attention_chunks.hpp), not B x H x Tq x Tk: a GPT-3 layer at B=8,
// T=2048 would need four 6.4 GB buffers. Chunked, the backward recomputes each chunk's P.
#include <algorithm>
#include <cmath>
#include <string>

#include "cuda_cudnn_descriptors.hpp"
#include "cuda_gemm.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"
#include "parasim/common/error.hpp"
#include "parasim/kernels/attention_chunks.hpp"

namespace parasim::kernels::cuda {
namespace {

class AttentionKernel final : public CudaOpKernel {
 public:
  AttentionKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    if (o.input_shapes.size() == 1) {
      if (o.attrs.kv_heads > 0) throw RuntimeError("no grouped-query attention kernel yet");
      const auto& qkv = o.input_shapes[0];
      b_ = qkv.at(0);
      tq_ = tk_ = qkv.at(1);
      d_ = dv_ = qkv.at(2) / 3;
    } else {
      b_ = o.input_shapes.at(0).at(0);
      tq_ = o.input_shapes[0].at(1);
      d_ = o.input_shapes[0].at(2);
      tk_ = o.input_shapes.at(2).at(1);
      dv_ = o.input_shapes[2].at(2);
    }
    h_ = std::max<std::int64_t>(o.attrs.heads, 1);
    bh_ = b_ * h_;
    dh_ = d_ / h_;
    dvh_ = dv_ / h_;
    additive_ = o.attrs.additive;
    scale_ = additive_ ? 1.0f : 1.0f / std::sqrt(static_cast<float>(dh_));

    // The four score-sized buffers hold one chunk of (batch, head) matrices, not all of them:
    // dot-product chunks over batch x heads (head-major, so a chunk is contiguous), additive over
    // batch (its kernels take whole rows of features).
    hpu_ = additive_ ? h_ : 1;
    const std::int64_t units = additive_ ? b_ : bh_;
    const AttentionChunks plan = plan_attention_chunks(
        units, hpu_ * tq_ * tk_ * models::dtype_size(o.dtype), 4, kAttentionScoreBudget);
    chunk_bh_ = plan.units_per_chunk * hpu_;
    chunks_ = plan.chunks;

    q_ = tensor(b_ * tq_ * d_);
    k_ = tensor(b_ * tk_ * d_);
    v_ = tensor(b_ * tk_ * dv_);
    s_ = tensor(chunk_bh_ * tq_ * tk_);
    p_ = tensor(chunk_bh_ * tq_ * tk_);
    o_ = tensor(b_ * tq_ * dv_);
    do_ = tensor(b_ * tq_ * dv_, 0.01f);
    dp_ = tensor(chunk_bh_ * tq_ * tk_);
    ds_ = tensor(chunk_bh_ * tq_ * tk_);
    dq_ = tensor(b_ * tq_ * d_);
    dk_ = tensor(b_ * tk_ * d_);
    dvalues_ = tensor(b_ * tk_ * dv_);
    if (additive_) {
      params_.allocate(c, 2 * d_ + 1, 2 * d_ + 1, o.dtype, opt);
      dw_partial_ = tensor(b_ * tq_ * d_);
      reduce_scratch_ = scratch_f32(d_);
      note_ = "additive (Bahdanau) scores, own kernels";
    } else {
      note_ = "dot-product scores, cuBLAS batched GEMMs, head-major layout";
    }
    if (!plan.whole()) {
      note_ += "; scores in " + std::to_string(chunks_) + " chunks of " + std::to_string(chunk_bh_) +
               " (batch, head) matrices, the backward recomputes them (" + format_bytes(kAttentionScoreBudget) +
               " budget)";
    }
  }

 protected:
  void forward() override {
    for (std::int64_t bh0 = 0; bh0 < bh_; bh0 += chunk_bh_) {
      const std::int64_t n = std::min(chunk_bh_, bh_ - bh0);
      scores_and_softmax(bh0, n);
      gemm(ctx(), dtype(),
           per_head(gemm_shape(false, false, tq_, dvh_, tk_, tk_, dvh_, dvh_), n, tq_ * tk_, tk_ * dvh_, tq_ * dvh_),
           p_, at(v_, bh0 * tk_ * dvh_), at(o_, bh0 * tq_ * dvh_));
    }
  }

  void backward_data() override {
    for (std::int64_t bh0 = 0; bh0 < bh_; bh0 += chunk_bh_) {
      const std::int64_t n = std::min(chunk_bh_, bh_ - bh0);
      // One chunk: the forward's P is still in p_. Several: this chunk's P was overwritten.
      if (chunks_ > 1) scores_and_softmax(bh0, n);
      void* dout = at(do_, bh0 * tq_ * dvh_);
      // dP = dO V^T, dV = P^T dO
      gemm(ctx(), dtype(),
           per_head(gemm_shape(false, true, tq_, tk_, dvh_, dvh_, dvh_, tk_), n, tq_ * dvh_, tk_ * dvh_, tq_ * tk_),
           dout, at(v_, bh0 * tk_ * dvh_), dp_);
      gemm(ctx(), dtype(),
           per_head(gemm_shape(true, false, tk_, dvh_, tq_, tk_, dvh_, dvh_), n, tq_ * tk_, tq_ * dvh_, tk_ * dvh_), p_,
           dout, at(dvalues_, bh0 * tk_ * dvh_));
      softmax_rows_backward(ctx(), dtype(), p_, dp_, ds_, n * tq_, tk_);
      if (additive_) {
        additive_attention_backward(at(q_, bh0 * tq_ * dh_), at(k_, bh0 * tk_ * dh_), params_.weights(0),
                                    params_.weights(d_), params_.weights(2 * d_), ds_, at(dq_, bh0 * tq_ * dh_),
                                    at(dw_partial_, bh0 * tq_ * dh_), at(dk_, bh0 * tk_ * dh_), dims(n), elem(),
                                    stream());
      } else {
        gemm(ctx(), dtype(),
             per_head(gemm_shape(false, false, tq_, dh_, tk_, tk_, dh_, dh_, scale_), n, tq_ * tk_, tk_ * dh_,
                      tq_ * dh_),
             ds_, at(k_, bh0 * tk_ * dh_), at(dq_, bh0 * tq_ * dh_));
        gemm(
            ctx(), dtype(),
            per_head(gemm_shape(true, false, tk_, dh_, tq_, tk_, dh_, dh_, scale_), n, tq_ * tk_, tq_ * dh_, tk_ * dh_),
            ds_, at(q_, bh0 * tq_ * dh_), at(dk_, bh0 * tk_ * dh_));
      }
    }
  }

  void backward_weight() override {
    // Only additive attention has parameters. Without a data-gradient phase (q and k straight
    // from the data batch) the score gradients this needs are computed here.
    if (!op_has_phase(op(), Phase::BackwardData)) backward_data();
    column_sum(dw_partial_, params_.grads(0), reduce_scratch_, b_ * tq_, d_, elem(), stream());
    column_sum(dq_, params_.grads(d_), reduce_scratch_, b_ * tq_, d_, elem(), stream());
  }

 private:
  /// S then P for (batch, head) matrices bh0 .. bh0 + n - 1 into the chunk buffers s_ and p_.
  /// Offsets are in elements of the head-major tensors; for the additive [B, T, D] layout
  /// bh0 * T * head_dim is the same element as (bh0 / heads) * T * D.
  void scores_and_softmax(std::int64_t bh0, std::int64_t n) {
    if (additive_) {
      additive_attention_scores(at(q_, bh0 * tq_ * dh_), at(k_, bh0 * tk_ * dh_), params_.weights(0),
                                params_.weights(d_), params_.weights(2 * d_), s_, dims(n), elem(), stream());
    } else {
      gemm(ctx(), dtype(),
           per_head(gemm_shape(false, true, tq_, tk_, dh_, dh_, dh_, tk_, scale_), n, tq_ * dh_, tk_ * dh_, tq_ * tk_),
           at(q_, bh0 * tq_ * dh_), at(k_, bh0 * tk_ * dh_), s_);
    }
    softmax_rows_forward(ctx(), dtype(), s_, p_, n * tq_, tk_);
  }
  void* at(void* p, std::int64_t elements) const { return offset(p, elements, dtype()); }
  RowMajorGemm per_head(RowMajorGemm g, std::int64_t batch, std::int64_t stride_a, std::int64_t stride_b,
                        std::int64_t stride_c) const {
    g.batch = batch;
    g.stride_a = stride_a;
    g.stride_b = stride_b;
    g.stride_c = stride_c;
    return g;
  }
  /// Additive dims of a chunk of `bh` (batch, head) matrices: whole batch rows.
  AdditiveDims dims(std::int64_t bh) const { return {bh / h_, h_, tq_, tk_, dh_}; }

  std::int64_t b_ = 0, tq_ = 0, tk_ = 0, d_ = 0, dv_ = 0, h_ = 1, bh_ = 0, dh_ = 0, dvh_ = 0;
  std::int64_t hpu_ = 1, chunk_bh_ = 0, chunks_ = 1;  // heads per chunk unit, (batch, head) per chunk, chunks
  bool additive_ = false;
  float scale_ = 1.0f;
  void *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *s_ = nullptr, *p_ = nullptr, *o_ = nullptr;
  void *do_ = nullptr, *dp_ = nullptr, *ds_ = nullptr, *dq_ = nullptr, *dk_ = nullptr, *dvalues_ = nullptr;
  void* dw_partial_ = nullptr;
  float* reduce_scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_attention_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<AttentionKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
