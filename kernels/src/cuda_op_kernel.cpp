// Phase dispatch, buffer allocation and the optimizer step shared by all CUDA op kernels.
#include "cuda_op_kernel.hpp"

#include <cmath>

#include "parasim/common/error.hpp"

namespace parasim::kernels::cuda {

namespace {
// Hyper-parameters only shape the arithmetic, not the cost; these are the common defaults.
constexpr float kLearningRate = 1e-3f;
constexpr float kMomentum = 0.9f;
constexpr float kAdamBeta1 = 0.9f;
constexpr float kAdamBeta2 = 0.999f;
constexpr float kAdamEps = 1e-8f;

int state_slots(Optimizer opt) {
  switch (opt) {
    case Optimizer::Sgd: return 0;
    case Optimizer::Momentum: return 1;
    case Optimizer::Adam: return 2;
  }
  return 0;
}
}  // namespace

// ---------------------------------------------------------------- ParameterSet

void ParameterSet::allocate(BackendContext& ctx, std::int64_t total, std::int64_t owned, models::DType dtype,
                            Optimizer opt) {
  total_ = total;
  owned_ = std::min(owned, total);
  dtype_ = dtype;
  optimizer_ = opt;
  const Bytes elem_bytes = models::dtype_size(dtype);
  weights_ = DeviceBuffer(ctx, total * elem_bytes);
  grads_ = DeviceBuffer(ctx, total * elem_bytes);
  state_ = DeviceBuffer(ctx, owned_ * state_slots(opt) * static_cast<Bytes>(sizeof(float)));
  // Small weights (Kaiming-like magnitude) and gradients; optimizer state starts at zero.
  fill_uniform(weights_.get(), total, to_elem(dtype), 0.05f, ctx.next_seed(), ctx.stream());
  fill_uniform(grads_.get(), total, to_elem(dtype), 0.01f, ctx.next_seed(), ctx.stream());
  fill_zero_f32(state_.as<float>(), owned_ * state_slots(opt), ctx.stream());
}

void* ParameterSet::weights(std::int64_t offset) const {
  return static_cast<char*>(weights_.get()) + offset * models::dtype_size(dtype_);
}

void* ParameterSet::grads(std::int64_t offset) const {
  return static_cast<char*>(grads_.get()) + offset * models::dtype_size(dtype_);
}

void ParameterSet::update(cudaStream_t stream) {
  if (owned_ <= 0) return;
  const Elem e = to_elem(dtype_);
  switch (optimizer_) {
    case Optimizer::Sgd: sgd_update(weights_.get(), grads_.get(), owned_, kLearningRate, e, stream); break;
    case Optimizer::Momentum:
      momentum_update(weights_.get(), grads_.get(), state_.as<float>(), owned_, kLearningRate, kMomentum, e, stream);
      break;
    case Optimizer::Adam: {
      ++step_;
      const float bc1 = 1.0f - std::pow(kAdamBeta1, static_cast<float>(step_));
      const float bc2 = 1.0f - std::pow(kAdamBeta2, static_cast<float>(step_));
      adam_update(weights_.get(), grads_.get(), state_.as<float>(), state_.as<float>() + owned_, owned_,
                  kLearningRate, kAdamBeta1, kAdamBeta2, kAdamEps, bc1, bc2, e, stream);
      break;
    }
  }
}

// ---------------------------------------------------------------- CudaOpKernel

CudaOpKernel::CudaOpKernel(BackendContext& ctx, const models::Op& op, Optimizer opt)
    : ctx_(ctx), op_(op), optimizer_(opt) {}

void CudaOpKernel::run(Phase phase) {
  // The phase rule is shared with the roofline and CPU backends so all three agree on which
  // phases exist (no data gradient for a first layer, batch norm's one backward call, ...).
  if (!op_has_phase(op_, phase)) return;
  ctx_.make_current();
  switch (phase) {
    case Phase::Forward: forward(); break;
    case Phase::BackwardData: backward_data(); break;
    case Phase::BackwardWeight: backward_weight(); break;
    case Phase::Update: update(); break;
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: break;  // op_has_phase threw
  }
}

void* CudaOpKernel::tensor(std::int64_t elements, float scale) { return tensor_of(op_.dtype, elements, scale); }

void* CudaOpKernel::tensor_of(models::DType dtype, std::int64_t elements, float scale) {
  if (elements < 0) throw RuntimeError("negative tensor size for " + op_.name);
  buffers_.emplace_back(ctx_, elements * models::dtype_size(dtype));
  fill_uniform(buffers_.back().get(), elements, to_elem(dtype), scale, ctx_.next_seed(), ctx_.stream());
  return buffers_.back().get();
}

float* CudaOpKernel::scratch_f32(std::int64_t elements) {
  buffers_.emplace_back(ctx_, elements * static_cast<Bytes>(sizeof(float)));
  fill_zero_f32(buffers_.back().as<float>(), elements, ctx_.stream());
  return buffers_.back().as<float>();
}

std::int32_t* CudaOpKernel::indices(std::int64_t count, std::int64_t modulo) {
  if (modulo > INT32_MAX) throw RuntimeError(op_.name + ": index range " + std::to_string(modulo) + " exceeds int32");
  buffers_.emplace_back(ctx_, count * static_cast<Bytes>(sizeof(std::int32_t)));
  fill_indices(buffers_.back().as<std::int32_t>(), count, static_cast<std::int32_t>(modulo), ctx_.next_seed(),
               ctx_.stream());
  return buffers_.back().as<std::int32_t>();
}

std::uint8_t* CudaOpKernel::bytes(std::int64_t count) {
  buffers_.emplace_back(ctx_, count);
  return buffers_.back().as<std::uint8_t>();
}

namespace {
class NoopKernel final : public CudaOpKernel {
 public:
  using CudaOpKernel::CudaOpKernel;

 protected:
  void forward() override {}
};
}  // namespace

std::unique_ptr<OpKernel> make_noop_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<NoopKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
