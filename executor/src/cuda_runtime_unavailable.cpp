// Builds without the CUDA toolkit: the CUDA backend exists as a clear refusal.
#include "parasim/common/error.hpp"
#include "parasim/executor/cuda_runtime.hpp"

namespace parasim::executor {

bool cuda_backend_built() { return false; }
int visible_cuda_devices() { return 0; }

std::unique_ptr<StreamRuntime> make_cuda_runtime(OpResolver, const CudaRuntimeOptions&) {
  throw RuntimeError("parasim was built without CUDA (no toolkit found at configure time): the cuda backend is "
                     "unavailable; rebuild with the CUDA toolkit, cuDNN and NCCL installed, or use --backend cpu");
}

}  // namespace parasim::executor
