// Handles, stream, workspace and device buffers of one CUDA backend.
#include "cuda_backend_context.hpp"

#include <algorithm>
#include <utility>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cublas_library.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels::cuda {

Elem to_elem(models::DType dtype) {
  switch (dtype) {
    case models::DType::F32: return Elem::F32;
    case models::DType::F16: return Elem::F16;
    case models::DType::BF16: return Elem::BF16;
    case models::DType::FP8:
      throw InputError("fp8: the CUDA kernels run fp32, fp16 and bf16; FP8 matmuls are modelled, not executed");
  }
  return Elem::F32;
}

cudaDataType_t cuda_data_type(models::DType dtype) {
  switch (dtype) {
    case models::DType::F32: return CUDA_R_32F;
    case models::DType::F16: return CUDA_R_16F;
    case models::DType::BF16: return CUDA_R_16BF;
    case models::DType::FP8:
      throw InputError("fp8: the CUDA kernels run fp32, fp16 and bf16; FP8 matmuls are modelled, not executed");
  }
  return CUDA_R_32F;
}

cudnnDataType_t cudnn_data_type(models::DType dtype) {
  switch (dtype) {
    case models::DType::F32: return CUDNN_DATA_FLOAT;
    case models::DType::F16: return CUDNN_DATA_HALF;
    case models::DType::BF16: return CUDNN_DATA_BFLOAT16;
    case models::DType::FP8:
      throw InputError("fp8: the CUDA kernels run fp32, fp16 and bf16; FP8 matmuls are modelled, not executed");
  }
  return CUDNN_DATA_FLOAT;
}

void require_cuda_device(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // No driver, driver too old for this runtime, or no GPU: all mean "nothing to run on here".
    (void)cudaGetLastError();  // clear the sticky-free error so later probes start clean
    throw RuntimeError(std::string("no CUDA device: ") + cudaGetErrorName(status) + " (" +
                       cudaGetErrorString(status) + "); GPU profiling and the CUDA backend need an NVIDIA GPU "
                       "and driver");
  }
  if (count == 0) throw RuntimeError("no CUDA device: the driver reports 0 GPUs");
  if (device < 0 || device >= count) {
    throw RuntimeError("no CUDA device: device " + std::to_string(device) + " requested, but only " +
                       std::to_string(count) + " visible (CUDA_VISIBLE_DEVICES may hide others)");
  }
}

// ---------------------------------------------------------------- DeviceBuffer

DeviceBuffer::DeviceBuffer(const BackendContext& ctx, Bytes bytes) : bytes_(bytes) {
  if (bytes <= 0) {
    bytes_ = 0;
    return;
  }
  ctx.make_current();
  const cudaError_t status = cudaMalloc(&ptr_, static_cast<std::size_t>(bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky; clear it so the next op can run
    ptr_ = nullptr;
    throw RuntimeError("cannot allocate " + format_bytes(bytes) + " on CUDA device " + std::to_string(ctx.device()) +
                       ": " + cudaGetErrorString(status));
  }
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

// ---------------------------------------------------------------- BackendContext

namespace {
// cuBLAS's recommended workspace on Hopper; cuDNN's needs are added per op at prepare time.
constexpr Bytes kInitialWorkspace = 32 * MiB;
}  // namespace

BackendContext::BackendContext(int device, cudaStream_t external_stream, const CudaBackendOptions& options)
    : device_(device), options_(options) {
  require_cuda_device(device);
  PARASIM_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  PARASIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  device_name_ = prop.name;
  try {
    if (external_stream != nullptr) {
      stream_ = external_stream;
    } else {
      PARASIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      owns_stream_ = true;
    }
    PARASIM_CUDNN_CHECK(cudnnCreate(&cudnn_));
    PARASIM_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
    PARASIM_CUBLAS_CHECK(cublas::create(&cublas_));
    PARASIM_CUBLAS_CHECK(cublas::set_stream(cublas_, stream_));
    // Scalars (alpha, beta) come from host memory; results are never returned through pointers.
    PARASIM_CUBLAS_CHECK(cublas::set_pointer_mode(cublas_, CUBLAS_POINTER_MODE_HOST));
    reserve_workspace(kInitialWorkspace);
  } catch (...) {
    if (cublas_ != nullptr) (void)cublas::destroy(cublas_);
    if (cudnn_ != nullptr) (void)cudnnDestroy(cudnn_);
    if (owns_stream_) (void)cudaStreamDestroy(stream_);
    throw;
  }
}

BackendContext::~BackendContext() {
  (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(stream_);
  workspace_ = DeviceBuffer{};
  if (cublas_ != nullptr) (void)cublas::destroy(cublas_);
  if (cudnn_ != nullptr) (void)cudnnDestroy(cudnn_);
  if (owns_stream_) (void)cudaStreamDestroy(stream_);
}

void BackendContext::make_current() const {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_) PARASIM_CUDA_CHECK(cudaSetDevice(device_));
}

Bytes BackendContext::reserve_workspace(Bytes bytes) {
  const Bytes wanted = std::min(bytes, std::max<Bytes>(options_.workspace_limit, kInitialWorkspace));
  if (wanted <= workspace_.bytes()) return workspace_.bytes();
  make_current();
  // Work already enqueued may still use the old buffer.
  PARASIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // New buffer first: if it cannot be had, cuBLAS keeps the old one (never a freed pointer), and
  // only once cuBLAS points at the new one is the old freed (by the move assignment).
  DeviceBuffer grown(*this, wanted);
  PARASIM_CUBLAS_CHECK(cublas::set_workspace(cublas_, grown.get(), static_cast<std::size_t>(grown.bytes())));
  workspace_ = std::move(grown);
  return workspace_.bytes();
}

}  // namespace parasim::kernels::cuda
