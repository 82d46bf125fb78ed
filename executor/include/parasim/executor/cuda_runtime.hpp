// The CUDA backend: the TaskGraph's devices are GPUs of this node.
//
//   * Per graph device, one non-blocking CUDA stream per graph stream (stream 0 computes,
//     stream 1 communicates, as the lowering numbers them).
//   * Compute tasks run the op's real kernels through profiler::make_cuda_kernel_backend(device,
//     stream) (cuDNN, cuBLAS and our own kernels), prepared once in setup(): the very kernels the
//     GPU profiler times. Tasks without a runnable kernel run a spin kernel for their graph
//     duration and notes() counts them (not a measurement).
//   * Transfers are cudaMemcpyPeerAsync on the source's stream (peer access enabled where the
//     pair supports it; otherwise CUDA stages the copy through the host).
//   * Collectives are NCCL calls on every member's stream inside one ncclGroupStart/End, one
//     communicator per distinct (device group, stream) from a CommunicatorFactory
//     (single process: ncclCommInitAll).
//   * Dependencies across streams and devices: cudaEventRecord / cudaStreamWaitEvent, exactly
//     the issue program the RecordingRuntime checks in CI.
//   * Timing: a timing event before and after every task on its stream; times are
//     cudaEventElapsedTime from the step-start event of the same device (every stream of every
//     device first waits for device 0's step-start event, so all devices start together).
//
// One GPU per graph device is required: NCCL cannot put two ranks of one communicator on one
// GPU, and two "devices" sharing a GPU would contend for its SMs and memory bandwidth, so
// setup() refuses (RuntimeError) when the graph needs more GPUs than are visible instead of
// emulating them. Multi-node runs (NCCL bootstrapped over MPI) plug in through the
// CommunicatorFactory and the rank -> device map (docs/executor.md).
//
// Example:
//   #if PARASIM_HAVE_CUDA
//   auto rt = make_cuda_runtime(model, {});
//   ExecutionResult r = run_steps(graph, *rt, {.warmup = 3, .repetitions = 10});
//   #endif
#pragma once

#include <memory>
#include <vector>

#include "parasim/executor/stream_runtime.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::executor {

struct CudaRuntimeOptions {
  profiler::Optimizer optimizer = profiler::Optimizer::Sgd;
  /// Graph device d runs on CUDA device devices[d]; empty: device d on CUDA device d.
  std::vector<int> devices;
  bool allow_tf32 = false;           // as profiler::CudaBackendOptions (match the profile)
  bool benchmark_algorithms = true;  // as profiler::CudaBackendOptions
};

/// Whether this build has the CUDA backend (PARASIM_HAVE_CUDA).
bool cuda_backend_built();
/// GPUs visible to this process (0 without CUDA, without a driver or without a GPU).
int visible_cuda_devices();

/// The CUDA runtime running, for every compute task, the kernels of the op `ops` names. In builds
/// without CUDA this throws RuntimeError("parasim was built without CUDA ..."); setup() throws
/// RuntimeError when the graph needs more GPUs than are visible or maps two graph devices onto
/// one GPU.
std::unique_ptr<StreamRuntime> make_cuda_runtime(OpResolver ops, const CudaRuntimeOptions& options = {});

}  // namespace parasim::executor
