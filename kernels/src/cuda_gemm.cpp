// cuBLAS GEMMs in row-major terms (see cuda_gemm.hpp for the operand swap).
#include "cuda_gemm.hpp"

#include <climits>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cublas_library.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels::cuda {
namespace {

int checked_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw RuntimeError(std::string("GEMM ") + what + " = " + std::to_string(v) + " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

cublasComputeType_t compute_type(const BackendContext& ctx, models::DType dtype) {
  if (dtype == models::DType::F32 && ctx.options().allow_tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

}  // namespace

void gemm(BackendContext& ctx, models::DType dtype, const RowMajorGemm& g, const void* a, const void* b, void* c) {
  if (g.m == 0 || g.n == 0) return;
  const cudaDataType_t type = cuda_data_type(dtype);
  // C^T[N,M] = op(B)^T[N,K] op(A)^T[K,M] in cuBLAS's column-major view.
  const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = checked_int(g.n, "N");
  const int n = checked_int(g.m, "M");
  const int k = checked_int(g.k, "K");
  const int ld_first = checked_int(g.ldb, "ldb");
  const int ld_second = checked_int(g.lda, "lda");
  const int ldc = checked_int(g.ldc, "ldc");
  if (g.batch <= 1) {
    PARASIM_CUBLAS_CHECK(cublas::gemm_ex(ctx.cublas(), op_first, op_second, m, n, k, &g.alpha, b, type, ld_first, a,
                                         type, ld_second, &g.beta, c, type, ldc, compute_type(ctx, dtype),
                                         CUBLAS_GEMM_DEFAULT));
  } else {
    PARASIM_CUBLAS_CHECK(cublas::gemm_strided_batched_ex(ctx.cublas(), op_first, op_second, m, n, k, &g.alpha, b, type,
                                                         ld_first, g.stride_b, a, type, ld_second, g.stride_a, &g.beta,
                                                         c, type, ldc, g.stride_c, checked_int(g.batch, "batch"),
                                                         compute_type(ctx, dtype), CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace parasim::kernels::cuda
