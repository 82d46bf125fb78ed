// The roofline constants of GPUs (from their datasheet spec). Every constant is explained in
// docs/profiler.md; the host CPU's are in cpu_host.cpp.
#include "parasim/profiler/roofline.hpp"

namespace parasim::profiler {

// GPU constants (docs/profiler.md "Roofline constants"):
//   launch: cudaLaunchKernel plus framework dispatch, ~5 us per kernel in eager PyTorch.
//   fill:   2 us of full-device work before ramp-up and the last partial wave stop dominating
//           (assumed; it makes a 512^3 FP32 GEMM on V100 run at ~11 TFLOP/s, close to cuBLAS).
//   conv 0.65, GEMM 0.75 of the tensor/FP32 peak; memory 0.80 of HBM peak.
RooflineDevice gpu_roofline_device(const hardware::DeviceSpec& spec) {
  RooflineDevice d;
  d.spec = spec;
  d.launch_overhead_ns = 5000;
  d.fill_time_ns = 2000;
  d.eff_conv = 0.65;
  d.eff_gemm = 0.75;
  d.eff_mem = 0.80;
  d.is_cpu = false;
  d.kernels = hardware::kernel_model(spec);
  d.launch_overhead_ns = d.kernels->launch_overhead_ns;
  // Shapeless GEMMs/convolutions run at the best-shape fraction, like the model's large tiles.
  d.eff_gemm = d.kernels->tensor_core_fraction;
  d.eff_conv = d.kernels->tensor_core_fraction;
  return d;
}

}  // namespace parasim::profiler
