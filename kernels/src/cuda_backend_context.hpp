// What every CUDA op kernel of one backend shares: the device, the stream, the cuDNN and cuBLAS
// handles bound to that stream, the one workspace, and RAII device buffers. Private to the backend.
//
// Example:
//   BackendContext ctx(0, nullptr, CudaBackendOptions{});
//   DeviceBuffer x(ctx, 1 << 20);                 // 1 MiB on device 0, freed by the destructor
//   ctx.reserve_workspace(64 * MiB);               // at prepare() time only
#pragma once

#include <cstdint>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda_kernels.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"

namespace parasim::kernels::cuda {

Elem to_elem(models::DType dtype);
cudaDataType_t cuda_data_type(models::DType dtype);
cudnnDataType_t cudnn_data_type(models::DType dtype);

class BackendContext;

/// `p` advanced by `elements` of `dtype` (sub-tensors: one time step, one chunk of rows).
inline const void* offset(const void* p, std::int64_t elements, models::DType dtype) {
  return static_cast<const char*>(p) + elements * models::dtype_size(dtype);
}
inline void* offset(void* p, std::int64_t elements, models::DType dtype) {
  return static_cast<char*>(p) + elements * models::dtype_size(dtype);
}

/// Device memory owned by one object; freed in the destructor (errors there are ignored: the
/// context may already be torn down at process exit).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const BackendContext& ctx, Bytes bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  Bytes bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  Bytes bytes_ = 0;
};

class BackendContext {
 public:
  /// Selects `device`, creates the handles and (if `external_stream` is null) a stream.
  BackendContext(int device, cudaStream_t external_stream, const CudaBackendOptions& options);
  ~BackendContext();
  BackendContext(const BackendContext&) = delete;
  BackendContext& operator=(const BackendContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  const CudaBackendOptions& options() const { return options_; }
  const std::string& device_name() const { return device_name_; }

  /// Makes this backend's device current on the calling thread (the executor runs one thread
  /// per device, but prepare/run may be called from any thread).
  void make_current() const;

  /// Grows the shared workspace to at least `bytes` (capped by options().workspace_limit; returns
  /// the size now available). Called from prepare() only: it synchronizes the stream before
  /// freeing the old buffer, and kernels read workspace() at run time, never cache it. The new
  /// buffer is allocated before the old one is freed: when that fails (RuntimeError), the old
  /// workspace stays installed in cuBLAS.
  Bytes reserve_workspace(Bytes bytes);
  void* workspace() const { return workspace_.get(); }
  Bytes workspace_bytes() const { return workspace_.bytes(); }

  /// A fresh seed for filling one buffer, so buffers hold different data.
  std::uint64_t next_seed() { return options_.seed + 0x9e3779b97f4a7c15ull * ++seed_counter_; }

 private:
  int device_;
  CudaBackendOptions options_;
  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = false;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer workspace_;
  std::uint64_t seed_counter_ = 0;
  std::string device_name_;
};

}  // namespace parasim::kernels::cuda
