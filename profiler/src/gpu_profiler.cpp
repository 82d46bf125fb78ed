// profile_model_on_gpu: device query, one CUPTI tracer, one CUDA backend, and the measurement
// discipline of measure_op_phases for every distinct op signature (CUDA builds only).
#include "parasim/profiler/gpu_profiler.hpp"

#include <map>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti.h>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cublas_library.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"
#include "parasim/profiler/profile_cost_model.hpp"

namespace parasim::profiler {
namespace {

int attribute_or_zero(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

PhaseStats to_phase_stats(const PhaseStatistics& s) {
  PhaseStats p;
  p.min_ns = s.min_ns;
  p.median_ns = s.median_ns;
  p.max_ns = s.max_ns;
  p.launches = s.launches;
  p.reps = s.repetitions;
  return p;
}

struct SignatureGroup {
  models::OpId representative;
  std::vector<std::string> names;
};

/// Distinct signatures of the ops that do any work, in topological order.
std::vector<SignatureGroup> group_by_signature(const models::Model& model) {
  std::vector<SignatureGroup> groups;
  std::map<std::string, std::size_t> index;
  for (models::OpId v : model.topological_order()) {
    const models::Op& op = model.op(v);
    if (!op_has_phase(op, Phase::Forward)) continue;  // input, reshape: nothing to time
    auto [it, fresh] = index.emplace(op.signature(), groups.size());
    if (fresh) groups.push_back({v, {}});
    // A shared weight's user (a tied embedding) has no update phase: the owner is measured.
    if (op.params > 0 && model.op(groups[it->second].representative).params == 0) groups[it->second].representative = v;
    groups[it->second].names.push_back(op.name);
  }
  return groups;
}

}  // namespace

GpuDeviceInfo query_gpu_device(int device) {
  kernels::cuda::require_cuda_device(device);
  GpuDeviceInfo info;
  info.index = device;
  cudaDeviceProp prop{};
  PARASIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  info.name = prop.name;
  info.kind = device_kind_from_cuda_name(info.name);
  info.compute_capability_major = prop.major;
  info.compute_capability_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.memory = static_cast<Bytes>(prop.totalGlobalMem);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) info.pci_bus_id = bus_id;
  PARASIM_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  PARASIM_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  info.cudnn_version = static_cast<std::int64_t>(cudnnGetVersion());
  int major = 0, minor = 0, patch = 0;
  PARASIM_CUBLAS_CHECK(kernels::cublas::get_property(MAJOR_VERSION, &major));
  PARASIM_CUBLAS_CHECK(kernels::cublas::get_property(MINOR_VERSION, &minor));
  PARASIM_CUBLAS_CHECK(kernels::cublas::get_property(PATCH_LEVEL, &patch));
  info.cublas_version = major * 10000 + minor * 100 + patch;
  std::uint32_t cupti = 0;
  if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS) info.cupti_api_version = static_cast<int>(cupti);
  info.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, device);
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, device);
  info.memory_bus_width_bits = attribute_or_zero(cudaDevAttrGlobalMemoryBusWidth, device);
  return info;
}

Profile profile_model_on_gpu(const models::Model& model, const GpuProfileOptions& options,
                             std::vector<std::string>* warnings) {
  if (options.plan.warmup < 0 || options.plan.repetitions < 1) {
    throw InputError("GPU profiling: expected --warmup >= 0 and --repetitions >= 1, found " +
                     std::to_string(options.plan.warmup) + " and " + std::to_string(options.plan.repetitions));
  }
  // Device first: without a GPU, CUPTI and the backend have nothing to attach to.
  const GpuDeviceInfo gpu = query_gpu_device(options.device);
  // The tracer before the backend, so the backend's context is traced from its creation.
  std::unique_ptr<ActivitySource> source = make_cupti_activity_source();
  CudaBackendOptions backend_options;
  backend_options.allow_tf32 = options.allow_tf32;
  backend_options.benchmark_algorithms = options.benchmark_algorithms;
  backend_options.workspace_limit = options.workspace_limit;
  std::unique_ptr<KernelBackend> backend = make_cuda_kernel_backend(options.device, nullptr, backend_options);

  Profile p;
  p.created = utc_now_iso8601();
  p.backend = "cuda";
  p.source = CostSource::MeasuredGpu;
  p.device = to_profile_device_info(gpu);
  p.model = model.name();
  p.batch = model.batch();
  p.dtype = model.dtype();
  p.optimizer = options.optimizer;
  p.repetitions = options.plan.repetitions;
  p.warmup = options.plan.warmup;

  const std::vector<SignatureGroup> groups = group_by_signature(model);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    throw_if_interrupted();  // Ctrl-C between ops
    const models::Op& op = model.op(groups[i].representative);
    ProfileEntry e;
    e.names = groups[i].names;
    e.kind = models::to_string(op.kind);
    e.signature = op.signature();
    e.batch_key = batch_key(op);
    e.batch = op_batch(op);
    try {
      std::unique_ptr<OpKernel> kernel = backend->prepare(op, options.optimizer);
      std::array<bool, 4> expected{};
      for (Phase phase : kPhases) expected[phase_index(phase)] = op_has_phase(op, phase);
      const OpPhaseMeasurement m =
          measure_op_phases(*kernel, *backend, *source, options.plan, static_cast<std::uint32_t>(i), expected);
      for (Phase phase : kPhases)
        if (op_has_phase(op, phase)) e.set(phase, to_phase_stats(m.phases[phase_index(phase)]));
      e.note = kernel->note();
      if (!m.reliable) {
        e.note = kUnreliablePrefix + m.reliability_note + (e.note.empty() ? "" : "; " + e.note);
        if (warnings) warnings->push_back(op.name + ": " + m.reliability_note);
      }
    } catch (const RuntimeError& err) {
      // Same convention as the CPU profiler: an entry without phases, the reason in its note.
      e.note = std::string("not measured: ") + err.what();
      if (warnings) warnings->push_back(op.name + ": " + err.what());
      // A sticky device error (illegal address, launch failure) poisons the context: stop here.
      try {
        backend->synchronize();
      } catch (const RuntimeError& sticky) {
        throw RuntimeError("GPU profiling stopped at " + op.name + ": the device is unusable after \"" + err.what() +
                           "\": " + sticky.what());
      }
    }
    p.ops.push_back(std::move(e));
    if (options.on_progress) options.on_progress(i + 1, groups.size());
  }
  // Mostly unreliable means the attribution itself failed: no profile rather than zeros.
  (void)check_profile_reliability(p);
  return p;
}

}  // namespace parasim::profiler
