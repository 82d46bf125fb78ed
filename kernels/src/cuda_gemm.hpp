// Row-major GEMMs on cuBLAS (which is column-major): C[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C.
// Row-major storage of C is column-major storage of C^T, so C^T = op(B)^T op(A)^T is what cuBLAS
// computes: the operands swap places and the leading dimensions stay the row strides.
// Inputs and outputs in the op's dtype, accumulation in fp32 (CUBLAS_COMPUTE_32F, or TF32 tensor
// cores for fp32 when allowed), cuBLAS picks tensor-op algorithms by default.
//
// Example: y[M,N] = x[M,K] W^T with W stored [N,K]
//   RowMajorGemm g{.trans_a = false, .trans_b = true, .m = M, .n = N, .k = K, .lda = K, .ldb = K, .ldc = N};
//   gemm(ctx, DType::F16, g, x, W, y);
#pragma once

#include <cstdint>

#include "cuda_backend_context.hpp"

namespace parasim::kernels::cuda {

struct RowMajorGemm {
  bool trans_a = false;  // A stored [K, M] (row-major) and used transposed
  bool trans_b = false;  // B stored [N, K] and used transposed
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // row strides of the stored matrices
  float alpha = 1.0f;
  float beta = 0.0f;
  // Strided batches (batch > 1): element strides between consecutive matrices.
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

/// Positional shorthand for the common, unbatched case.
inline RowMajorGemm gemm_shape(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                               std::int64_t lda, std::int64_t ldb, std::int64_t ldc, float alpha = 1.0f,
                               float beta = 0.0f) {
  RowMajorGemm g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.alpha = alpha;
  g.beta = beta;
  return g;
}

/// Enqueues the GEMM on the context's stream (cublasGemmEx, or cublasGemmStridedBatchedEx when
/// g.batch > 1). RuntimeError if a dimension exceeds cuBLAS's 32-bit int.
void gemm(BackendContext& ctx, models::DType dtype, const RowMajorGemm& g, const void* a, const void* b, void* c);

}  // namespace parasim::kernels::cuda
