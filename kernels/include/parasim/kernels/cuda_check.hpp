// One checked-call macro per vendor API. A failing call throws parasim::RuntimeError (exit 1)
// whose message names the vendor, the call as written, the file and line, and the vendor's own
// error name and text, e.g.
//   "CUDA call failed: cudaMalloc(&p, bytes) at cuda_gemm.cpp:31: cudaErrorMemoryAllocation (out of memory)"
//
// This header includes no vendor header: each macro expands to calls of its vendor's status
// string function, so a translation unit includes exactly the vendor headers it uses.
//
// Example:
//   #include <cuda_runtime_api.h>
//   #include "parasim/kernels/cuda_check.hpp"
//   void* p = nullptr;
//   PARASIM_CUDA_CHECK(cudaMalloc(&p, 1 << 20));
//   PARASIM_CUBLAS_CHECK(parasim::kernels::cublas::create(&handle));  // cublas_library.hpp
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace parasim::kernels {

/// Throws RuntimeError "<vendor> call failed: <call> at <file>:<line>: <error>".
/// `file` is shortened to its last path component so messages stay readable.
[[noreturn]] void throw_vendor_call_failure(std::string_view vendor, std::string_view call_text,
                                            const char* file, int line, const std::string& error);

namespace cublas {
/// cublasGetStatusName / cublasGetStatusString of `status`, from the cuBLAS loaded on first use
/// (cublas_library.hpp; an int here so that this header includes no vendor header);
/// "(cuBLAS not loadable)" where it cannot be loaded.
const char* status_name(int status);
const char* status_string(int status);
}  // namespace cublas

/// The message throw_vendor_call_failure would use (exposed for tests and for callers that
/// must not throw, such as destructors, which log it instead).
std::string vendor_call_failure_message(std::string_view vendor, std::string_view call_text,
                                        const char* file, int line, const std::string& error);

/// Example:
///   PARASIM_NCCL_CHECK(ncclGroupStart());
///   NcclGroupGuard group([] { PARASIM_NCCL_CHECK(ncclGroupEnd()); }, [&] { comms_failed_ = true; });
///   ... one ncclAllReduce(...) per rank ...
///   group.close();   // an exception before this still ends the group and marks the comms for abort
///
/// Keeps an NCCL group (ncclGroupStart .. ncclGroupEnd) balanced on every path. close() ends the
/// group; if the group's end throws, `fail` runs and the error propagates. If the guard is destroyed
/// without close() (an enqueue in between threw), it still ends the group, ignoring that call's
/// error, and runs `fail`, which marks the communicators for ncclCommAbort: a communicator whose
/// group failed may have half-enqueued work, and ncclCommDestroy would wait for it.
class NcclGroupGuard {
 public:
  NcclGroupGuard(std::function<void()> end_group, std::function<void()> fail);
  ~NcclGroupGuard();
  NcclGroupGuard(const NcclGroupGuard&) = delete;
  NcclGroupGuard& operator=(const NcclGroupGuard&) = delete;
  void close();

 private:
  std::function<void()> end_group_;
  std::function<void()> fail_;
  bool open_ = true;
};

}  // namespace parasim::kernels

// The status variable names carry the macro's name so they never shadow a caller's variable
// (-Wshadow is an error in this project).

#define PARASIM_CUDA_CHECK(call)                                                                                 \
  do {                                                                                                           \
    const cudaError_t parasim_cuda_status_ = (call);                                                             \
    if (parasim_cuda_status_ != cudaSuccess) {                                                                   \
      ::parasim::kernels::throw_vendor_call_failure("CUDA", #call, __FILE__, __LINE__,                           \
                                                    std::string(cudaGetErrorName(parasim_cuda_status_)) + " (" + \
                                                        cudaGetErrorString(parasim_cuda_status_) + ")");         \
    }                                                                                                            \
  } while (0)

#define PARASIM_CUPTI_CHECK(call)                                                                      \
  do {                                                                                                 \
    const CUptiResult parasim_cupti_status_ = (call);                                                  \
    if (parasim_cupti_status_ != CUPTI_SUCCESS) {                                                      \
      const char* parasim_cupti_text_ = nullptr;                                                       \
      if (cuptiGetResultString(parasim_cupti_status_, &parasim_cupti_text_) != CUPTI_SUCCESS)          \
        parasim_cupti_text_ = nullptr;                                                                 \
      ::parasim::kernels::throw_vendor_call_failure(                                                   \
          "CUPTI", #call, __FILE__, __LINE__,                                                          \
          std::string(parasim_cupti_text_ ? parasim_cupti_text_ : "unknown CUPTI error") + " (code " + \
              std::to_string(static_cast<int>(parasim_cupti_status_)) + ")");                          \
    }                                                                                                  \
  } while (0)

#define PARASIM_CUDNN_CHECK(call)                                               \
  do {                                                                          \
    const cudnnStatus_t parasim_cudnn_status_ = (call);                         \
    if (parasim_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                        \
      ::parasim::kernels::throw_vendor_call_failure(                            \
          "cuDNN", #call, __FILE__, __LINE__,                                   \
          std::string(cudnnGetErrorString(parasim_cudnn_status_)) + " (code " + \
              std::to_string(static_cast<int>(parasim_cudnn_status_)) + ")");   \
    }                                                                           \
  } while (0)

#define PARASIM_CUBLAS_CHECK(call)                                                                                \
  do {                                                                                                            \
    const cublasStatus_t parasim_cublas_status_ = (call);                                                         \
    if (parasim_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      ::parasim::kernels::throw_vendor_call_failure(                                                              \
          "cuBLAS", #call, __FILE__, __LINE__,                                                                    \
          std::string(::parasim::kernels::cublas::status_name(static_cast<int>(parasim_cublas_status_))) + " (" + \
              ::parasim::kernels::cublas::status_string(static_cast<int>(parasim_cublas_status_)) + ")");         \
    }                                                                                                             \
  } while (0)

#define PARASIM_NCCL_CHECK(call)                                                                                       \
  do {                                                                                                                 \
    const ncclResult_t parasim_nccl_status_ = (call);                                                                  \
    if (parasim_nccl_status_ != ncclSuccess) {                                                                         \
      ::parasim::kernels::throw_vendor_call_failure("NCCL", #call, __FILE__, __LINE__,                                 \
                                                    std::string(ncclGetErrorString(parasim_nccl_status_)) +            \
                                                        " (code " +                                                    \
                                                        std::to_string(static_cast<int>(parasim_nccl_status_)) + ")"); \
    }                                                                                                                  \
  } while (0)
