// Ops over token ids and class labels: embedding lookup, cross-entropy and sampled softmax.
//
//   gather          fwd copies P evenly spaced positions of each sample's T (gather_positions);
//                   bwd_data zero-fills the [B, T, D] input gradient and atomically scatter-adds.
//   embedding       fwd gather rows; bwd_weight zero the dense table gradient and scatter-add the
//                   output gradient into it (a tied embedding only scatter-adds: the owner zeroes);
//                   no bwd_data (ids carry no gradient); update is dense over the table.
//   cross-entropy   fwd per-row log-sum-exp loss; bwd_data dlogits = softmax - one_hot.
//   sampled softmax logits of the true class (row dot products) and of S shared samples (one GEMM
//                   against the gathered sample rows) as [N, 1 + S], cross-entropy with the true
//                   class in column 0; bwd_data dX = dlogits W_s + dl_0 w_true; bwd_weight
//                   dW_s = dlogits^T X, dw_true = dl_0 x, both scatter-added into the zeroed dense
//                   [vocab, d] gradient. The per-class bias is updated but its gradient (N + S
//                   scalars) is not computed.
#include "cuda_gemm.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/gather.hpp"

namespace parasim::kernels::cuda {
namespace {

class EmbeddingKernel final : public CudaOpKernel {
 public:
  EmbeddingKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    count_ = models::num_elements(o.input_shapes.at(0));
    vocab_ = o.attrs.vocab;
    dim_ = o.attrs.out_features;
    shared_ = !o.attrs.shares_weights_with.empty();
    params_.allocate(c, vocab_ * dim_, shared_ ? 0 : vocab_ * dim_, o.dtype, opt);
    ids_ = indices(count_, vocab_);
    out_ = tensor(count_ * dim_);
    dout_ = tensor(count_ * dim_, 0.01f);
    note_ = shared_ ? "table shared with " + o.attrs.shares_weights_with + ": gradient scatter-added there"
                    : "dense table gradient (zero + atomic scatter-add)";
  }

 protected:
  void forward() override { embedding_gather(ids_, params_.weights(), out_, count_, dim_, elem(), stream()); }
  void backward_weight() override {
    if (!shared_) fill_zero(params_.grads(), vocab_ * dim_, elem(), stream());
    embedding_scatter_add(ids_, dout_, params_.grads(), count_, dim_, elem(), stream());
  }

 private:
  std::int64_t count_ = 0, vocab_ = 0, dim_ = 0;
  bool shared_ = false;
  std::int32_t* ids_ = nullptr;
  void *out_ = nullptr, *dout_ = nullptr;
};

class GatherKernel final : public CudaOpKernel {
 public:
  GatherKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const models::Shape& x = o.input_shapes.at(0);
    batch_ = x.at(0), seq_ = x.at(1), dim_ = x.at(2);
    host_idx_ = gather_positions(seq_, o.attrs.positions);
    positions_ = static_cast<std::int64_t>(host_idx_.size());
    idx_ = reinterpret_cast<std::int64_t*>(bytes(positions_ * models::kGatherIndexBytes));  // cudaMalloc: aligned
    // prepare() synchronizes the stream before host_idx_ could change; it lives as long as the kernel.
    PARASIM_CUDA_CHECK(cudaMemcpyAsync(idx_, host_idx_.data(), host_idx_.size() * sizeof(std::int64_t),
                                       cudaMemcpyHostToDevice, stream()));
    x_ = tensor(batch_ * seq_ * dim_);
    y_ = tensor(batch_ * positions_ * dim_);
    dy_ = tensor(batch_ * positions_ * dim_, 0.01f);
    dx_ = tensor(batch_ * seq_ * dim_);
    note_ = std::to_string(positions_) + " of " + std::to_string(seq_) + " positions, evenly spaced";
  }

 protected:
  void forward() override { sequence_gather(idx_, x_, y_, batch_, seq_, positions_, dim_, elem(), stream()); }
  void backward_data() override {
    fill_zero(dx_, batch_ * seq_ * dim_, elem(), stream());
    sequence_scatter_add(idx_, dy_, dx_, batch_, seq_, positions_, dim_, elem(), stream());
  }

 private:
  std::int64_t batch_ = 0, seq_ = 0, positions_ = 0, dim_ = 0;
  std::vector<std::int64_t> host_idx_;
  std::int64_t* idx_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
};

class CrossEntropyKernel final : public CudaOpKernel {
 public:
  CrossEntropyKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    cols_ = x.back();
    rows_ = models::num_elements(x) / cols_;
    logits_ = tensor(rows_ * cols_);
    dlogits_ = tensor(rows_ * cols_);
    labels_ = indices(rows_, cols_);
    loss_ = scratch_f32(rows_);
  }

 protected:
  void forward() override { cross_entropy_forward(logits_, labels_, loss_, rows_, cols_, elem(), stream()); }
  void backward_data() override { cross_entropy_backward(logits_, labels_, dlogits_, rows_, cols_, elem(), stream()); }

 private:
  std::int64_t rows_ = 0, cols_ = 0;
  void *logits_ = nullptr, *dlogits_ = nullptr;
  std::int32_t* labels_ = nullptr;
  float* loss_ = nullptr;
};

class SampledSoftmaxKernel final : public CudaOpKernel {
 public:
  SampledSoftmaxKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    d_ = x.back();
    n_ = models::num_elements(x) / d_;
    vocab_ = o.attrs.vocab;
    s_ = o.attrs.num_sampled;
    params_.allocate(c, vocab_ * (d_ + 1), vocab_ * (d_ + 1), o.dtype, opt);  // [W (vocab x d) | bias (vocab)]
    x_ = tensor(n_ * d_);
    dx_ = tensor(n_ * d_);
    samples_ = indices(s_, vocab_);
    true_classes_ = indices(n_, vocab_);
    target_column_ = indices(n_, 1);  // all 0: the true class is column 0 of the logits
    w_samples_ = tensor(s_ * d_);
    w_true_ = tensor(n_ * d_);
    logits_ = tensor(n_ * (s_ + 1));
    dlogits_ = tensor(n_ * (s_ + 1));
    dw_samples_ = tensor(s_ * d_);
    dw_true_ = tensor(n_ * d_);
    loss_ = scratch_f32(n_);
    note_ = "true-class dot products + one GEMM over " + std::to_string(s_) + " shared samples; dense gradient";
  }

 protected:
  void forward() override {
    const std::int64_t ld = s_ + 1;
    embedding_gather(samples_, params_.weights(), w_samples_, s_, d_, elem(), stream());
    embedding_gather(true_classes_, params_.weights(), w_true_, n_, d_, elem(), stream());
    row_dot(x_, w_true_, logits_, ld, n_, d_, elem(), stream());
    gemm(ctx(), dtype(), gemm_shape(false, true, n_, s_, d_, d_, d_, ld), x_, w_samples_, offset(logits_, 1, dtype()));
    cross_entropy_forward(logits_, target_column_, loss_, n_, ld, elem(), stream());
  }
  void backward_data() override {
    const std::int64_t ld = s_ + 1;
    cross_entropy_backward(logits_, target_column_, dlogits_, n_, ld, elem(), stream());
    gemm(ctx(), dtype(), gemm_shape(false, false, n_, d_, s_, ld, d_, d_), offset(dlogits_, 1, dtype()), w_samples_,
         dx_);
    row_scale_add(dlogits_, ld, w_true_, dx_, n_, d_, /*accumulate=*/true, elem(), stream());
  }
  void backward_weight() override {
    const std::int64_t ld = s_ + 1;
    if (!op_has_phase(op(), Phase::BackwardData))
      cross_entropy_backward(logits_, target_column_, dlogits_, n_, ld, elem(), stream());
    gemm(ctx(), dtype(), gemm_shape(true, false, s_, d_, n_, ld, d_, d_), offset(dlogits_, 1, dtype()), x_,
         dw_samples_);
    row_scale_add(dlogits_, ld, x_, dw_true_, n_, d_, /*accumulate=*/false, elem(), stream());
    fill_zero(params_.grads(), vocab_ * d_, elem(), stream());
    embedding_scatter_add(samples_, dw_samples_, params_.grads(), s_, d_, elem(), stream());
    embedding_scatter_add(true_classes_, dw_true_, params_.grads(), n_, d_, elem(), stream());
  }

 private:
  std::int64_t n_ = 0, d_ = 0, vocab_ = 0, s_ = 0;
  void *x_ = nullptr, *dx_ = nullptr, *w_samples_ = nullptr, *w_true_ = nullptr, *logits_ = nullptr;
  void *dlogits_ = nullptr, *dw_samples_ = nullptr, *dw_true_ = nullptr;
  std::int32_t *samples_ = nullptr, *true_classes_ = nullptr, *target_column_ = nullptr;
  float* loss_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_embedding_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<EmbeddingKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_gather_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<GatherKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_cross_entropy_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<CrossEntropyKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_sampled_softmax_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<SampledSoftmaxKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
