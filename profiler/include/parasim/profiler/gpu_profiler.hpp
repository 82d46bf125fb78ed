// Measuring per-op costs on a real GPU: every distinct op signature of a model is prepared on
// the CUDA kernel backend, warmed up, then each phase (fwd, bwd_data, bwd_weight, update) is run
// N times, each run tagged with its own external correlation id so CUPTI's kernel records can be
// attributed to it. The cost of a phase is the median over repetitions of the summed durations
// of its kernels and copies (docs/gpu_profiling.md explains why the sum and not the wall span).
//
// The measurement loop (measure_op_phases) and the device-name mapping are plain C++ and build
// everywhere; query_gpu_device / profile_model_on_gpu exist only in builds with CUDA
// (PARASIM_HAVE_CUDA) and throw RuntimeError("no CUDA device: ...") on a machine without a GPU.
//
// Example:
//   #if PARASIM_HAVE_CUDA
//   GpuProfileOptions opt;  opt.device = 0;  opt.plan.repetitions = 10;
//   std::vector<std::string> warnings;
//   Profile p = profile_model_on_gpu(build_zoo_model("resnet50", {.batch = 32}), opt, &warnings);
//   save_profile(p, "traces/h200/resnet50-b32-fp32.json");
//   #endif
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/hardware/cuda_device_name.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/profiler/cupti_activity.hpp"
#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {

// The kernels the profiler times are the kernels component's; profiler:: keeps their names.
using kernels::CudaBackendOptions;
using kernels::KernelBackend;
using kernels::make_cuda_kernel_backend;
using kernels::OpKernel;

/// How many times to run each phase.
struct MeasurementPlan {
  int warmup = 3;        // untimed runs of all four phases (caches, clocks, lazy module loading)
  int repetitions = 10;  // timed runs of each phase
};

/// One op's measured phases, indexed by Phase (kPhases order).
struct OpPhaseMeasurement {
  std::array<PhaseStatistics, 4> phases;
  bool reliable = true;
  std::string reliability_note;        // why not reliable ("" when reliable)
  std::uint64_t unattributed_records = 0;  // device records inside the timed window without a range
};

/// The measurement discipline, independent of the vendor: warm up (all phases `warmup` times),
/// synchronize, discard the activity so far (warm-up and algorithm search), then for each
/// repetition and each phase: push a fresh external id, run the phase, pop, synchronize (each
/// phase starts on an idle device); finally flush and attribute. `op_index` only labels ranges.
/// `expected` says which phases the op has (op_has_phase): a repetition of an expected phase
/// with no device activity attributed to it, or device records in the timed window without an
/// external id, mean the correlation join failed, and the measurement is marked unreliable (a
/// 0 ns phase would otherwise pass as a measurement).
OpPhaseMeasurement measure_op_phases(OpKernel& kernel, KernelBackend& backend, ActivitySource& source,
                                     const MeasurementPlan& plan, std::uint32_t op_index = 0,
                                     const std::array<bool, 4>& expected = {true, true, true, true});

/// The prefix of an unreliable entry's note ("UNRELIABLE: why").
inline constexpr const char* kUnreliablePrefix = "UNRELIABLE: ";
/// Fails loudly when most measured entries of a GPU profile are unreliable (the note starts with
/// kUnreliablePrefix): RuntimeError naming the count and the first reason, because such a profile
/// would feed near-zero costs to every simulation. Entries without phases (not measured) are not
/// counted. Returns the number of unreliable entries otherwise.
std::size_t check_profile_reliability(const Profile& profile);

using hardware::device_kind_from_cuda_name;  // hardware/cuda_device_name.hpp

/// What the profile records about the GPU and its software stack.
struct GpuDeviceInfo {
  int index = 0;
  std::string name;            // cudaDeviceProp::name, "NVIDIA H200"
  std::string kind;            // device_kind_from_cuda_name(name)
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
  Bytes memory = 0;
  std::string pci_bus_id;
  int driver_version = 0;      // cudaDriverGetVersion: 13000 = 13.0
  int runtime_version = 0;     // cudaRuntimeGetVersion
  std::int64_t cudnn_version = 0;  // cudnnGetVersion: 91900 = 9.19.0
  int cublas_version = 0;      // major*10000 + minor*100 + patch (cublasGetProperty)
  int cupti_api_version = 0;   // cuptiGetVersion
  int sm_clock_khz = 0;        // peak, 0 if not readable
  int memory_clock_khz = 0;    // peak, 0 if not readable
  int memory_bus_width_bits = 0;
};

/// "13.0" from 13000 (CUDA's version encoding); "9.19.0" from 91900 for cuDNN/cuBLAS style.
std::string format_cuda_version(int version);
std::string format_library_version(std::int64_t version);

/// Device properties and software versions (CUDA builds only). Throws RuntimeError
/// "no CUDA device: <reason>" when there is no usable GPU or driver.
GpuDeviceInfo query_gpu_device(int device);

struct GpuProfileOptions {
  int device = 0;
  MeasurementPlan plan;
  Optimizer optimizer = Optimizer::Sgd;
  bool allow_tf32 = false;          // fp32 GEMMs/convolutions on TF32 tensor cores (see CudaBackendOptions)
  bool benchmark_algorithms = true; // cudnnFind* (time every algorithm) rather than the heuristic pick
  Bytes workspace_limit = 1 * GiB;  // cuDNN/cuBLAS workspace cap
  /// Called after each signature with (done, total); the CLI draws its progress bar with it.
  std::function<void(std::size_t, std::size_t)> on_progress;
};

/// The driver's version in a /proc/driver/nvidia/version line: the first dotted number after
/// "Kernel Module" ("... Kernel Module  580.65.06 ...", "... Open Kernel Module for x86_64
/// 580.159.04 ..."); "" when there is none.
std::string nvidia_driver_version_from_nvrm(std::string_view line);

/// The profile's device block from the queried properties (driver as the kernel module's version
/// when /proc/driver/nvidia/version is readable, else the driver's CUDA API version).
DeviceInfo to_profile_device_info(const GpuDeviceInfo& gpu);

/// Profiles every distinct op signature of `model` on GPU `options.device` (CUDA builds only) and
/// returns a parasim.profile/1 Profile (source measured-gpu, backend "cuda"; `command` is left for
/// the caller). Phases are those op_has_phase() says exist. Entries whose measurement lost
/// records say "UNRELIABLE: ..." in their note. An op whose kernels cannot be prepared
/// (unsupported shape, out of memory) is left out (the cost model falls back to the roofline for
/// it) and the reason is appended to `warnings` when given. Throws RuntimeError when there is no
/// GPU ("no CUDA device: ..."), when CUPTI is held by another profiler, or when the device fails
/// unrecoverably.
Profile profile_model_on_gpu(const models::Model& model, const GpuProfileOptions& options,
                             std::vector<std::string>* warnings = nullptr);

}  // namespace parasim::profiler
