// The CUDA backend: the TaskGraph's devices are GPUs of this node.
//
//   * Per graph device, one non-blocking CUDA stream per graph stream (stream 0 computes,
//     stream 1 communicates, as the lowering numbers them).
//   * Compute tasks run the op's real kernels through kernels::make_cuda_kernel_backend(device,
//     stream) (cuDNN, cuBLAS and our own kernels), prepared once in setup(): the very kernels the
//     GPU profiler times. setup() creates the NCCL communicators and the transfer buffers first
//     and prepares kernels last, in issue order, until a GPU's free memory (cudaMemGetInfo)
//     falls below options.memory_reserve. Tasks without a runnable kernel (no op, prepare failed,
//     memory reserve) run a spin kernel for their graph duration; notes() names those ops and
//     why (timed stand-ins, not measurements).
//   * Transfers are cudaMemcpyPeerAsync on the source's stream (peer access enabled where the
//     pair supports it; otherwise CUDA stages the copy through the host).
//   * Collectives are NCCL calls on every member's stream inside one ncclGroupStart/End, one
//     communicator per distinct (device group, stream) from a CommunicatorFactory
//     (single process: ncclCommInitAll). Every GPU's collectives run in the plan's issue order
//     (an event chain across its streams, collective_order_waits), the same on all ranks, so two
//     communicators can never wait for each other. A guard ends an open group on error paths,
//     and communicators whose collective failed are aborted (ncclCommAbort), not destroyed.
//   * Dependencies across streams and devices: cudaEventRecord / cudaStreamWaitEvent, exactly
//     the issue program the RecordingRuntime checks in CI.
//   * Timing: a timing event before and after every task on its stream; times are
//     cudaEventElapsedTime from the step-start event of the same device: device 0 records the
//     step start, every other device's first stream waits for it and records its own, and every
//     other stream of a device waits for its own device's start event, so no task of a device
//     can start before the event its times are measured from.
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

#include "parasim/common/units.hpp"
#include "parasim/executor/cuda_setup_policy.hpp"
#include "parasim/executor/stream_runtime.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::executor {

struct CudaRuntimeOptions {
  profiler::Optimizer optimizer = profiler::Optimizer::Sgd;
  /// Graph device d runs on CUDA device devices[d]; empty: device d on CUDA device d.
  std::vector<int> devices;
  bool allow_tf32 = false;           // as kernels::CudaBackendOptions (match the profile)
  bool benchmark_algorithms = true;  // as kernels::CudaBackendOptions
  /// Free memory each GPU keeps while kernels are prepared (see cuda_setup_policy.hpp).
  Bytes memory_reserve = kDefaultCudaMemoryReserve;
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
