// Base of every CUDA op kernel: phase dispatch (only the phases op_has_phase() says exist),
// buffers allocated and filled at prepare time, and the op's parameters with gradients and
// optimizer state. Private to the backend.
//
// Example (a kernel with one input, one output and no parameters):
//   class ReluKernel final : public CudaOpKernel {
//    public:
//     ReluKernel(BackendContext& ctx, const models::Op& op, Optimizer opt) : CudaOpKernel(ctx, op, opt) {
//       x_ = tensor(n_); y_ = tensor(n_); dy_ = tensor(n_); dx_ = tensor(n_);
//     }
//    protected:
//     void forward() override { activation_forward(Activation::Relu, x_, y_, n_, elem(), stream()); }
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend_context.hpp"
#include "parasim/kernels/kernel_backend.hpp"

namespace parasim::kernels::cuda {

/// Weights, gradients and fp32 optimizer state of one op, in one arena each. The first
/// `owned` elements are the op's own parameters (updated by the optimizer); elements after them
/// are a weight the op shares with another op (a tied LM head): read and differentiated, never
/// updated here.
class ParameterSet {
 public:
  void allocate(BackendContext& ctx, std::int64_t total, std::int64_t owned, models::DType dtype, Optimizer opt);
  void* weights(std::int64_t offset = 0) const;
  void* grads(std::int64_t offset = 0) const;
  std::int64_t total() const { return total_; }
  std::int64_t owned() const { return owned_; }
  /// One optimizer step over the owned parameters.
  void update(cudaStream_t stream);

 private:
  DeviceBuffer weights_, grads_, state_;
  std::int64_t total_ = 0;
  std::int64_t owned_ = 0;
  models::DType dtype_ = models::DType::F32;
  Optimizer optimizer_ = Optimizer::Sgd;
  int step_ = 0;
};

class CudaOpKernel : public OpKernel {
 public:
  CudaOpKernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
  void run(Phase phase) final;
  std::string note() const override { return note_; }

 protected:
  virtual void forward() = 0;
  virtual void backward_data() {}
  virtual void backward_weight() {}
  virtual void update() { params_.update(stream()); }

  BackendContext& ctx() const { return ctx_; }
  const models::Op& op() const { return op_; }
  cudaStream_t stream() const { return ctx_.stream(); }
  models::DType dtype() const { return op_.dtype; }
  Elem elem() const { return to_elem(op_.dtype); }
  Optimizer optimizer() const { return optimizer_; }

  /// A device tensor of `elements` in the op's dtype, filled with uniform values in [-scale, scale].
  void* tensor(std::int64_t elements, float scale = 1.0f);
  /// Same in an explicit dtype (batch norm keeps fp32 statistics for fp16 data).
  void* tensor_of(models::DType dtype, std::int64_t elements, float scale = 1.0f);
  float* scratch_f32(std::int64_t elements);
  /// Indices uniform in [0, modulo) (token ids, labels, sampled classes).
  std::int32_t* indices(std::int64_t count, std::int64_t modulo);
  std::uint8_t* bytes(std::int64_t count);

  ParameterSet params_;
  std::string note_;

 private:
  BackendContext& ctx_;
  models::Op op_;
  Optimizer optimizer_;
  std::vector<DeviceBuffer> buffers_;
};

/// A kernel that does nothing (Input, Reshape: no work in any phase).
std::unique_ptr<OpKernel> make_noop_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);

}  // namespace parasim::kernels::cuda
