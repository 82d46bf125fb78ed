// One LSTM layer (PyTorch nn.LSTM semantics, optional projection) as cuBLAS GEMMs plus our cell
// kernel, the way cuDNN's RNN organises the work:
//
//   forward   G = X W_ih^T for all time steps at once (one big GEMM: it does not depend on the
//             recurrence), then per time step t: G_t += r_{t-1} W_hh^T (the 4-gate recurrent GEMM),
//             the cell kernel (gate activations, c_t, h_t), and with a projection r_t = h_t W_hr^T.
//   bwd_data  per time step, backwards: dr_t += dG_{t+1} W_hh, dh_t = dr_t W_hr (projection),
//             the cell backward kernel (dG_t, dc_{t-1}); then dX = dG W_ih (one big GEMM).
//   bwd_weight dW_ih = dG^T X, dW_hh = dG^T R_prev, dW_hr = dR^T H (one GEMM each over all steps),
//             bias = column sums of dG. Without a data-gradient phase (first layer on the data
//             batch) the recurrence above runs here, since the weight gradients need dG.
//
// Buffers are time-major ([T, B, features], cuDNN's RNN layout) so a time step is a contiguous
// [B, features] matrix and the all-steps GEMMs need no transposes. The bias gradient is computed
// once for b_ih; b_hh's equals it (PyTorch keeps both, the update covers both).
#include "cuda_gemm.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"

namespace parasim::kernels::cuda {
namespace {

class LstmKernel final : public CudaOpKernel {
 public:
  LstmKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    b_ = x.at(0);
    t_ = x.at(1);
    in_ = x.at(2);
    h_ = o.attrs.hidden;
    p_ = o.attrs.proj;
    r_ = p_ > 0 ? p_ : h_;
    const std::int64_t g = 4 * h_;
    w_ih_ = 0;
    w_hh_ = w_ih_ + g * in_;
    bias_ = w_hh_ + g * r_;
    w_hr_ = bias_ + (o.attrs.bias ? 2 * g : 0);
    const std::int64_t total = w_hr_ + p_ * h_;
    params_.allocate(c, total, total, o.dtype, opt);
    if (!o.attrs.bias) zero_bias_ = tensor(g);  // the cell kernel always adds a bias

    x_ = tensor(t_ * b_ * in_);
    gates_ = tensor(t_ * b_ * g, 0.1f);
    cells_ = tensor((t_ + 1) * b_ * h_, 0.1f);
    outputs_ = tensor((t_ + 1) * b_ * r_, 0.1f);  // slot 0 is r_{-1} = 0, slot t+1 is r_t
    if (p_ > 0) hidden_ = tensor(t_ * b_ * h_, 0.1f);
    dy_ = tensor(t_ * b_ * r_, 0.01f);
    dgates_ = tensor(t_ * b_ * g);
    dc_ = tensor(b_ * h_);
    if (p_ > 0) dh_ = tensor(b_ * h_);
    dx_ = tensor(t_ * b_ * in_);
    if (o.attrs.bias) bias_scratch_ = scratch_f32(g);
    // Initial states are zero and never written.
    fill_zero(cells_, b_ * h_, elem(), stream());
    fill_zero(outputs_, b_ * r_, elem(), stream());
    if (zero_bias_ != nullptr) fill_zero(zero_bias_, g, elem(), stream());
    note_ =
        "time-major; per step: recurrent 4-gate GEMM + cell kernel" + std::string(p_ > 0 ? " + projection GEMM" : "");
    if (o.attrs.reverse) note_ += "; reverse direction (same work)";
  }

 protected:
  void forward() override {
    const std::int64_t g = 4 * h_;
    gemm(ctx(), dtype(), gemm_shape(false, true, t_ * b_, g, in_, in_, in_, g), x_, params_.weights(w_ih_), gates_);
    for (std::int64_t t = 0; t < t_; ++t) {
      void* gates_t = offset(gates_, t * b_ * g, dtype());
      gemm(ctx(), dtype(), gemm_shape(false, true, b_, g, r_, r_, r_, g, 1.0f, 1.0f),
           offset(outputs_, t * b_ * r_, dtype()), params_.weights(w_hh_), gates_t);
      void* h_out = p_ > 0 ? offset(hidden_, t * b_ * h_, dtype()) : offset(outputs_, (t + 1) * b_ * r_, dtype());
      lstm_cell_forward(gates_t, bias(), offset(cells_, t * b_ * h_, dtype()),
                        offset(cells_, (t + 1) * b_ * h_, dtype()), h_out, b_, h_, elem(), stream());
      if (p_ > 0) {
        gemm(ctx(), dtype(), gemm_shape(false, true, b_, p_, h_, h_, h_, p_), h_out, params_.weights(w_hr_),
             offset(outputs_, (t + 1) * b_ * r_, dtype()));
      }
    }
  }

  void backward_data() override {
    backpropagate_through_time();
    const std::int64_t g = 4 * h_;
    gemm(ctx(), dtype(), gemm_shape(false, false, t_ * b_, in_, g, g, in_, in_), dgates_, params_.weights(w_ih_), dx_);
  }

  void backward_weight() override {
    if (!op_has_phase(op(), Phase::BackwardData)) backpropagate_through_time();
    const std::int64_t g = 4 * h_;
    const std::int64_t rows = t_ * b_;
    gemm(ctx(), dtype(), gemm_shape(true, false, g, in_, rows, g, in_, in_), dgates_, x_, params_.grads(w_ih_));
    gemm(ctx(), dtype(), gemm_shape(true, false, g, r_, rows, g, r_, r_), dgates_, outputs_, params_.grads(w_hh_));
    if (op().attrs.bias) column_sum(dgates_, params_.grads(bias_), bias_scratch_, rows, g, elem(), stream());
    if (p_ > 0)
      gemm(ctx(), dtype(), gemm_shape(true, false, p_, h_, rows, p_, h_, h_), dy_, hidden_, params_.grads(w_hr_));
  }

 private:
  const void* bias() const { return op().attrs.bias ? params_.weights(bias_) : zero_bias_; }

  void backpropagate_through_time() {
    const std::int64_t g = 4 * h_;
    fill_zero(dc_, b_ * h_, elem(), stream());
    for (std::int64_t t = t_ - 1; t >= 0; --t) {
      void* dy_t = offset(dy_, t * b_ * r_, dtype());
      if (t + 1 < t_) {
        // The recurrent gradient joins the incoming one in place: dy then holds dr_t for dW_hr.
        gemm(ctx(), dtype(), gemm_shape(false, false, b_, r_, g, g, r_, r_, 1.0f, 1.0f),
             offset(dgates_, (t + 1) * b_ * g, dtype()), params_.weights(w_hh_), dy_t);
      }
      void* dh_t = dy_t;
      if (p_ > 0) {
        gemm(ctx(), dtype(), gemm_shape(false, false, b_, h_, p_, p_, h_, h_), dy_t, params_.weights(w_hr_), dh_);
        dh_t = dh_;
      }
      lstm_cell_backward(offset(gates_, t * b_ * g, dtype()), offset(cells_, t * b_ * h_, dtype()),
                         offset(cells_, (t + 1) * b_ * h_, dtype()), dh_t, dc_, offset(dgates_, t * b_ * g, dtype()),
                         b_, h_, elem(), stream());
    }
  }

  std::int64_t b_ = 0, t_ = 0, in_ = 0, h_ = 0, p_ = 0, r_ = 0;
  std::int64_t w_ih_ = 0, w_hh_ = 0, bias_ = 0, w_hr_ = 0;  // offsets into the parameter arena
  void *x_ = nullptr, *gates_ = nullptr, *cells_ = nullptr, *outputs_ = nullptr, *hidden_ = nullptr;
  void *dy_ = nullptr, *dgates_ = nullptr, *dc_ = nullptr, *dh_ = nullptr, *dx_ = nullptr, *zero_bias_ = nullptr;
  float* bias_scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_lstm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<LstmKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
