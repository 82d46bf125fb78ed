// Describing a GPU without CUDA headers: device names -> parasim device kinds, CUDA's integer
// version encodings -> text, and the profile's device block. Builds and is tested everywhere.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "parasim/hardware/device_spec.hpp"
#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '-' || c == '_' || c == '(' || c == ')' || c == ',') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

bool is_vendor_word(const std::string& w) {
  return w == "nvidia" || w == "tesla" || w == "geforce" || w == "quadro" || w == "rtx";
}

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

std::string device_kind_from_cuda_name(const std::string& cuda_device_name) {
  std::vector<std::string> words;
  for (auto& w : split_words(lower(cuda_device_name)))
    if (!is_vendor_word(w)) words.push_back(std::move(w));

  // 1. The name without the vendor prefix may already be a canonical kind: "V100-SXM2-16GB".
  std::string dashed;
  for (const auto& w : words) dashed += (dashed.empty() ? "" : "-") + w;
  if (auto spec = hardware::find_device_spec(dashed)) return spec->kind;
  // 2. Otherwise the longest run of leading words that is a known alias: "titan x pascal" ->
  //    "titanxpascal", "h100 80gb hbm3" -> "h100", "h200" -> "h200". A form factor the run drops
  //    ("h100 pcie" -> "h100") is another part with other specs: no match rather than the SXM's.
  auto is_form_factor = [](const std::string& w) { return w == "pcie" || w == "nvl" || w == "sxm" || w == "pci"; };
  for (std::size_t n = words.size(); n > 0; --n) {
    std::string joined;
    for (std::size_t i = 0; i < n; ++i) joined += words[i];
    if (std::any_of(words.begin() + static_cast<std::ptrdiff_t>(n), words.end(), is_form_factor)) continue;
    if (auto spec = hardware::find_device_spec(joined)) return spec->kind;
  }
  // 3. Unknown GPU: keep the name, recognizably CUDA, with no spaces.
  std::string kind = "cuda";
  for (const auto& w : split_words(cuda_device_name)) kind += "-" + w;
  return kind;
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
  d.compute_capability = std::to_string(gpu.compute_capability_major) + "." + std::to_string(gpu.compute_capability_minor);
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
