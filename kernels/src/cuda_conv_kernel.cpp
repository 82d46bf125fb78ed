// Conv2d on cuDNN's legacy convolution API: forward, backward data, backward filter (+ bias).
// Algorithms are chosen once at prepare time, either by timing every candidate on the real
// buffers (cudnnFind*AlgorithmEx, like torch.backends.cudnn.benchmark = True) or by cuDNN's
// heuristics (cudnnGet*Algorithm_v7); the choice is reported in note().
// Layout NCHW, the framework default; fp16/bf16 use tensor cores, fp32 uses FMA unless TF32 is allowed.
#include <algorithm>
#include <vector>

#include "cuda_cudnn_descriptors.hpp"
#include "cuda_op_kernel.hpp"
#include "cuda_op_kernels.hpp"

namespace parasim::kernels::cuda {
namespace {

std::string algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "ALGO_" + std::to_string(static_cast<int>(a));
  }
}

std::string algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "ALGO_" + std::to_string(static_cast<int>(a));
  }
}

std::string algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "ALGO_" + std::to_string(static_cast<int>(a));
  }
}

/// The largest workspace any usable heuristic candidate asks for, within the limit.
template <class Perf>
Bytes largest_candidate_workspace(const std::vector<Perf>& perf, int count, Bytes limit) {
  Bytes most = 0;
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && static_cast<Bytes>(perf[i].memory) <= limit)
      most = std::max(most, static_cast<Bytes>(perf[i].memory));
  return most;
}

/// First successful result that fits the workspace (Find results are sorted fastest first,
/// heuristic results best first).
template <class Perf>
const Perf& pick(const std::vector<Perf>& perf, int count, Bytes workspace, const std::string& what) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && static_cast<Bytes>(perf[i].memory) <= workspace) return perf[i];
  throw RuntimeError(what + ": cuDNN offers no algorithm that fits a " + format_bytes(workspace) + " workspace");
}

class Conv2dKernel final : public CudaOpKernel {
 public:
  Conv2dKernel(BackendContext& c, const models::Op& o, Optimizer opt) : CudaOpKernel(c, o, opt) {
    const auto& x = o.input_shapes.at(0);
    const auto& a = o.attrs;
    n_ = x.at(0);
    c_in_ = x.at(1);
    k_ = a.out_features;
    const std::int64_t cpg = c_in_ / a.groups;
    weight_elements_ = k_ * cpg * a.kernel_h * a.kernel_w;
    const std::int64_t bias_elements = a.bias ? k_ : 0;
    params_.allocate(c, weight_elements_ + bias_elements, weight_elements_ + bias_elements, o.dtype, opt);

    const cudnnDataType_t type = cudnn_data_type(o.dtype);
    set_nchw(x_desc_, type, {x[0], x[1], x[2], x[3]}, o.name);
    PARASIM_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc_.get(), type, CUDNN_TENSOR_NCHW, cudnn_dim(k_, o.name),
                                                   cudnn_dim(cpg, o.name), cudnn_dim(a.kernel_h, o.name),
                                                   cudnn_dim(a.kernel_w, o.name)));
    for (const ConvolutionDescriptor* d : {&conv_fwd_, &conv_bwd_data_, &conv_bwd_filter_}) {
      // Accumulate in fp32 for every dtype (fp16 "pseudo-half", the framework default).
      PARASIM_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
          d->get(), static_cast<int>(a.pad_h), static_cast<int>(a.pad_w), static_cast<int>(a.stride_h),
          static_cast<int>(a.stride_w), static_cast<int>(a.dilation_h), static_cast<int>(a.dilation_w),
          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      PARASIM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d->get(), static_cast<int>(a.groups)));
      PARASIM_CUDNN_CHECK(cudnnSetConvolutionMathType(d->get(), math_type()));
    }
    int dims[4] = {0, 0, 0, 0};
    PARASIM_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_fwd_.get(), x_desc_.get(), w_desc_.get(), &dims[0],
                                                              &dims[1], &dims[2], &dims[3]));
    const Dims4 y{dims[0], dims[1], dims[2], dims[3]};
    if (o.output_shape.size() == 4 &&
        (o.output_shape[2] != y[2] || o.output_shape[3] != y[3] || o.output_shape[1] != y[1])) {
      throw RuntimeError(o.name + ": cuDNN computes output " + std::to_string(y[1]) + "x" + std::to_string(y[2]) +
                         "x" + std::to_string(y[3]) + ", the model says " + models::to_string(o.output_shape));
    }
    set_nchw(y_desc_, type, y, o.name);
    set_nchw(bias_desc_, type, {1, k_, 1, 1}, o.name);

    const std::int64_t x_elems = x[0] * x[1] * x[2] * x[3];
    const std::int64_t y_elems = y[0] * y[1] * y[2] * y[3];
    x_ = tensor(x_elems);
    y_ = tensor(y_elems);
    dy_ = tensor(y_elems);
    dx_ = tensor(x_elems);

    choose_forward();
    if (op_has_phase(o, Phase::BackwardData)) choose_backward_data();
    choose_backward_filter();
  }

 protected:
  void forward() override {
    PARASIM_CUDNN_CHECK(cudnnConvolutionForward(ctx().cudnn(), &kOne, x_desc_.get(), x_, w_desc_.get(),
                                                params_.weights(), conv_fwd_.get(), fwd_algo_, ctx().workspace(),
                                                ws_fwd_, &kZero, y_desc_.get(), y_));
    if (op().attrs.bias) {
      PARASIM_CUDNN_CHECK(cudnnAddTensor(ctx().cudnn(), &kOne, bias_desc_.get(), params_.weights(weight_elements_),
                                         &kOne, y_desc_.get(), y_));
    }
  }
  void backward_data() override {
    PARASIM_CUDNN_CHECK(cudnnConvolutionBackwardData(ctx().cudnn(), &kOne, w_desc_.get(), params_.weights(),
                                                     y_desc_.get(), dy_, conv_bwd_data_.get(), bwd_data_algo_,
                                                     ctx().workspace(), ws_bwd_data_, &kZero, x_desc_.get(), dx_));
  }
  void backward_weight() override {
    PARASIM_CUDNN_CHECK(cudnnConvolutionBackwardFilter(ctx().cudnn(), &kOne, x_desc_.get(), x_, y_desc_.get(), dy_,
                                                       conv_bwd_filter_.get(), bwd_filter_algo_, ctx().workspace(),
                                                       ws_bwd_filter_, &kZero, w_desc_.get(), params_.grads()));
    if (op().attrs.bias) {
      PARASIM_CUDNN_CHECK(cudnnConvolutionBackwardBias(ctx().cudnn(), &kOne, y_desc_.get(), dy_, &kZero,
                                                       bias_desc_.get(), params_.grads(weight_elements_)));
    }
  }

 private:
  cudnnMathType_t math_type() const {
    if (dtype() != models::DType::F32) return CUDNN_TENSOR_OP_MATH;
    return ctx().options().allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  }

  void append_note(const std::string& s) { note_ += (note_.empty() ? "" : " ") + s; }

  void choose_forward() {
    cudnnHandle_t h = ctx().cudnn();
    int max_count = 0, count = 0;
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc_.get(), w_desc_.get(), conv_fwd_.get(),
                                                               y_desc_.get(), max_count, &count, perf.data()));
    const Bytes ws = ctx().reserve_workspace(largest_candidate_workspace(perf, count, ctx().options().workspace_limit));
    if (ctx().options().benchmark_algorithms) {
      PARASIM_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          h, x_desc_.get(), x_, w_desc_.get(), params_.weights(), conv_fwd_.get(), y_desc_.get(), y_, max_count, &count,
          perf.data(), ctx().workspace(), static_cast<std::size_t>(ws)));
    }
    const auto& best = pick(perf, count, ws, op().name + " forward");
    fwd_algo_ = best.algo;
    PARASIM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_fwd_.get(), best.mathType));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, x_desc_.get(), w_desc_.get(), conv_fwd_.get(),
                                                                y_desc_.get(), fwd_algo_, &ws_fwd_));
    ctx().reserve_workspace(static_cast<Bytes>(ws_fwd_));
    append_note("fwd=" + algo_name(fwd_algo_));
  }

  void choose_backward_data() {
    cudnnHandle_t h = ctx().cudnn();
    int max_count = 0, count = 0;
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_desc_.get(), y_desc_.get(),
                                                                    conv_bwd_data_.get(), x_desc_.get(), max_count,
                                                                    &count, perf.data()));
    const Bytes ws = ctx().reserve_workspace(largest_candidate_workspace(perf, count, ctx().options().workspace_limit));
    if (ctx().options().benchmark_algorithms) {
      PARASIM_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          h, w_desc_.get(), params_.weights(), y_desc_.get(), dy_, conv_bwd_data_.get(), x_desc_.get(), dx_, max_count,
          &count, perf.data(), ctx().workspace(), static_cast<std::size_t>(ws)));
    }
    const auto& best = pick(perf, count, ws, op().name + " backward data");
    bwd_data_algo_ = best.algo;
    PARASIM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_bwd_data_.get(), best.mathType));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_desc_.get(), y_desc_.get(),
                                                                     conv_bwd_data_.get(), x_desc_.get(),
                                                                     bwd_data_algo_, &ws_bwd_data_));
    ctx().reserve_workspace(static_cast<Bytes>(ws_bwd_data_));
    append_note("bwd_data=" + algo_name(bwd_data_algo_));
  }

  void choose_backward_filter() {
    cudnnHandle_t h = ctx().cudnn();
    int max_count = 0, count = 0;
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_desc_.get(), y_desc_.get(),
                                                                      conv_bwd_filter_.get(), w_desc_.get(),
                                                                      max_count, &count, perf.data()));
    const Bytes ws = ctx().reserve_workspace(largest_candidate_workspace(perf, count, ctx().options().workspace_limit));
    if (ctx().options().benchmark_algorithms) {
      PARASIM_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          h, x_desc_.get(), x_, y_desc_.get(), dy_, conv_bwd_filter_.get(), w_desc_.get(), params_.grads(), max_count,
          &count, perf.data(), ctx().workspace(), static_cast<std::size_t>(ws)));
    }
    const auto& best = pick(perf, count, ws, op().name + " backward filter");
    bwd_filter_algo_ = best.algo;
    PARASIM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_bwd_filter_.get(), best.mathType));
    PARASIM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_desc_.get(), y_desc_.get(),
                                                                       conv_bwd_filter_.get(), w_desc_.get(),
                                                                       bwd_filter_algo_, &ws_bwd_filter_));
    ctx().reserve_workspace(static_cast<Bytes>(ws_bwd_filter_));
    append_note("bwd_filter=" + algo_name(bwd_filter_algo_));
  }

  std::int64_t n_ = 0, c_in_ = 0, k_ = 0, weight_elements_ = 0;
  TensorDescriptor x_desc_, y_desc_, bias_desc_;
  FilterDescriptor w_desc_;
  ConvolutionDescriptor conv_fwd_, conv_bwd_data_, conv_bwd_filter_;
  void* x_ = nullptr;
  void* y_ = nullptr;
  void* dy_ = nullptr;
  void* dx_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  std::size_t ws_fwd_ = 0, ws_bwd_data_ = 0, ws_bwd_filter_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_conv2d_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt) {
  return std::make_unique<Conv2dKernel>(ctx, op, opt);
}

}  // namespace parasim::kernels::cuda
