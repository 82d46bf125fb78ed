// The host CPU as a roofline device: a STREAM-triad bandwidth probe and the CPU efficiency
// constants (docs/profiler.md). Detecting the host is the kernels' (kernels/src/host_cpu.cpp).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "parasim/profiler/roofline.hpp"

namespace parasim::profiler {

GBps measure_host_bandwidth(Bytes bytes_per_array, int reps) {
  const auto n = static_cast<std::size_t>(std::max<Bytes>(bytes_per_array / 4, 1024));
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  double best_ns = 1e300;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    const auto t1 = std::chrono::steady_clock::now();
    best_ns =
        std::min(best_ns, static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  // Keep the loop from being optimized away.
  volatile float sink = a[n / 2];
  (void)sink;
  return GBps{3.0 * 4.0 * static_cast<double>(n) / std::max(best_ns, 1.0)};
}

// CPU constants (assumed, then checked against oneDNN timings of ResNet-50 on the development
// host; docs/profiler.md): a primitive call or loop costs ~0.5 us; kernels pay ~0.5 us of fill
// time; single-threaded oneDNN convolutions reach ~0.65 and GEMMs ~0.7 of the FMA peak at the
// nominal clock; streaming loops ~0.7 of the assumed DRAM bandwidth (caches are not modelled).
RooflineDevice cpu_roofline_device(const HostCpu& host, int threads, GBps bandwidth) {
  threads = std::max(threads, 1);
  RooflineDevice d;
  d.spec.kind = host_device_kind(host);
  d.spec.arch = "cpu";
  d.spec.fp32_tflops = host.peak_gflops(threads) / 1e3;
  d.spec.tf32_tflops = 0;
  d.spec.fp16_tflops = 0;  // no fp16 math on the host: peak_tflops(F16) falls back to FP32
  d.spec.bf16_tflops = host.avx512_bf16 ? 2 * d.spec.fp32_tflops : 0;
  d.spec.mem_bandwidth = bandwidth.value > 0 ? bandwidth : GBps{std::min(200.0, 30.0 * threads)};
  d.spec.memory = 0;
  d.spec.sm_count = threads;
  d.spec.source = "host /proc/cpuinfo: " + host.model_name + ", " + std::to_string(threads) + " thread(s), " +
                  std::to_string(static_cast<int>(host.mhz)) + " MHz (" + host.clock_source + ")";
  d.launch_overhead_ns = 500;
  d.fill_time_ns = 500;
  d.eff_conv = 0.65;
  d.eff_gemm = 0.70;
  d.eff_mem = 0.70;
  d.is_cpu = true;
  return d;
}

}  // namespace parasim::profiler
