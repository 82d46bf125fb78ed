// Ops made of our own elementwise/row kernels: activations, add, mul, dropout, concat, layer norm.
//
//   activations  fwd y = f(x); bwd_data dx = dy f'(.) from x (ReLU, GELU) or y (tanh, sigmoid)
//   add          fwd y = x0 + x1 (+ ...); no backward kernel (the gradient passes through)
//   mul          fwd y = a * b (* ...); bwd_data da = dy b, db = dy a per factor pair
//   dropout      fwd mask from a counter-based RNG, y = x * mask / (1 - p); bwd dx = dy * mask / (1 - p)
//   concat       fwd one strided copy per input; bwd_data the split back (one copy per input)
//   layer norm   fwd per-row mean/rstd; bwd_data dx and dgamma/dbeta (charged together, like batch norm)
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"
#include "parasim/common/error.hpp"

namespace parasim::kernels::cuda {
namespace {

std::int64_t elements_of(const models::Op& op) { return models::num_elements(op.input_shapes.at(0)); }

class ActivationKernel final : public CudaOpKernel {
 public:
  ActivationKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    switch (o.kind) {
      case models::OpKind::Relu: act_ = Activation::Relu; break;
      case models::OpKind::Gelu: act_ = Activation::Gelu; break;
      case models::OpKind::Tanh: act_ = Activation::Tanh; break;
      case models::OpKind::Sigmoid: act_ = Activation::Sigmoid; break;
      default: throw RuntimeError(o.name + ": not an activation");
    }
    n_ = elements_of(o);
    x_ = tensor(n_);
    y_ = tensor(n_);
    dy_ = tensor(n_);
    dx_ = tensor(n_);
  }

 protected:
  void forward() override { activation_forward(act_, x_, y_, n_, elem(), stream()); }
  void backward_data() override { activation_backward(act_, x_, y_, dy_, dx_, n_, elem(), stream()); }

 private:
  Activation act_ = Activation::Relu;
  std::int64_t n_ = 0;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
};

class AddKernel final : public CudaOpKernel {
 public:
  AddKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    n_ = elements_of(o);
    for (std::size_t i = 0; i < o.input_shapes.size(); ++i) inputs_.push_back(tensor(n_));
    y_ = tensor(n_);
  }

 protected:
  void forward() override {
    add(inputs_.at(0), inputs_.size() > 1 ? inputs_[1] : inputs_[0], y_, n_, elem(), stream());
    for (std::size_t i = 2; i < inputs_.size(); ++i) add(y_, inputs_[i], y_, n_, elem(), stream());
  }

 private:
  std::int64_t n_ = 0;
  std::vector<void*> inputs_;
  void* y_ = nullptr;
};

class MulKernel final : public CudaOpKernel {
 public:
  MulKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    n_ = elements_of(o);
    for (std::size_t i = 0; i < o.input_shapes.size(); ++i) {
      inputs_.push_back(tensor(n_));
      grads_.push_back(tensor(n_));
    }
    y_ = tensor(n_);
    dy_ = tensor(n_);
  }

 protected:
  void forward() override {
    mul_forward(inputs_.at(0), inputs_.size() > 1 ? inputs_[1] : inputs_[0], y_, n_, 1, elem(), stream());
    for (std::size_t i = 2; i < inputs_.size(); ++i) mul_forward(y_, inputs_[i], y_, n_, 1, elem(), stream());
  }
  void backward_data() override {
    // One pass per factor pair; for two factors (gates) exactly da = dy b, db = dy a.
    for (std::size_t i = 1; i < inputs_.size(); ++i)
      mul_backward(inputs_[i - 1], inputs_[i], dy_, grads_[i - 1], grads_[i], n_, 1, elem(), stream());
  }

 private:
  std::int64_t n_ = 0;
  std::vector<void*> inputs_, grads_;
  void *y_ = nullptr, *dy_ = nullptr;
};

class DropoutKernel final : public CudaOpKernel {
 public:
  DropoutKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    n_ = elements_of(o);
    p_ = static_cast<float>(o.attrs.p);
    x_ = tensor(n_);
    y_ = tensor(n_);
    dy_ = tensor(n_);
    dx_ = tensor(n_);
    mask_ = bytes(n_);
  }

 protected:
  void forward() override { dropout_forward(x_, y_, mask_, n_, p_, ++calls_, elem(), stream()); }
  void backward_data() override { dropout_backward(dy_, mask_, dx_, n_, p_, elem(), stream()); }

 private:
  std::int64_t n_ = 0;
  float p_ = 0.0f;
  std::uint64_t calls_ = 0;  // a new mask every forward, as in training
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
  std::uint8_t* mask_ = nullptr;
};

class ConcatKernel final : public CudaOpKernel {
 public:
  ConcatKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& out = o.output_shape;
    const auto axis = static_cast<std::size_t>(o.attrs.axis < 0 ? o.attrs.axis + static_cast<std::int64_t>(out.size())
                                                                 : o.attrs.axis);
    outer_ = 1;
    for (std::size_t i = 0; i < axis; ++i) outer_ *= out.at(i);
    std::int64_t inner = 1;
    for (std::size_t i = axis + 1; i < out.size(); ++i) inner *= out[i];
    out_row_ = out.at(axis) * inner;
    std::int64_t at = 0;
    for (const auto& s : o.input_shapes) {
      Part part;
      part.chunk = s.at(axis) * inner;
      part.offset = at;
      part.x = tensor(outer_ * part.chunk);
      part.dx = tensor(outer_ * part.chunk);
      parts_.push_back(part);
      at += part.chunk;
    }
    y_ = tensor(outer_ * out_row_);
    dy_ = tensor(outer_ * out_row_);
  }

 protected:
  void forward() override {
    for (const Part& p : parts_)
      strided_copy(p.x, p.chunk, 0, y_, out_row_, p.offset, outer_, p.chunk, elem(), stream());
  }
  void backward_data() override {
    for (const Part& p : parts_)
      strided_copy(dy_, out_row_, p.offset, p.dx, p.chunk, 0, outer_, p.chunk, elem(), stream());
  }

 private:
  struct Part {
    std::int64_t chunk = 0, offset = 0;
    void* x = nullptr;
    void* dx = nullptr;
  };
  std::int64_t outer_ = 1, out_row_ = 0;
  std::vector<Part> parts_;
  void *y_ = nullptr, *dy_ = nullptr;
};

class LayerNormKernel final : public CudaOpKernel {
 public:
  LayerNormKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    cols_ = o.input_shapes.at(0).back();
    rows_ = elements_of(o) / cols_;
    params_.allocate(c, 2 * cols_, 2 * cols_, o.dtype, opt);  // [gamma | beta]
    x_ = tensor(rows_ * cols_);
    y_ = tensor(rows_ * cols_);
    dy_ = tensor(rows_ * cols_, 0.01f);
    dx_ = tensor(rows_ * cols_);
    mean_ = scratch_f32(rows_);
    rstd_ = scratch_f32(rows_);
    reduce_scratch_ = scratch_f32(2 * cols_);
    note_ = "own kernels; dgamma/dbeta computed with dx and charged to bwd_data";
  }

 protected:
  void forward() override {
    layernorm_forward(x_, params_.weights(0), params_.weights(cols_), y_, mean_, rstd_, rows_, cols_, elem(), stream());
  }
  void backward_data() override {
    layernorm_backward_data(x_, params_.weights(0), dy_, mean_, rstd_, dx_, rows_, cols_, elem(), stream());
    layernorm_backward_weight(x_, dy_, mean_, rstd_, params_.grads(0), params_.grads(cols_), reduce_scratch_, rows_,
                              cols_, elem(), stream());
  }

 private:
  std::int64_t rows_ = 0, cols_ = 0;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
  float *mean_ = nullptr, *rstd_ = nullptr, *reduce_scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_activation_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<ActivationKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_add_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<AddKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_mul_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<MulKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_dropout_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<DropoutKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_concat_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<ConcatKernel>(ctx, op, opt);
}
std::unique_ptr<OpKernel> make_layernorm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<LayerNormKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
