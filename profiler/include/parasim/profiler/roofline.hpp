// Analytical per-op costs from a device's datasheet peaks: the fallback when nothing was measured.
//
// One op phase is a short list of kernels (a convolution's forward is the convolution plus, with
// a bias, a bias-add; an LSTM's forward is one input GEMM plus a GEMM and a gate kernel per
// timestep). Each kernel costs
//
//   t = max( flops / (peak(dtype) * eff(flops)),  bytes / (mem_bw * eff_mem) ) + launch_overhead
//   eff(flops) = eff_max(class) * flops / (flops + f_half),   f_half = eff_max * peak * t_fill
//
// which is the same as saying every matrix kernel runs at eff_max of peak after paying t_fill of
// ramp-up and tail waves. The constants and their sources are in docs/profiler.md.
//
// Example:
//   RooflineCostModel roofline;                                   // every hardware::device_specs() kind + "cpu"
//   OpCost c = roofline.cost(op, "V100-SXM2-32GB", Optimizer::Adam);
//   std::cout << format_time(c.fwd) << " (" << to_string(c.source) << ")\n";   // "1.47 ms (roofline)"
#pragma once

#include <unordered_map>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/calibration.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/hardware/kernel_model.hpp"
#include "parasim/kernels/host_cpu.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::profiler {

/// How a GPU runs dot-product attention: Unfused materialises the score matrix (GEMM, softmax,
/// dropout, GEMM: what eager PyTorch and 2021-era Megatron-LM run); Flash is one fused kernel per
/// direction that never writes it, recomputing it in the backward, of the GPU's own generation
/// (FlashAttention-3 or cuDNN's on Hopper and newer, FlashAttention-2 on Ampere); Flash2 is the
/// same with FlashAttention-2-generation kernels (FlashAttention-2, xFormers) wherever they run,
/// which on Hopper reach about 60% of the rate (hardware::FusedAttention). Triton is MosaicML's
/// 2023 Triton FlashAttention (LLM Foundry's attn_impl: triton): FlashAttention-2's rates on the
/// whole score matrix, a causal mask saving nothing, as MosaicML's own tables time it.
enum class AttentionKernel : std::uint8_t { Unfused, Flash, Flash2, Triton };
std::string to_string(AttentionKernel a);  // "unfused", "flash", "flash2", "triton"
std::optional<AttentionKernel> parse_attention_kernel(std::string_view s);

/// How FP32 convolutions and matmuls run on GPUs with TF32 tensor cores (Ampere and newer).
/// PyTorch: cuDNN convolutions on TF32 (torch.backends.cudnn.allow_tf32, default true), matmuls in
/// FP32 (torch.backends.cuda.matmul.allow_tf32, default false since 1.12; true in 1.7-1.11).
/// Tf32: both on TF32 (TensorFlow >= 2.4, NVIDIA's "TF32" tables). Fp32: neither.
enum class Fp32Math : std::uint8_t { PyTorch, Tf32, Fp32 };
std::string to_string(Fp32Math m);  // "pytorch", "tf32", "fp32"
std::optional<Fp32Math> parse_fp32_math(std::string_view s);

/// The memory format of convolution activations. cuDNN's tensor-core convolutions work in NHWC:
/// given NCHW (PyTorch's default memory format) it transposes the input in and the output back
/// around every such kernel (NVIDIA, Convolutional Layers User's Guide, "Tensor layouts").
/// Nhwc: the framework keeps activations channels-last (torch.channels_last, TensorFlow's default).
enum class ConvLayout : std::uint8_t { Nchw, Nhwc };
std::string to_string(ConvLayout l);  // "nchw", "nhwc"
std::optional<ConvLayout> parse_conv_layout(std::string_view s);

/// How 16-bit training runs on GPUs. Native: every activation in the training dtype (Megatron-LM,
/// NeMo, DeepSpeed with fp16/bf16 modules). Autocast: eager torch.autocast over fp32 modules -
/// norms, the residual stream, embeddings and the loss in fp32, a cast kernel after each norm (its
/// output feeds a GEMM) and before the loss, each weight cast to 16 bits in the forward and its
/// gradient back in the backward (docs/fidelity.md).
enum class MixedPrecision : std::uint8_t { Native, Autocast };
std::string to_string(MixedPrecision m);  // "native", "autocast"
std::optional<MixedPrecision> parse_mixed_precision(std::string_view s);

/// The kernels a mixture-of-experts layer launches around its expert GEMMs (routing, token
/// permutation and un-permutation), as Megatron-Core runs them. Eager: its PyTorch defaults, an op
/// per kernel (core_r0.9.0: about 29 kernels forward and 20 backward per layer dropless; docs/models.md).
/// Fused router / fused permutation: Transformer Engine's fused top-k and auxiliary-loss kernels
/// (--moe-router-fusion) and its permute and un-permute kernels (--moe-permute-fusion).
struct MoeKernels {
  bool fused_router = false;
  bool fused_permute = false;
  bool operator==(const MoeKernels&) const = default;
};
std::string to_string(MoeKernels m);  // "eager", "fused", "fused-router", "fused-permute"
std::optional<MoeKernels> parse_moe_kernels(std::string_view s);

/// What bounds a kernel's time.
enum class KernelClass : std::uint8_t {
  Conv,    // convolution: compute-bound at eff_conv
  Gemm,    // matrix product: compute-bound at eff_gemm
  Memory,  // elementwise, reductions, gathers, optimizer: bandwidth-bound at eff_mem
};
std::string to_string(KernelClass c);

/// One kind of kernel inside an op phase, launched `count` times.
struct KernelWork {
  KernelClass cls = KernelClass::Memory;
  std::int64_t count = 1;
  double flops = 0;  // per launch
  double bytes = 0;  // per launch (device memory read + written)
  hardware::GemmShape gemm{};  // Gemm/Conv: the (implicit) matrix product, when the op's shapes give it
};

/// What one phase of one op does, kernel by kernel. Empty when the phase does nothing.
/// `tf32_convolutions`: FP32 convolutions run on TF32 tensor cores (implicit GEMM, no Winograd).
/// `transposed_convolutions`: a convolution's tensor-core kernel is wrapped in NCHW<->NHWC
/// transposes of its activations (two bandwidth-bound kernels per phase).
/// `moe`: the kernels around an experts op's GEMMs.
std::vector<KernelWork> phase_work(const models::Op& op, Phase phase, Optimizer opt, bool tf32_convolutions = false,
                                   bool transposed_convolutions = false, MoeKernels moe = {});

/// The matrix-product FLOPs (GEMMs, convolutions, attention's batched products) of one sample's
/// forward, backward-data and backward-weight passes through `model`: the numerator of model FLOPs
/// utilisation (no recomputation; a mixture of experts' active experts only).
double matmul_flops_per_sample(const models::Model& model);

// FP8 training: which ops multiply in FP8 is models::fp8_gemm (the model counts their saved inputs).
using models::fp8_gemm;
/// The dtype `op`'s kernels are priced in: FP8 for an FP8 GEMM, BF16 for the other ops of an fp8
/// model, the op's dtype otherwise.
models::DType compute_dtype(const models::Op& op);
/// FP8 scaling: the amax history length of delayed scaling (Transformer Engine's DelayedScaling
/// default) and the bytes per element of a cast-transpose (read bf16 2, write fp8 and its
/// transpose 1 + 1: Hopper's FP8 GEMMs take only the TN layout).
inline constexpr int kFp8AmaxHistory = 1024;
inline constexpr double kFp8CastBytesPerElement = 4;
/// What simulate and plan print when a model runs in fp8.
std::string fp8_overheads_note();

/// A device as the roofline sees it: peaks plus the constants of the efficiency model.
struct RooflineDevice {
  hardware::DeviceSpec spec;       // kind, peaks (TFLOP/s per dtype), memory bandwidth
  double launch_overhead_ns = 0;   // per kernel launch
  double fill_time_ns = 0;         // t_fill in f_half = eff_max * peak * t_fill
  double eff_conv = 0;             // eff_max of convolutions (fraction of peak(dtype))
  double eff_gemm = 0;             // eff_max of GEMMs
  double eff_mem = 0;              // achieved fraction of memory bandwidth
  bool is_cpu = false;
  /// GPUs: the shape-based kernel model (tiles, waves, achievable HBM curve). When set, it prices
  /// every kernel whose GEMM shape is known and every memory-bound kernel; the flat efficiencies
  /// above then only price GEMMs of unknown shape.
  std::optional<hardware::KernelModel> kernels;

  double peak_flops_per_ns(models::DType dtype) const { return spec.peak_tflops(dtype) * 1e3; }
  double eff_max(KernelClass c) const;
  /// FLOPs at which a kernel of class `c` reaches half of eff_max.
  double f_half(KernelClass c, models::DType dtype) const;
  /// Time of one launch of `k`, in (fractional) nanoseconds, launch overhead included.
  double kernel_time_ns(const KernelWork& k, models::DType dtype, Fp32Math math = Fp32Math::PyTorch) const;
};

/// Defaults for a GPU from its datasheet spec: 5 us launch, 2 us fill, conv 0.65, GEMM 0.75,
/// memory 0.80 (docs/profiler.md says why).
RooflineDevice gpu_roofline_device(const hardware::DeviceSpec& spec);

// The host CPU and its detection are the kernels' (kernels/host_cpu.hpp); profiler:: keeps the names.
using kernels::detect_host_cpu;
using kernels::detect_host_cpu_from;
using kernels::host_device_kind;
using kernels::HostCpu;
using kernels::measure_host_clock_mhz;

/// STREAM-triad-like bandwidth of the calling thread (a[i] = b[i] + s*c[i] over `bytes` per
/// array, best of `reps`), in GB/s counting 3 arrays moved. ~50 ms with the defaults.
GBps measure_host_bandwidth(Bytes bytes_per_array = 64 * MiB, int reps = 3);

/// The host as a roofline device of `threads` cores. `bandwidth` 0 means "assume 30 GB/s per
/// core, at most 200 GB/s" (docs/profiler.md); pass measure_host_bandwidth() to use a measurement.
RooflineDevice cpu_roofline_device(const HostCpu& host, int threads = 1, GBps bandwidth = GBps{0});

class RooflineCostModel final : public CostModel {
 public:
  /// Knows every hardware::device_specs() kind (with aliases), plus the host CPU as "cpu" or
  /// "cpu-<anything>" (detected on first use, single-threaded, assumed bandwidth).
  RooflineCostModel();
  /// Adds or replaces a device (a measured host, a custom accelerator). Add devices before
  /// asking for costs: references handed out by device() see the replacement.
  void add_device(RooflineDevice device);
  /// The device for a kind or alias, resolved once and cached. InputError listing the known kinds
  /// when unknown.
  const RooflineDevice& device(const std::string& device_kind) const;

  /// Calibration: time multipliers for GEMM/convolution kernels and for bandwidth-bound kernels
  /// (parasim calibrate) on every device kind; 1 and 1 by default.
  void set_kernel_scales(double matrix, double memory);
  /// Per device kind (Calibration::kernels: a kind's own entry, else "*", else 1 and 1).
  void set_kernel_factors(std::map<std::string, KernelFactors, std::less<>> by_kind);
  /// GPU attention kernels (CPUs always run the unfused decomposition).
  void set_attention_kernel(AttentionKernel kernel);
  /// FP32 math on GPUs with TF32 tensor cores (default: PyTorch's).
  void set_fp32_math(Fp32Math math);
  /// Convolution activation layout on GPUs (default: NCHW, PyTorch's).
  void set_conv_layout(ConvLayout layout);
  /// How the optimizer update runs (default: fused, one multi-tensor kernel).
  void set_optimizer_kernels(OptimizerKernels kernels);
  /// How 16-bit training keeps its activations and weights on GPUs (default: native).
  void set_mixed_precision(MixedPrecision precision);
  /// The kernels around a mixture-of-experts layer's GEMMs (default: Megatron-Core's eager ones).
  void set_moe_kernels(MoeKernels kernels);
  OpCost cost(const models::Op& op, const std::string& device_kind, Optimizer opt) const override;
  /// The HBM curve (or the CPU's bandwidth) with one launch, times the calibration's memory factor.
  TimeNs memory_pass_ns(Bytes bytes, const std::string& device_kind) const override;
  TimeNs phase_time(const models::Op& op, Phase phase, const RooflineDevice& device, Optimizer opt) const;
  /// phase_time(), and in `launch` the part of it that is kernel launches (their count times the
  /// device's launch overhead, times the calibration factor of their class).
  TimeNs phase_time(const models::Op& op, Phase phase, const RooflineDevice& device, Optimizer opt,
                    TimeNs& launch) const;
  std::string describe() const override;
  /// describe() for runs that choose their own kernels (validate --runs: attention, convolution
  /// layout, optimizer kernels and mixed precision come from each row).
  static std::string describe_per_run_kernels();

 private:
  KernelFactors kernel_factors(const RooflineDevice& device) const;
  Calibration kernel_calibration_;  // only its kernel factors are used
  AttentionKernel attention_ = AttentionKernel::Unfused;
  Fp32Math fp32_math_ = Fp32Math::PyTorch;
  ConvLayout conv_layout_ = ConvLayout::Nchw;
  OptimizerKernels optimizer_kernels_ = OptimizerKernels::Fused;
  MixedPrecision mixed_precision_ = MixedPrecision::Native;
  MoeKernels moe_kernels_;
  mutable std::mutex mu_;
  // By the kind string asked for (aliases included). Node-based, so references stay valid.
  mutable std::unordered_map<std::string, RooflineDevice> devices_;
};

}  // namespace parasim::profiler
