// The host CPU: /proc/cpuinfo and sysfs detection, a timed clock where neither says, and the
// canonical "cpu-<model>" kind. The roofline device built from it is the profiler's (cpu_host.cpp).
#include "parasim/kernels/host_cpu.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace parasim::kernels {

double HostCpu::peak_gflops(int threads) const {
  return std::max(threads, 1) * (mhz / 1e3) * simd_fp32_lanes * 2.0 * fma_units;
}

namespace {

bool has_flag(const std::string& flags, const std::string& flag) {
  std::istringstream in(flags);
  std::string f;
  while (in >> f)
    if (f == flag) return true;
  return false;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

double measure_host_clock_mhz() {
#if defined(__x86_64__)
  static const double mhz = [] {
    // 8 dependent adds per iteration: 8 cycles, whatever the loop's own (parallel) overhead.
    const auto chain = [](std::uint64_t iterations) {
      std::uint64_t x = 0;
      for (std::uint64_t i = 0; i < iterations; ++i)
        asm volatile(
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
            : "+r"(x));
      return x;
    };
    constexpr std::uint64_t kIterations = 2'000'000;  // 16 M cycles: ~5 ms at 3 GHz
    chain(kIterations / 4);                           // let the core leave its idle clock
    double best_ns = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::uint64_t x = chain(kIterations);
      const auto t1 = std::chrono::steady_clock::now();
      if (x != 8 * kIterations) return 0.0;
      best_ns =
          std::min(best_ns, static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
    }
    return 8.0 * static_cast<double>(kIterations) / std::max(best_ns, 1.0) * 1e3;
  }();
  return mhz;
#else
  return 0;
#endif
}

HostCpu detect_host_cpu() { return detect_host_cpu_from("/proc/cpuinfo", "/sys/devices/system/cpu/cpu0"); }

HostCpu detect_host_cpu_from(const std::string& cpuinfo, const std::string& cpu0) {
  HostCpu h;
  std::ifstream in(cpuinfo);
  std::string line, flags;
  int processors = 0;
  bool first_core_done = false;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (processors > 0) first_core_done = true;  // blank line ends one processor's block
      continue;
    }
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "processor") ++processors;
    if (first_core_done) continue;
    if (key == "model name") h.model_name = value;
    else if (key == "cpu MHz") {
      h.mhz = std::max(1.0, std::atof(value.c_str()));
      h.clock_source = "/proc/cpuinfo";
    } else if (key == "vendor_id") h.amd = value.find("AMD") != std::string::npos;
    else if (key == "flags") flags = value;
  }
  h.logical_cpus = std::max(processors, 1);
  h.avx512 = has_flag(flags, "avx512f");
  h.avx512_bf16 = has_flag(flags, "avx512_bf16");
  h.simd_fp32_lanes = h.avx512 ? 16 : has_flag(flags, "avx2") ? 8 : 4;
  h.fma_units = has_flag(flags, "fma") || h.avx512 ? 2 : 1;
  if (h.clock_source == "default") {
    // No "cpu MHz" line: the highest clock cpufreq allows (kHz), else time it.
    std::ifstream max_freq(cpu0 + "/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (max_freq >> khz && khz > 0) {
      h.mhz = khz / 1e3;
      h.clock_source = "cpufreq";
    } else if (const double measured = measure_host_clock_mhz(); measured > 0) {
      h.mhz = measured;
      h.clock_source = "measured";
    }
  }
  // Largest cache of cpu0 from sysfs ("32768K"); keep the default when there is none.
  Bytes largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream size_file(cpu0 + "/cache/index" + std::to_string(index) + "/size");
    std::string size;
    if (!(size_file >> size) || size.empty()) continue;
    Bytes bytes = std::atoll(size.c_str());
    if (size.back() == 'K') bytes *= KiB;
    else if (size.back() == 'M') bytes *= MiB;
    largest = std::max(largest, bytes);
  }
  if (largest > 0) h.last_level_cache = largest;
  return h;
}

std::string host_device_kind(const HostCpu& host) {
  std::string name = host.model_name;
  for (const char* noise : {"(R)", "(TM)", "(tm)", "CPU @"}) {
    for (auto pos = name.find(noise); pos != std::string::npos; pos = name.find(noise))
      name.erase(pos, std::string(noise).size());
  }
  std::string out = "cpu-";
  bool dash = false;
  for (char ch : trim(name)) {
    const bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.';
    if (keep) {
      out += ch;
      dash = false;
    } else if (!dash) {
      out += '-';
      dash = true;
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace parasim::kernels
