// The host CPU as the CPU kernels see it: model, clock, SIMD width and caches from /proc/cpuinfo
// and sysfs, and its canonical device kind. The profiler turns it into a roofline device
// (profiler/roofline.hpp: cpu_roofline_device).
#pragma once

#include <string>

#include "parasim/common/units.hpp"

namespace parasim::kernels {

/// The host CPU, from /proc/cpuinfo (Linux) or defaults elsewhere.
struct HostCpu {
  std::string model_name = "unknown CPU";  // "AMD EPYC 9654 96-Core Processor"
  int logical_cpus = 1;
  double mhz = 2000;  // clock of core 0; where it came from: clock_source
  /// "/proc/cpuinfo" (cpu MHz), "cpufreq" (cpuinfo_max_freq), "measured" (a dependent-add loop,
  /// when neither file says: some VMs and AMD EPYC Zen 5 hosts) or "default" (a guess: no
  /// x86 loop to time it with). Peaks from a "default" clock are not measurements.
  std::string clock_source = "default";
  int simd_fp32_lanes = 4;  // 16 with AVX-512, 8 with AVX2, 4 with SSE
  int fma_units = 2;        // FMA pipes per core (assumed 2 on x86 since Haswell/Zen)
  bool avx512 = false;
  bool avx512_bf16 = false;
  bool amd = false;
  Bytes last_level_cache = 32 * MiB;  // largest cache of cpu0 (sysfs), shared by its cores
  /// Peak fp32 GFLOP/s of `threads` cores: threads * GHz * lanes * 2 (FMA) * fma_units, at the
  /// nominal clock. An estimate: turbo clocks exceed it, and Zen 4 splits 512-bit FMAs in two.
  double peak_gflops(int threads) const;
};
HostCpu detect_host_cpu();
/// detect_host_cpu() reading `cpuinfo` (a /proc/cpuinfo file) and `cpu0` (a sysfs
/// /sys/devices/system/cpu/cpu0 folder) instead: the clock is cpu MHz, else
/// cpu0/cpufreq/cpuinfo_max_freq, else measure_host_clock_mhz().
HostCpu detect_host_cpu_from(const std::string& cpuinfo, const std::string& cpu0);
/// The calling core's clock in MHz, timed with a chain of dependent integer adds (one per
/// cycle on every x86 core since the P6): ~5 ms, measured once per process and cached.
/// 0 where there is no such loop (not x86-64).
double measure_host_clock_mhz();

/// The canonical device kind of the host for profiles and cost lookups: "cpu-<model name>".
std::string host_device_kind(const HostCpu& host);

}  // namespace parasim::kernels
