// Real kernels for one op, shared by the profiler (which times them) and the executor (which
// runs them inside a training step). One backend per device (and, for CUDA, per stream).
//
// Example:
//   auto backend = make_cpu_kernel_backend();            // oneDNN on the host
//   auto k = backend->prepare(model.op(v), Optimizer::Sgd);  // allocate tensors, create primitives
//   k->run(Phase::Forward); k->run(Phase::BackwardData); k->run(Phase::BackwardWeight);
//   backend->synchronize();
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "parasim/common/optimizer.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::kernels {

/// The prepared kernels of one op: buffers allocated, primitives/algorithms chosen.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  /// Executes (CPU) or enqueues (CUDA, on the backend's stream) one phase. Phases the op does
  /// not have (BackwardWeight of a ReLU, Update of a parameter-free op) do nothing.
  virtual void run(Phase phase) = 0;
  /// Free-form note for the profile, e.g. the cuDNN algorithm chosen ("fwd=IMPLICIT_PRECOMP_GEMM").
  virtual std::string note() const { return {}; }
  /// Kernels (GPU) or primitive calls / reference loops (CPU) one run of `phase` launches;
  /// 0 for a phase that does nothing. Recorded as "launches" in profiles.
  virtual std::int64_t launches(Phase phase) const {
    (void)phase;
    return 1;
  }
};

class KernelBackend {
 public:
  virtual ~KernelBackend() = default;
  virtual std::unique_ptr<OpKernel> prepare(const models::Op& op, Optimizer opt) = 0;
  /// Waits until everything enqueued has finished.
  virtual void synchronize() = 0;
  /// "cpu-onednn", "cuda:0".
  virtual std::string name() const = 0;
  /// Device kind for profiles ("H200-SXM-141GB" from the CUDA device name, "cpu-<model name>").
  virtual std::string device_kind() const = 0;
};

/// oneDNN on the host (reference loops where oneDNN has no primitive). `threads` is the number of
/// OpenMP threads oneDNN may use for this backend's kernels, set on the calling thread at every
/// run (the executor pins one device per core, hence 1). fp32 always; bf16 models run in bf16 on
/// hosts with AVX512-BF16, otherwise in fp32 (the note says so); fp16 always runs in fp32.
/// Built without oneDNN (PARASIM_HAVE_DNNL=0), prepare() throws RuntimeError.
std::unique_ptr<KernelBackend> make_cpu_kernel_backend(int threads = 1);
/// "2.6.3" (the oneDNN library actually loaded), "" without oneDNN: what CPU profiles record.
std::string onednn_version();

}  // namespace parasim::kernels
