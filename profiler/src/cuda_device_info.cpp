// Describing a GPU without CUDA headers: CUDA's integer version encodings -> text and the
// profile's device block (device names -> kinds: hardware/cuda_device_name.hpp). Builds everywhere.
#include <unistd.h>

#include <cctype>
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
  return nvidia_driver_version_from_nvrm(line);
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

}  // namespace

std::string nvidia_driver_version_from_nvrm(std::string_view line) {
  const auto at = line.find("Kernel Module");
  if (at == std::string_view::npos) return {};
  std::istringstream words(std::string(line.substr(at + std::string_view("Kernel Module").size())));
  for (std::string word; words >> word;)
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos)
      return word;
  return {};
}

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
