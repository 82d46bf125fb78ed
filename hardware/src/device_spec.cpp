#include "parasim/hardware/device_spec.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "parasim/common/assert.hpp"
#include "parasim/common/calibration.hpp"
#include "parasim/common/error.hpp"

namespace parasim::hardware {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == '_' || c == ' '; }), s.end());
  return s;
}

struct Alias {
  const char* alias;
  const char* kind;
};

// Aliases are compared after lower-casing and removing '-', '_' and ' '.
constexpr Alias kAliases[] = {
    {"v100", "V100-SXM2-32GB"},         {"v100sxm2", "V100-SXM2-32GB"}, {"v10016gb", "V100-SXM2-16GB"},
    {"p100", "P100-SXM2-16GB"},         {"a100", "A100-SXM4-80GB"},     {"a10040gb", "A100-SXM4-40GB"},
    {"h100", "H100-SXM5-80GB"},         {"h200", "H200-SXM-141GB"},     {"titanx", "TITAN-X-Pascal"},
    {"titanxpascal", "TITAN-X-Pascal"}, {"gtx1080", "GTX-1080"},        {"1080", "GTX-1080"},
    {"gtx1080ti", "GTX-1080-Ti"},       {"1080ti", "GTX-1080-Ti"},      {"h100pcie", "H100-PCIe-80GB"},
    {"h100nvl", "H100-NVL-94GB"},       {"b200", "B200-SXM-180GB"},
};

std::vector<DeviceSpec> make_specs() {
  std::vector<DeviceSpec> v;
  // kind, arch, fp32, tf32, fp16, bf16, mem GB/s, memory, SMs, source
  v.push_back({"V100-SXM2-16GB", "volta", 15.7, 0, 125, 0, GBps{900}, 16 * GiB, 80,
               "NVIDIA Tesla V100 datasheet (SXM2): 15.7 TF FP32, 125 TF tensor, 900 GB/s HBM2", 0, ""});
  v.push_back({"V100-SXM2-32GB", "volta", 15.7, 0, 125, 0, GBps{900}, 32 * GiB, 80,
               "NVIDIA Tesla V100 datasheet (SXM2 32GB): 15.7 TF FP32, 125 TF tensor, 900 GB/s HBM2", 0, ""});
  v.push_back({"P100-SXM2-16GB", "pascal", 10.6, 0, 21.2, 0, GBps{732}, 16 * GiB, 56,
               "NVIDIA Tesla P100 datasheet (SXM2): 10.6 TF FP32, 21.2 TF FP16, 732 GB/s HBM2", 0, ""});
  v.push_back({"A100-SXM4-40GB", "ampere", 19.5, 156, 312, 312, GBps{1555}, 40 * GiB, 108,
               "NVIDIA A100 datasheet (SXM4 40GB): 19.5 TF FP32, 156 TF TF32, 312 TF FP16/BF16, 1555 GB/s", 0, ""});
  v.push_back({"A100-SXM4-80GB", "ampere", 19.5, 156, 312, 312, GBps{2039}, 80 * GiB, 108,
               "NVIDIA A100 datasheet (SXM4 80GB): 19.5 TF FP32, 156 TF TF32, 312 TF FP16/BF16, 2039 GB/s", 0, ""});
  v.push_back({"H100-SXM5-80GB", "hopper", 67, 494.7, 989.4, 989.4, GBps{3350}, 80 * GiB, 132,
               "NVIDIA H100 datasheet (SXM5): 67 TF FP32, 495 TF TF32, 989 TF FP16/BF16 dense, 3.35 TB/s", 1979,
               "NVIDIA H100 datasheet (SXM5): 3958 TF FP8 with sparsity, 1979 dense"});
  // The PCIe and NVL cards are other parts, not slower SXMs: fewer SMs or lower clocks, other memory.
  v.push_back({"H100-PCIe-80GB", "hopper", 51.2, 378, 756, 756, GBps{2000}, 80 * GiB, 114,
               "NVIDIA H100 datasheet (PCIe): 51 TF FP32, 378 TF TF32, 756 TF FP16/BF16 dense, 80 GB HBM2e at 2 TB/s",
               1513, "NVIDIA H100 datasheet (PCIe): 3026 TF FP8 with sparsity, 1513 dense"});
  v.push_back({"H100-NVL-94GB", "hopper", 60, 417.5, 835.5, 835.5, GBps{3900}, 94 * GiB, 132,
               "NVIDIA H100 NVL datasheet (per GPU): 60 TF FP32, 835 TF TF32 and 1671 TF FP16/BF16 with sparsity "
               "(half dense), 94 GB HBM3 at 3.9 TB/s",
               1670.5, "NVIDIA H100 NVL datasheet (per GPU): 3341 TF FP8 with sparsity, half dense"});
  // nvidia-smi reports 143771 MiB on H200 SXM.
  v.push_back({"H200-SXM-141GB", "hopper", 67, 494.7, 989.4, 989.4, GBps{4800}, 143771 * MiB, 132,
               "NVIDIA H200 datasheet (SXM): same Hopper compute as H100 SXM, 141 GB HBM3e at 4.8 TB/s", 1979,
               "NVIDIA H200 datasheet (SXM): 3958 TF FP8 with sparsity, 1979 dense"});
  // Blackwell: the HGX B200 figures at its 1,000 W configuration; nvidia-smi on an HGX B200 reports
  // 179 GB (the DGX B200 datasheet: 1,440 GB HBM3e for 8 GPUs; 192 GB physical per GPU).
  v.push_back({"B200-SXM-180GB", "blackwell", 80, 1100, 2250, 2250, GBps{8000}, 179 * GiB, 148,
               "HGX B200 at 1,000 W (glennklockwood.com/garden/processors/B200, from NVIDIA's Blackwell "
               "datasheet): 80 TF FP32, 1100 TF TF32, 2250 TF FP16/BF16 dense, 8 TB/s HBM3e; 148 SMs enabled",
               4500,
               "HGX B200 at 1,000 W: 9000 TF FP8 with sparsity, 4500 dense (DGX B200: 72 PFLOPS FP8 for 8 GPUs)"});
  // Pascal consumer parts: FP16 arithmetic runs at 1/64 of FP32, so FP16 gives no speed-up.
  v.push_back({"TITAN-X-Pascal", "pascal", 10.97, 0, 0.17, 0, GBps{480}, 12 * GiB, 28,
               "NVIDIA TITAN X (Pascal) specs: 3584 cores at 1531 MHz boost = 10.97 TF FP32, 480 GB/s GDDR5X", 0, ""});
  v.push_back({"GTX-1080", "pascal", 8.87, 0, 0.14, 0, GBps{320}, 8 * GiB, 20,
               "NVIDIA GeForce GTX 1080 specs: 2560 cores at 1733 MHz boost = 8.87 TF FP32, 320 GB/s GDDR5X", 0, ""});
  v.push_back({"GTX-1080-Ti", "pascal", 11.34, 0, 0.18, 0, GBps{484}, 11 * GiB, 28,
               "NVIDIA GeForce GTX 1080 Ti specs: 3584 cores at 1582 MHz boost = 11.34 TF FP32, 484 GB/s GDDR5X", 0,
               ""});
  return v;
}

}  // namespace

bool DeviceSpec::arch_at_least(std::string_view oldest) const {
  static constexpr std::array<std::string_view, 5> kOrder{"pascal", "volta", "ampere", "hopper", "blackwell"};
  const auto* mine = std::find(kOrder.begin(), kOrder.end(), arch);
  const auto* wanted = std::find(kOrder.begin(), kOrder.end(), oldest);
  PARASIM_ASSERT(wanted != kOrder.end());  // callers name one of kOrder
  return mine != kOrder.end() && mine >= wanted;
}

double DeviceSpec::peak_tflops(DType dtype) const {
  switch (dtype) {
    case DType::F32: return fp32_tflops;
    case DType::F16: return std::max(fp16_tflops, fp32_tflops);
    case DType::BF16: return bf16_tflops > 0 ? bf16_tflops : fp32_tflops;
    case DType::FP8: return fp8_tflops > 0 ? fp8_tflops : (bf16_tflops > 0 ? bf16_tflops : fp32_tflops);
  }
  return fp32_tflops;
}

NcclChannels nccl_channels(const DeviceSpec& spec) {
  // NCCL runs twice the channels its topology search finds (S. Jeaugey, NVIDIA/nccl#1041), and the
  // search finds about one ring per NVLink of the GPU; the counts below are what NCCL_DEBUG=INFO
  // logs at init on 8-GPU systems ("N coll channels, M nvls channels").
  const bool sxm = spec.kind.find("SXM") != std::string::npos;
  if (!sxm) return {2, 0, "NCCL over PCIe/shared memory logs 2 coll channels (NCCL_DEBUG=INFO, 2 GPUs without NVLink)"};
  if (spec.arch == "hopper" || spec.arch == "blackwell")
    return {24, 16,
            "NCCL_DEBUG=INFO on 8x H100 SXM (AWS p5.48xlarge): \"24 coll channels, 16 nvls channels\"; "
            "Blackwell borrows Hopper's (18 NVLinks per GPU on both)"};
  if (spec.arch == "ampere") return {24, 0, "NCCL_DEBUG=INFO on 8x A100 SXM4: \"24 coll channels, 0 nvls channels\""};
  if (spec.arch == "volta") return {12, 0, "NCCL_DEBUG=INFO on V100 SXM2/SXM3 with 6 NVLinks: \"12 coll channels\""};
  return {8, 0, "P100 SXM2: twice its 4 NVLinks (no log found; NCCL's two channels per searched ring)"};
}

const std::vector<DeviceSpec>& device_specs() {
  static const std::vector<DeviceSpec> specs = make_specs();
  return specs;
}

namespace {
// "A100-SXM4-80GB" -> "A100-SXM4-", the part before its memory tag ("80GB"); "" for a kind without
// one (GTX-1080, TITAN-X-Pascal).
std::string part_of(const std::string& kind) {
  const std::size_t dash = kind.rfind('-');
  if (dash == std::string::npos) return "";
  const std::string tag = kind.substr(dash + 1);
  const bool memory_tag = tag.size() > 2 && tag.ends_with("GB") &&
                          std::all_of(tag.begin(), tag.end() - 2, [](char c) { return c >= '0' && c <= '9'; });
  return memory_tag ? kind.substr(0, dash + 1) : "";
}
}  // namespace

std::vector<std::string> memory_variants(const std::string& kind) {
  const std::string part = part_of(kind);
  std::vector<std::string> kinds;
  for (const DeviceSpec& s : device_specs())
    if (s.kind == kind || (!part.empty() && part_of(s.kind) == part)) kinds.push_back(s.kind);
  return kinds;
}

namespace {

/// The table's entry for a kind or alias: the exact kind first (what presets and clusters name, once
/// per device: 5,128 lookups for a 641-node cluster), then any spelling of a kind or an alias.
const DeviceSpec* lookup_device_spec(const std::string& kind_or_alias) {
  for (const auto& s : device_specs())
    if (s.kind == kind_or_alias) return &s;
  const std::string key = lower(kind_or_alias);
  for (const auto& s : device_specs())
    if (lower(s.kind) == key) return &s;
  for (const auto& a : kAliases)
    if (a.alias == key)
      for (const auto& s : device_specs())
        if (s.kind == a.kind) return &s;
  return nullptr;
}

}  // namespace

std::optional<DeviceSpec> find_device_spec(const std::string& kind_or_alias) {
  if (const DeviceSpec* s = lookup_device_spec(kind_or_alias)) return *s;
  return std::nullopt;
}

const DeviceSpec& device_spec(const std::string& kind_or_alias) {
  if (const DeviceSpec* s = lookup_device_spec(kind_or_alias)) return *s;
  std::string known;
  for (const auto& s : device_specs()) known += (known.empty() ? "" : ", ") + s.kind;
  throw InputError("unknown device kind \"" + kind_or_alias + "\"; known kinds: " + known);
}

void require_dtype_support(const std::string& kind, DType dtype) {
  if (dtype != DType::FP8) return;
  const std::optional<DeviceSpec> spec = find_device_spec(kind);
  if (!spec || !spec->supports_fp8())
    throw InputError("--dtype fp8: device " + kind +
                     " has no FP8 tensor cores; FP8 matmuls need Hopper or later (H100, H200, B200)");
}

Calibration with_canonical_kinds(const Calibration& c) {
  Calibration out = c;
  out.kernels.clear();
  for (const auto& [kind, factors] : c.kernels) {
    std::string key = kind;
    if (kind != Calibration::kAllKinds && kind.rfind("cpu", 0) != 0) {
      const auto spec = find_device_spec(kind);
      if (!spec) {
        std::string known;
        for (const auto& s : device_specs()) known += s.kind + ", ";
        throw InputError(c.origin + ": $.kernels." + kind + ": expected a device kind (" + known +
                         "cpu-..., or * for every kind), found \"" + kind + "\"");
      }
      key = spec->kind;
    }
    if (!out.kernels.emplace(key, factors).second)
      throw InputError(c.origin + ": $.kernels." + kind + ": " + key + " is given twice (once by an alias)");
  }
  return out;
}

}  // namespace parasim::hardware
