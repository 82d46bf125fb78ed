// Real CUDA kernels for every op kind (CUDA builds only): cuDNN for convolution, pooling,
// batch norm and softmax; cuBLAS (tensor-op GEMMs) for linear layers, matmuls, attention and the
// LSTM's gate GEMMs; small kernels of our own (cuda_*_kernels.cu) for elementwise ops, dropout,
// embeddings, losses, layer norm and the optimizer updates. fp32, fp16 and bf16.
//
// All buffers of an op are allocated and initialised once in prepare(); run() only enqueues work
// on the backend's stream, so the profiler times kernels and the executor can run a training step
// without allocations. One cuDNN/cuBLAS workspace is shared by all ops of a backend.
//
// This header includes no CUDA header: the stream is passed as void* (a cudaStream_t).
//
// Example:
//   #if PARASIM_HAVE_CUDA
//   auto backend = make_cuda_kernel_backend(/*device=*/0, /*stream=*/nullptr);  // own stream
//   auto k = backend->prepare(model.op(v), Optimizer::Adam);
//   k->run(Phase::Forward); k->run(Phase::BackwardData); k->run(Phase::BackwardWeight);
//   k->run(Phase::Update);
//   backend->synchronize();
//   std::cout << k->note() << "\n";   // "fwd=IMPLICIT_PRECOMP_GEMM bwd_data=ALGO_1 bwd_filter=ALGO_1"
//   #endif
#pragma once

#include <memory>

#include "parasim/common/units.hpp"
#include "parasim/kernels/kernel_backend.hpp"

namespace parasim::kernels {

struct CudaBackendOptions {
  /// fp32 convolutions and GEMMs may use TF32 tensor cores. Off by default so fp32 measurements
  /// match the roofline's FP32 peak; PyTorch enables it for convolutions only.
  bool allow_tf32 = false;
  /// Upper bound for the shared cuDNN/cuBLAS workspace.
  Bytes workspace_limit = 1 * GiB;
  /// true: time every cuDNN convolution algorithm on the real buffers and keep the fastest
  /// (cudnnFind*AlgorithmEx, like torch.backends.cudnn.benchmark); false: cuDNN's heuristic pick
  /// (cudnnGet*Algorithm_v7).
  bool benchmark_algorithms = true;
  /// Seed of the data the buffers are filled with (uniform values, so kernels never see NaN/Inf).
  unsigned long long seed = 0x5eed;
};

/// A backend on CUDA device `device`. `stream` is the cudaStream_t to enqueue on; nullptr makes the
/// backend create (and later destroy) its own non-blocking stream. Throws RuntimeError
/// ("no CUDA device: ...") without a usable GPU.
std::unique_ptr<KernelBackend> make_cuda_kernel_backend(int device, void* stream,
                                                        const CudaBackendOptions& options = {});

namespace cuda {
/// Throws RuntimeError("no CUDA device: ...") unless `device` names a usable GPU.
void require_cuda_device(int device);
}  // namespace cuda

}  // namespace parasim::kernels
