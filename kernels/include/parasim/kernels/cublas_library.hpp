// cuBLAS, loaded on first use. Linking libcublas maps libcublasLt too, whose start-up code
// faults in about 90 MB of pages (0.07 s) in every run of parasim, `plan` and `--version`
// included; loaded with dlopen when a CUDA backend or the GPU profiler first asks for it, it
// costs only the runs that use it. Each function forwards to the cuBLAS function of the same
// name; a missing or incomplete library throws RuntimeError naming it and what dlopen said.
//
// Example:
//   cublasHandle_t h = nullptr;
//   PARASIM_CUBLAS_CHECK(parasim::kernels::cublas::create(&h));
#pragma once

#include <cublas_v2.h>

namespace parasim::kernels::cublas {

/// The library dlopen()ed ("libcublas.so.<CUDA major>", the SONAME the toolkit links against).
const char* library_name();
/// Loads it now (RuntimeError when it cannot be loaded or lacks a function used here).
void load();

cublasStatus_t create(cublasHandle_t* handle);
cublasStatus_t destroy(cublasHandle_t handle);
cublasStatus_t set_stream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t set_pointer_mode(cublasHandle_t handle, cublasPointerMode_t mode);
cublasStatus_t set_workspace(cublasHandle_t handle, void* workspace, size_t bytes);
cublasStatus_t get_property(libraryPropertyType type, int* value);
cublasStatus_t gemm_ex(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                       const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                       int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                       cublasGemmAlgo_t algo);
cublasStatus_t gemm_strided_batched_ex(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                       int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                       long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                       long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                       long long int strideC, int batchCount, cublasComputeType_t computeType,
                                       cublasGemmAlgo_t algo);
// status_name / status_string (for PARASIM_CUBLAS_CHECK): parasim/kernels/cuda_check.hpp.

}  // namespace parasim::kernels::cublas
