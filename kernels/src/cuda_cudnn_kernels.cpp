// Ops run by cuDNN's legacy API besides convolution: pooling (max, average, adaptive average),
// batch normalization (training mode) and softmax.
//
// Batch norm's one backward call (cudnnBatchNormalizationBackward) yields dx, dgamma and dbeta
// together and is charged to bwd_data (op_has_phase); its parameters and statistics are fp32 for
// every data type, as cuDNN requires. Adaptive average pooling runs as the fixed pooling
// PyTorch's adaptive windows reduce to when the input divides evenly (window = stride =
// input / output) and as floor-stride windows otherwise.
#include <algorithm>
#include <climits>

#include "cuda_cudnn_descriptors.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"

namespace parasim::kernels::cuda {

// ---------------------------------------------------------------- softmax over rows

namespace {

template <class Call>
void for_row_chunks(std::int64_t rows, std::int64_t cols, Call call) {
  const std::int64_t max_rows = std::max<std::int64_t>(1, INT_MAX / std::max<std::int64_t>(cols, 1));
  for (std::int64_t first = 0; first < rows; first += max_rows) call(first, std::min(max_rows, rows - first));
}

}  // namespace

void softmax_rows_forward(const BackendContext& ctx, models::DType dtype, const void* x, void* y, std::int64_t rows,
                          std::int64_t cols) {
  for_row_chunks(rows, cols, [&](std::int64_t first, std::int64_t count) {
    TensorDescriptor d;
    set_nchw(d, dtype, {count, cols, 1, 1}, "softmax");
    PARASIM_CUDNN_CHECK(cudnnSoftmaxForward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne,
                                            d.get(), offset(x, first * cols, dtype), &kZero, d.get(),
                                            offset(y, first * cols, dtype)));
  });
}

void softmax_rows_backward(const BackendContext& ctx, models::DType dtype, const void* y, const void* dy, void* dx,
                           std::int64_t rows, std::int64_t cols) {
  for_row_chunks(rows, cols, [&](std::int64_t first, std::int64_t count) {
    TensorDescriptor d;
    set_nchw(d, dtype, {count, cols, 1, 1}, "softmax");
    PARASIM_CUDNN_CHECK(cudnnSoftmaxBackward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne,
                                             d.get(), offset(y, first * cols, dtype), d.get(),
                                             offset(dy, first * cols, dtype), &kZero, d.get(),
                                             offset(dx, first * cols, dtype)));
  });
}

namespace {

// ---------------------------------------------------------------- pooling

class PoolingKernel final : public CudaOpKernel {
 public:
  PoolingKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    const auto& a = o.attrs;
    int window_h = 0, window_w = 0, pad_h = 0, pad_w = 0, stride_h = 0, stride_w = 0;
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    if (o.kind == models::OpKind::AdaptiveAvgPool2d) {
      const std::int64_t out_h = std::max<std::int64_t>(a.kernel_h, 1), out_w = std::max<std::int64_t>(a.kernel_w, 1);
      stride_h = cudnn_dim(x[2] / out_h, o.name);
      stride_w = cudnn_dim(x[3] / out_w, o.name);
      window_h = cudnn_dim(x[2] - (out_h - 1) * stride_h, o.name);
      window_w = cudnn_dim(x[3] - (out_w - 1) * stride_w, o.name);
      mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    } else {
      window_h = cudnn_dim(a.kernel_h, o.name);
      window_w = cudnn_dim(a.kernel_w, o.name);
      stride_h = cudnn_dim(a.stride_h, o.name);
      stride_w = cudnn_dim(a.stride_w, o.name);
      pad_h = static_cast<int>(a.pad_h);
      pad_w = static_cast<int>(a.pad_w);
      // PyTorch's AvgPool2d counts padding by default (count_include_pad=True).
      mode = o.kind == models::OpKind::MaxPool2d ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    }
    PARASIM_CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool_.get(), mode, CUDNN_NOT_PROPAGATE_NAN, window_h, window_w,
                                                    pad_h, pad_w, stride_h, stride_w));
    set_nchw(x_desc_, o.dtype, {x[0], x[1], x[2], x[3]}, o.name);
    int dims[4] = {0, 0, 0, 0};
    PARASIM_CUDNN_CHECK(
        cudnnGetPooling2dForwardOutputDim(pool_.get(), x_desc_.get(), &dims[0], &dims[1], &dims[2], &dims[3]));
    set_nchw(y_desc_, o.dtype, {dims[0], dims[1], dims[2], dims[3]}, o.name);
    if (o.output_shape.size() == 4 && (o.output_shape[2] != dims[2] || o.output_shape[3] != dims[3])) {
      // ceil_mode adds a last partial window that cuDNN's floor arithmetic has no room for.
      note_ = "cuDNN output " + std::to_string(dims[2]) + "x" + std::to_string(dims[3]) + " (model: " +
              std::to_string(o.output_shape[2]) + "x" + std::to_string(o.output_shape[3]) + ", ceil_mode)";
    }
    const std::int64_t x_elems = x[0] * x[1] * x[2] * x[3];
    const std::int64_t y_elems = static_cast<std::int64_t>(dims[0]) * dims[1] * dims[2] * dims[3];
    x_ = tensor(x_elems);
    y_ = tensor(y_elems);
    dy_ = tensor(y_elems);
    dx_ = tensor(x_elems);
  }

 protected:
  void forward() override {
    PARASIM_CUDNN_CHECK(
        cudnnPoolingForward(ctx().cudnn(), pool_.get(), &kOne, x_desc_.get(), x_, &kZero, y_desc_.get(), y_));
  }
  void backward_data() override {
    PARASIM_CUDNN_CHECK(cudnnPoolingBackward(ctx().cudnn(), pool_.get(), &kOne, y_desc_.get(), y_, y_desc_.get(), dy_,
                                             x_desc_.get(), x_, &kZero, x_desc_.get(), dx_));
  }

 private:
  PoolingDescriptor pool_;
  TensorDescriptor x_desc_, y_desc_;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
};

// ---------------------------------------------------------------- batch norm

class BatchNormKernel final : public CudaOpKernel {
 public:
  BatchNormKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    // [N, C, ...] -> [N, C, prod(rest), 1]: spatial mode normalises each channel over N and space.
    std::int64_t spatial = 1;
    for (std::size_t i = 2; i < x.size(); ++i) spatial *= x[i];
    channels_ = x.at(1);
    set_nchw(x_desc_, o.dtype, {x[0], channels_, spatial, 1}, o.name);
    PARASIM_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(bn_desc_.get(), x_desc_.get(), CUDNN_BATCHNORM_SPATIAL));
    params_.allocate(c, 2 * channels_, 2 * channels_, models::DType::F32, opt);  // [gamma | beta], fp32
    running_mean_ = tensor_of(models::DType::F32, channels_, 0.1f);
    running_var_ = tensor_of(models::DType::F32, channels_, 0.1f);
    saved_mean_ = tensor_of(models::DType::F32, channels_);
    saved_inv_var_ = tensor_of(models::DType::F32, channels_);
    const std::int64_t n = x[0] * channels_ * spatial;
    x_ = tensor(n);
    y_ = tensor(n);
    dy_ = tensor(n, 0.01f);
    dx_ = tensor(n);
    note_ = "cuDNN spatial batch norm; backward (dx, dgamma, dbeta) in one call, charged to bwd_data";
  }

 protected:
  void forward() override {
    PARASIM_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        ctx().cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_desc_.get(), x_, x_desc_.get(), y_, bn_desc_.get(),
        params_.weights(0), params_.weights(channels_), kMomentum, running_mean_, running_var_, kEpsilon, saved_mean_,
        saved_inv_var_));
  }
  void backward_data() override {
    PARASIM_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        ctx().cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, x_desc_.get(), x_, x_desc_.get(), dy_,
        x_desc_.get(), dx_, bn_desc_.get(), params_.weights(0), params_.grads(0), params_.grads(channels_), kEpsilon,
        saved_mean_, saved_inv_var_));
  }

 private:
  static constexpr double kMomentum = 0.1;  // PyTorch's running-statistics momentum
  static constexpr double kEpsilon = 1e-5;  // >= CUDNN_BN_MIN_EPSILON
  std::int64_t channels_ = 0;
  TensorDescriptor x_desc_, bn_desc_;
  void *running_mean_ = nullptr, *running_var_ = nullptr, *saved_mean_ = nullptr, *saved_inv_var_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
};

// ---------------------------------------------------------------- softmax op

class SoftmaxKernel final : public CudaOpKernel {
 public:
  SoftmaxKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    cols_ = x.back();
    rows_ = models::num_elements(x) / cols_;
    x_ = tensor(rows_ * cols_);
    y_ = tensor(rows_ * cols_);
    dy_ = tensor(rows_ * cols_);
    dx_ = tensor(rows_ * cols_);
  }

 protected:
  void forward() override { softmax_rows_forward(ctx(), dtype(), x_, y_, rows_, cols_); }
  void backward_data() override { softmax_rows_backward(ctx(), dtype(), y_, dy_, dx_, rows_, cols_); }

 private:
  std::int64_t rows_ = 0, cols_ = 0;
  void *x_ = nullptr, *y_ = nullptr, *dy_ = nullptr, *dx_ = nullptr;
};

}  // namespace

std::unique_ptr<OpKernel> make_pooling_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<PoolingKernel>(ctx, op, opt);
}

std::unique_ptr<OpKernel> make_batchnorm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<BatchNormKernel>(ctx, op, opt);
}

std::unique_ptr<OpKernel> make_softmax_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<SoftmaxKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
