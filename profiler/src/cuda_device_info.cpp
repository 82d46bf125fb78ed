// Describing a GPU without CUDA headers: CUDA's integer version encodings -> text and the
// profile's device block (device names -> kinds: hardware/cuda_device_name.hpp). Builds everywhere.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {
namespace {

/// The kernel module's version ("580.65.06") from /proc/driver/nvidia/version; "" if unreadable.
std::string nvidia_kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return {};
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." (or "Open Kernel Module")
  const auto at = line.find("Kernel Module");
  if (at == std::string::npos) return {};
  std::istringstream words(line.substr(at + std::string("Kernel Module").size()));
  std::string version;
  words >> version;
  return version;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

}  // namespace

std::string format_cuda_version(int version) {
  // CUDA encodes 1000 * major + 10 * minor (13000 = 13.0, 12040 = 12.4).
  std::ostringstream os;
  os << version / 1000 << "." << (version % 1000) / 10;
  return os.str();
}

std::string format_library_version(std::int64_t version) {
  // cuDNN 9 and parasim's cuBLAS encoding: 10000 * major + 100 * minor + patch (91900 = 9.19.0).
  std::ostringstream os;
  os << version / 10000 << "." << (version % 10000) / 100 << "." << version % 100;
  return os.str();
}

DeviceInfo to_profile_device_info(const GpuDeviceInfo& gpu) {
  DeviceInfo d;
  d.name = gpu.name;
  d.kind = gpu.kind;
  d.compute_capability =
      std::to_string(gpu.compute_capability_major) + "." + std::to_string(gpu.compute_capability_minor);
  d.driver = nvidia_kernel_module_version();
  if (d.driver.empty()) d.driver = "CUDA driver API " + format_cuda_version(gpu.driver_version);
  d.cuda = format_cuda_version(gpu.runtime_version);
  d.cudnn = format_library_version(gpu.cudnn_version);
  d.cublas = format_library_version(gpu.cublas_version);
  d.sm_clock_mhz = gpu.sm_clock_khz / 1000;
  d.mem_clock_mhz = gpu.memory_clock_khz / 1000;
  d.host = host_name();
  return d;
}

}  // namespace parasim::profiler
