// Peak numbers of the accelerators parasim knows, used by the roofline cost model and for
// device memory capacity. Values are vendor datasheet peaks (dense, no sparsity); sources are
// listed per entry in device_spec.cpp.
//
// Example:
//   const DeviceSpec& v100 = device_spec("V100-SXM2-32GB");
//   double tf = v100.peak_tflops(DType::F16);   // 125 (tensor cores)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/dtype.hpp"
#include "parasim/common/units.hpp"

namespace parasim {
struct Calibration;  // parasim/common/calibration.hpp
}  // namespace parasim

namespace parasim::hardware {

struct DeviceSpec {
  std::string kind;           // canonical name, e.g. "V100-SXM2-32GB"
  std::string arch;           // "volta", "pascal", "ampere", "hopper", "blackwell"
  double fp32_tflops = 0;     // non-tensor FP32 peak
  double tf32_tflops = 0;     // tensor-core TF32 (0 = not available)
  double fp16_tflops = 0;     // best FP16 peak (tensor cores where present)
  double bf16_tflops = 0;     // best BF16 peak (0 = not supported; falls back to fp32)
  GBps mem_bandwidth;         // HBM/GDDR peak
  Bytes memory = 0;           // device memory
  int sm_count = 0;
  std::string source;         // where the numbers come from
  double fp8_tflops = 0;      // FP8 tensor-core dense peak (0 = no FP8 tensor cores: before Hopper)
  std::string fp8_source;     // where that number comes from

  /// Peak FLOP/s (not MAC/s) in TFLOP/s for matrix math in `dtype`. FP32 uses plain FP32 peak
  /// (frameworks default to no TF32 for convolutions on older stacks); BF16 falls back to FP32
  /// where the chip has no BF16 path. FP8: the FP8 tensor-core peak (FP8 GEMMs only; the other
  /// ops of an fp8 model run in bf16).
  double peak_tflops(DType dtype) const;
  bool supports_fp8() const { return fp8_tflops > 0; }
  /// Whether this GPU's architecture is `oldest` or a later one (pascal, volta, ampere, hopper,
  /// blackwell, in that order): a feature of one generation carries to the next. False for an
  /// architecture not in that list (a CPU).
  bool arch_at_least(std::string_view oldest) const;
};

/// The SMs a large NCCL collective takes from this GPU while it runs: one CTA per channel, each
/// holding an SM's registers (so the compute kernels it overlaps run on the others). Ring and tree
/// collectives use `ring_tree` channels, NVLink SHARP (NVLS) `nvls`; 0 where NCCL has no NVLS.
struct NcclChannels {
  int ring_tree = 0;
  int nvls = 0;
  std::string_view source;
};
/// By part: SXM parts by generation (NCCL's logged channel counts), PCIe and consumer cards 2.
NcclChannels nccl_channels(const DeviceSpec& spec);

/// All known devices, in a fixed order.
const std::vector<DeviceSpec>& device_specs();
/// The memory variants of `kind`'s part: the known kinds that share its name up to the memory tag
/// (A100-SXM4-80GB -> A100-SXM4-40GB, A100-SXM4-80GB), in table order, `kind` among them.
std::vector<std::string> memory_variants(const std::string& kind);
/// Looks up by canonical kind or alias ("v100", "h200", "titanx", "gtx1080", ...).
/// Throws InputError listing the known kinds when unknown.
const DeviceSpec& device_spec(const std::string& kind_or_alias);
std::optional<DeviceSpec> find_device_spec(const std::string& kind_or_alias);
/// InputError (exit 2) naming the device when `dtype` is fp8 and `kind` has no FP8 tensor cores;
/// kinds without a spec (CPUs) are refused too.
void require_dtype_support(const std::string& kind, DType dtype);
/// The calibration with its kernel factors keyed by canonical kind ("a100" -> "A100-SXM4-80GB");
/// InputError naming the file and the key when a kind is neither a known device, "cpu..." nor "*".
Calibration with_canonical_kinds(const Calibration& c);

}  // namespace parasim::hardware
