// RAII for cuDNN's legacy descriptors (the backend uses the legacy API: cudnnConvolutionForward &
// co. remain in cuDNN 9, deprecated only in favour of the graph API) and 4-D tensor setup with
// the 32-bit limits cuDNN imposes checked up front.
//
// Example:
//   TensorDescriptor x;
//   set_nchw(x, models::DType::F16, {32, 64, 56, 56});
//   cudnnPoolingForward(handle, pool.get(), &one, x.get(), ...);
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <string>

#include <cudnn.h>

#include "cuda_backend_context.hpp"
#include "parasim/common/error.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels::cuda {

template <class Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { PARASIM_CUDNN_CHECK(Create(&handle_)); }
  ~CudnnDescriptor() { (void)Destroy(handle_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  Handle get() const { return handle_; }

 private:
  Handle handle_{};
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor =
    CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

using Dims4 = std::array<std::int64_t, 4>;

/// cuDNN's legacy API takes int dimensions and addresses tensors with 32-bit offsets.
inline int cudnn_dim(std::int64_t v, const std::string& what) {
  if (v < 1 || v > INT_MAX)
    throw RuntimeError(what + ": dimension " + std::to_string(v) + " is outside cuDNN's int range");
  return static_cast<int>(v);
}

inline void set_nchw(const TensorDescriptor& d, cudnnDataType_t type, const Dims4& dims, const std::string& what) {
  if (dims[0] * dims[1] * dims[2] * dims[3] > INT_MAX)
    throw RuntimeError(what + ": tensor of " + std::to_string(dims[0] * dims[1] * dims[2] * dims[3]) +
                       " elements exceeds cuDNN's 2^31 element limit");
  PARASIM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW, type, cudnn_dim(dims[0], what),
                                                 cudnn_dim(dims[1], what), cudnn_dim(dims[2], what),
                                                 cudnn_dim(dims[3], what)));
}

inline void set_nchw(const TensorDescriptor& d, models::DType dtype, const Dims4& dims, const std::string& what) {
  set_nchw(d, cudnn_data_type(dtype), dims, what);
}

/// Scaling factors: cuDNN reads float alpha/beta for float, half and bfloat16 data.
inline constexpr float kOne = 1.0f;
inline constexpr float kZero = 0.0f;

}  // namespace parasim::kernels::cuda

namespace parasim::kernels::cuda {

/// Softmax over the last dimension of a row-major [rows, cols] tensor with cuDNN (accurate mode),
/// issued in chunks of rows so each call stays inside cuDNN's 2^31 element limit
/// (defined in cuda_cudnn_kernels.cpp).
void softmax_rows_forward(const BackendContext& ctx, models::DType dtype, const void* x, void* y, std::int64_t rows,
                          std::int64_t cols);
void softmax_rows_backward(const BackendContext& ctx, models::DType dtype, const void* y, const void* dy, void* dx,
                           std::int64_t rows, std::int64_t cols);

}  // namespace parasim::kernels::cuda
