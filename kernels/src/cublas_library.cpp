// cuBLAS through dlopen (cublas_library.hpp says why): the functions parasim calls, resolved
// once, on first use, from the library of the toolkit it was built with.
#include "parasim/kernels/cublas_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels::cublas {

namespace {

struct Api {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_pointer_mode)(cublasHandle_t, cublasPointerMode_t) = nullptr;
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t) = nullptr;
  cublasStatus_t (*get_property)(libraryPropertyType, int*) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long int, const void*,
                                            cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  const char* (*status_name)(cublasStatus_t) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;
};

template <class Fn>
void resolve(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (fn == nullptr)
    throw RuntimeError(std::string("cuBLAS: ") + library_name() + " has no " + symbol +
                       " (a cuBLAS older than the CUDA toolkit parasim was built with?)");
}

Api open_api() {
  // RTLD_LOCAL: cuBLAS's symbols stay out of the global scope, as a linked library's would not
  // matter either; the handle is never closed (cuBLAS keeps state until the process exits).
  void* lib = dlopen(library_name(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    throw RuntimeError(std::string("cuBLAS: cannot load ") + library_name() + ": " + (why ? why : "unknown error") +
                       " (install the CUDA toolkit's cuBLAS or add its directory to LD_LIBRARY_PATH)");
  }
  Api api;
  resolve(lib, api.create, "cublasCreate_v2");
  resolve(lib, api.destroy, "cublasDestroy_v2");
  resolve(lib, api.set_stream, "cublasSetStream_v2");
  resolve(lib, api.set_pointer_mode, "cublasSetPointerMode_v2");
  resolve(lib, api.set_workspace, "cublasSetWorkspace_v2");
  resolve(lib, api.get_property, "cublasGetProperty");
  resolve(lib, api.gemm_ex, "cublasGemmEx");
  resolve(lib, api.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  resolve(lib, api.status_name, "cublasGetStatusName");
  resolve(lib, api.status_string, "cublasGetStatusString");
  return api;
}

std::mutex g_mutex;
const Api* g_api = nullptr;  // set once, under g_mutex; a failed load is tried (and reported) again next time

const Api& api() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api == nullptr) g_api = new Api(open_api());  // lives until exit, like the library
  return *g_api;
}

}  // namespace

const char* library_name() { return PARASIM_CUBLAS_LIBRARY; }

void load() { (void)api(); }

cublasStatus_t create(cublasHandle_t* handle) { return api().create(handle); }
cublasStatus_t destroy(cublasHandle_t handle) { return api().destroy(handle); }
cublasStatus_t set_stream(cublasHandle_t handle, cudaStream_t stream) { return api().set_stream(handle, stream); }
cublasStatus_t set_pointer_mode(cublasHandle_t handle, cublasPointerMode_t mode) {
  return api().set_pointer_mode(handle, mode);
}
cublasStatus_t set_workspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  return api().set_workspace(handle, workspace, bytes);
}
cublasStatus_t get_property(libraryPropertyType type, int* value) { return api().get_property(type, value); }

cublasStatus_t gemm_ex(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                       const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                       int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                       cublasGemmAlgo_t algo) {
  return api().gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                       computeType, algo);
}

cublasStatus_t gemm_strided_batched_ex(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                       int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                       long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                       long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                       long long int strideC, int batchCount, cublasComputeType_t computeType,
                                       cublasGemmAlgo_t algo) {
  return api().gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                       strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

const char* status_name(int status) {
  try {
    return api().status_name(static_cast<cublasStatus_t>(status));
  } catch (const RuntimeError&) {
    return "(cuBLAS not loadable)";
  }
}

const char* status_string(int status) {
  try {
    return api().status_string(static_cast<cublasStatus_t>(status));
  } catch (const RuntimeError&) {
    return "(cuBLAS not loadable)";
  }
}

}  // namespace parasim::kernels::cublas
