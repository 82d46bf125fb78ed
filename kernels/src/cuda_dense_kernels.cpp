// Linear layers and activation-by-activation matmuls on cuBLAS.
//
//   Linear   y = x W^T (+ b)      fwd: 1 GEMM (+ bias kernel)   bwd_data: dx = dy W
//                                 bwd_weight: dW = dy^T x (+ bias column sum)
//   Matmul   C = A B, B [K, N]    bwd_data: dA = dC B^T and dB = A^T dC
//   BatchedMatmul  same per batch (strided-batched GEMMs)
//
// A matmul whose one operand is the data batch needs one of its two data gradients
// (macs_bwd_data == macs_fwd); the kernel then computes dA (same MACs as dB).
// A tied Linear (shares_weights_with) accumulates into the shared weight's gradient (beta = 1)
// and its update covers only its bias.
#include "cuda_gemm.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"
#include "parasim/common/error.hpp"

namespace parasim::kernels::cuda {
namespace {

std::int64_t leading_rows(const models::Shape& s, std::size_t trailing) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + trailing < s.size(); ++i) rows *= s[i];
  return rows;
}

class LinearKernel final : public CudaOpKernel {
 public:
  LinearKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    k_ = x.back();
    n_ = o.attrs.out_features;
    m_ = models::num_elements(x) / k_;
    const std::int64_t bias = o.attrs.bias ? n_ : 0;
    shared_ = !o.attrs.shares_weights_with.empty();
    // Owned parameters first: [W | b] normally, [b | W] when W belongs to another op.
    w_offset_ = shared_ ? bias : 0;
    b_offset_ = shared_ ? 0 : n_ * k_;
    params_.allocate(c, n_ * k_ + bias, shared_ ? bias : n_ * k_ + bias, o.dtype, opt);
    x_ = tensor(m_ * k_);
    y_ = tensor(m_ * n_);
    dy_ = tensor(m_ * n_, 0.01f);
    dx_ = tensor(m_ * k_);
    if (o.attrs.bias) bias_scratch_ = scratch_f32(n_);
    if (shared_) note_ = "weight shared with " + o.attrs.shares_weights_with + ": gradient accumulated there";
  }

 protected:
  void forward() override {
    gemm(ctx(), dtype(),
         {.trans_a = false, .trans_b = true, .m = m_, .n = n_, .k = k_, .lda = k_, .ldb = k_, .ldc = n_}, x_,
         params_.weights(w_offset_), y_);
    if (op().attrs.bias) add_bias(y_, params_.weights(b_offset_), m_, n_, elem(), stream());
  }
  void backward_data() override {
    gemm(ctx(), dtype(),
         {.trans_a = false, .trans_b = false, .m = m_, .n = k_, .k = n_, .lda = n_, .ldb = k_, .ldc = k_}, dy_,
         params_.weights(w_offset_), dx_);
  }
  void backward_weight() override {
    gemm(ctx(), dtype(),
         {.trans_a = true, .trans_b = false, .m = n_, .n = k_, .k = m_, .lda = n_, .ldb = k_, .ldc = k_,
          .beta = shared_ ? 1.0f : 0.0f},
         dy_, x_, params_.grads(w_offset_));
    if (op().attrs.bias) column_sum(dy_, params_.grads(b_offset_), bias_scratch_, m_, n_, elem(), stream());
  }

 private:
  std::int64_t m_ = 0, n_ = 0, k_ = 0, w_offset_ = 0, b_offset_ = 0;
  bool shared_ = false;
  void* x_ = nullptr;
  void* y_ = nullptr;
  void* dy_ = nullptr;
  void* dx_ = nullptr;
  float* bias_scratch_ = nullptr;
};

/// Matmul (B is [K, N], shared by every row of A) and BatchedMatmul (A and B batched alike).
class MatmulKernel final : public CudaOpKernel {
 public:
  MatmulKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& a = o.input_shapes.at(0);
    const auto& b = o.input_shapes.at(1);
    k_ = a.back();
    n_ = b.back();
    if (o.kind == models::OpKind::BatchedMatmul) {
      batch_ = leading_rows(a, 2);
      m_ = a[a.size() - 2];
    } else {
      batch_ = 1;
      m_ = models::num_elements(a) / k_;
    }
    a_ = tensor(batch_ * m_ * k_);
    b_ = tensor(batch_ * k_ * n_);
    c_ = tensor(batch_ * m_ * n_);
    dc_ = tensor(batch_ * m_ * n_, 0.01f);
    da_ = tensor(batch_ * m_ * k_);
    db_ = tensor(batch_ * k_ * n_);
    both_gradients_ = o.macs_bwd_data >= 2 * o.macs_fwd;
    if (!both_gradients_) note_ = "bwd_data computes dA only (one operand is the data batch)";
  }

 protected:
  void forward() override {
    gemm(ctx(), dtype(),
         batched({.trans_a = false, .trans_b = false, .m = m_, .n = n_, .k = k_, .lda = k_, .ldb = n_, .ldc = n_},
                 m_ * k_, k_ * n_, m_ * n_),
         a_, b_, c_);
  }
  void backward_data() override {
    gemm(ctx(), dtype(),
         batched({.trans_a = false, .trans_b = true, .m = m_, .n = k_, .k = n_, .lda = n_, .ldb = n_, .ldc = k_},
                 m_ * n_, k_ * n_, m_ * k_),
         dc_, b_, da_);
    if (both_gradients_) {
      gemm(ctx(), dtype(),
           batched({.trans_a = true, .trans_b = false, .m = k_, .n = n_, .k = m_, .lda = k_, .ldb = n_, .ldc = n_},
                   m_ * k_, m_ * n_, k_ * n_),
           a_, dc_, db_);
    }
  }

 private:
  RowMajorGemm batched(RowMajorGemm g, std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c) const {
    g.batch = batch_;
    g.stride_a = stride_a;
    g.stride_b = stride_b;
    g.stride_c = stride_c;
    return g;
  }

  std::int64_t batch_ = 1, m_ = 0, n_ = 0, k_ = 0;
  bool both_gradients_ = true;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
  void* dc_ = nullptr;
  void* da_ = nullptr;
  void* db_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_linear_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<LinearKernel>(ctx, op, opt);
}

std::unique_ptr<OpKernel> make_matmul_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<MatmulKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
