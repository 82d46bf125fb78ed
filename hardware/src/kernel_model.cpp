// GEMM and memory-kernel times from shape; the derivation and sources are in docs/fidelity.md.
#include "parasim/hardware/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace parasim::hardware {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// What a training step sustains is a long run of large matmuls on random-like data, at the clock
// the card's power limit allows. mli/transformers-benchmarks (README, micro_bench.ipynb) times
// torch matmul on an 8192^3 square as the median of a run of at least 3 s (torch.utils.benchmark
// blocked_autorange), NGC PyTorch 22.07, CUDA 11.7: A100 80GB 230 of 312 TFLOP/s FP16 (73.7%; TF32
// 116 of 156, 74.4%), V100 16GB 95 of 125 FP16 (76.0%) and 14 of 15.7 FP32 (89.2%).
constexpr double kA100TensorFraction = 230.0 / 312.0;
constexpr double kVoltaTensorFraction = 95.0 / 125.0;
constexpr double kVoltaCudaCoreFraction = 14.0 / 15.7;
// Hopper is not in that table; it was measured by parasim on an H200, whose GH100 compute, 132
// SMs and 700 W limit are the H100 SXM's (scripts/gpu_microbench.py, torch 2.11 / CUDA 13.0,
// reports/validation/microbench-h200-sxm-141gb.json, medians of 10 calls after 3 warm-ups): over
// the 44 aligned bf16 and fp16 GEMMs of at least 0.1 TFLOP, the median of the fraction at which
// this model gives each one's measured time is 74.8% (bf16 alone 75.6%, fp16 71.8%; test
// KernelModel.HopperFractionReproducesTheMeasuredH200Gemms). Until session 24 the H100 took the
// fastest of 100 iterations over a shape sweep (stas00/ml-engineering, "Maximum Achievable Matmul
// FLOPS": 792.1 of 989, 80.1%), which reads higher than a median (docs/fidelity.md).
constexpr double kHopperTensorFraction = 0.748;
// FP32 SGEMM on CUDA cores of other GPUs: assumed at the V100's measured 0.89, rounded to 0.90.
constexpr double kAssumedCudaCoreFraction = 0.90;
constexpr const char* kSustainedSource =
    "mli/transformers-benchmarks, torch matmul 8192^3, median of >= 3 s (NGC PyTorch 22.07, CUDA 11.7)";
constexpr const char* kHopperGemmSource =
    "measured by parasim on an H200 (same GH100 compute as the H100 SXM): median over 44 aligned bf16/fp16 GEMMs "
    "of >= 0.1 TFLOP, medians of 10 calls (reports/validation/microbench-h200-sxm-141gb.json)";
// FP8 against BF16 on the same part: stas00/ml-engineering's maximum achievable matmul FLOPS
// (MAMF finder, best shape, `compute/accelerator` tables): H100/H200 SXM BF16 794.5 of 989 TFLOP/s
// (80.3%), H200 SXM FP8 1453.4 of 1979 (73.4%); B200 SXM BF16 1745.0 of 2250 (77.6%), FP8 3432.5 of
// 4500 (76.3%). Only the ratio is taken: parasim's own Hopper fraction is a median over shapes.
constexpr double kHopperFp8OverBf16 = (1453.4 / 1979.0) / (794.5 / 989.0);
constexpr double kBlackwellFp8OverBf16 = (3432.5 / 4500.0) / (1745.0 / 2250.0);
constexpr const char* kMamfSource =
    "stas00/ml-engineering, Maximum Achievable Matmul FLOPS (best shape): FP8 and BF16 shares of their peaks";
constexpr const char* kCalculonHbmSource = "Calculon systems/a100_80g.json mem1.MB_efficiency (Apache-2.0)";
// Hopper with a row stride off 16 bytes: no TMA/wgmma kernel applies, and cuBLAS runs CUTLASS's
// Turing-era cutlass_75_tensorop_*_s1688gemm_*_align1 kernels. Measured by parasim on an H200
// (scripts/gpu_microbench.py, torch 2.11 / CUDA 13.0, reports/validation/microbench-h200-sxm-141gb.json):
// linear layers 768 or 1600 -> 50257 over 8192 and 32768 tokens in bf16, medians of 10 calls;
// with C's stride odd (forward) 94.8-107.1 TFLOP/s, median 96.0; with only an input's (data and
// weight gradients) 129.7-152.0, median 141.95; the same shapes at 50304 run 642-785 TFLOP/s.
constexpr double kHopperUnalignedOutputTflops = 96.0;
constexpr double kHopperUnalignedInputTflops = 141.95;
constexpr const char* kHopperUnalignedSource =
    "measured by parasim on an H200 (cutlass_75 s1688 align1 fallback, bf16 linear layers to 50257 outputs; "
    "reports/validation/microbench-h200-sxm-141gb.json)";

// Fused attention, in TFLOP/s at head dim 128, bf16, on an H100 80GB SXM5 (peak 989), by key length
// 512, 1k, 2k, 4k, 8k, 16k: Shah et al., "FlashAttention-3" (arXiv 2407.08608), Figures 5 and 6
// (forward without and with a causal mask, backward without). FLOPs as flash-attention counts them
// (causal: half). Hopper-native kernels: cuDNN's (what Transformer Engine and PyTorch's SDPA run;
// FlashAttention-3 itself is within 1-8% of them at 2k and up); FlashAttention-2 stands for the
// Ampere-generation kernels on Hopper.
constexpr double kH100Peak16 = 989.0;
constexpr double kAttentionLengths[] = {512, 1024, 2048, 4096, 8192, 16384};
constexpr double kCudnnForward[] = {497, 574, 617, 609, 600, 595};
constexpr double kCudnnForwardCausal[] = {315, 410, 484, 518, 529, 539};
constexpr double kCudnnBackward[] = {305, 408, 465, 499, 518, 516};
constexpr double kFa2H100Forward[] = {309, 350, 362, 368, 370, 370};
constexpr double kFa2H100ForwardCausal[] = {191, 260, 298, 319, 333, 335};
constexpr double kFa2H100Backward[] = {214, 260, 291, 310, 318, 322};
// Head dim 64 against 128 at 2k (the same paper's head-dim-64 figures): cuDNN forward 395 / 617,
// backward 395 / 465; FlashAttention-2 forward 318 / 362, backward 264 / 291.
constexpr const char* kFa3PaperSource =
    "Shah et al., FlashAttention-3 (arXiv 2407.08608), Figs. 5-6: H100 SXM5 bf16, head dim 64 and 128";
// FlashAttention-2 on an A100: forward at 60% of peak without a mask, the middle of the 50-73% of
// Dao, "FlashAttention-2" (arXiv 2307.08691), abstract; with a causal mask 80% of that at 1k and 85%
// at 4k (liangan1/GPU_travel performance/flash-attn/README.md: FA2 on an A100 80GB, 143.7 / 179.1
// and 156.3 / 184.0 TFLOP/s). The backward at 50% (assumed: the paper reports it below the
// forward), and the length and head-dim shape of FlashAttention-2 on the H100 above (assumed).
constexpr double kA100Fa2Forward = 0.60, kA100Fa2Backward = 0.50;
constexpr double kA100Fa2CausalAt1k = 143.7 / 179.1, kA100Fa2CausalAt4k = 156.3 / 184.0;

using Curve = std::vector<std::pair<double, double>>;
// `tflops` over the lengths, as fractions of `peak` times `scale`.
Curve attention_curve(const double (&tflops)[6], double peak, double scale = 1.0) {
  Curve c;
  for (std::size_t i = 0; i < 6; ++i) c.emplace_back(kAttentionLengths[i], tflops[i] / peak * scale);
  return c;
}
double at_length(const Curve& c, double keys) {
  if (c.empty()) return 0;
  const double x = std::log2(std::max(keys, 1.0));
  if (x <= std::log2(c.front().first)) return c.front().second;
  for (std::size_t i = 1; i < c.size(); ++i) {
    const double x1 = std::log2(c[i].first);
    if (x <= x1) {
      const double x0 = std::log2(c[i - 1].first);
      return c[i - 1].second + (c[i].second - c[i - 1].second) * (x - x0) / (x1 - x0);
    }
  }
  return c.back().second;
}

// One kernel family's H100 figures: the three curves and the head-dim-64 rates at 2k (TFLOP/s).
struct H100AttentionFigures {
  const double (&forward)[6], (&forward_causal)[6], (&backward)[6];
  double forward_hd64, backward_hd64;
  const char* kernels;
};
AttentionRates h100_attention(const H100AttentionFigures& f) {
  return {attention_curve(f.forward, kH100Peak16),  attention_curve(f.forward_causal, kH100Peak16),
          attention_curve(f.backward, kH100Peak16), f.forward_hd64 / f.forward[2],
          f.backward_hd64 / f.backward[2],          std::string(kFa3PaperSource) + ", " + f.kernels};
}
AttentionRates hopper_native_attention() {
  return h100_attention({kCudnnForward, kCudnnForwardCausal, kCudnnBackward, 395.0, 395.0, "cuDNN"});
}
AttentionRates fa2_on_hopper_attention() {
  return h100_attention({kFa2H100Forward, kFa2H100ForwardCausal, kFa2H100Backward, 318.0, 264.0, "FlashAttention-2"});
}
AttentionRates fa2_on_ampere_attention() {
  // FlashAttention-2's H100 curves and head-dim ratios, rescaled to the A100's rates at 2k; the
  // causal curve from the A100's own causal/non-causal ratios (1k -> 4k, constant outside).
  AttentionRates r = fa2_on_hopper_attention();
  const double forward = kA100Fa2Forward / at_length(r.forward, 2048);
  const double backward = kA100Fa2Backward / at_length(r.backward, 2048);
  for (auto& point : r.forward) point.second *= forward;
  for (auto& point : r.backward) point.second *= backward;
  for (std::size_t i = 0; i < r.forward.size(); ++i) {
    const double x = std::clamp((std::log2(r.forward[i].first) - 10) / 2, 0.0, 1.0);
    r.forward_causal[i].second =
        r.forward[i].second * (kA100Fa2CausalAt1k + (kA100Fa2CausalAt4k - kA100Fa2CausalAt1k) * x);
  }
  r.source =
      "FlashAttention-2 on an A100: forward 60% of peak (Dao, arXiv 2307.08691: 50-73%), causal 80-85% of that "
      "(liangan1/GPU_travel, A100 80GB), backward 50% (assumed); lengths and head dims shaped as on the H100 "
      "(assumed)";
  return r;
}

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

}  // namespace

bool KernelModel::uses_tensor_cores(DType dtype, bool tf32) const {
  if (dtype == DType::F32) return tf32 && spec.tf32_tflops > spec.fp32_tflops;
  if (dtype == DType::BF16) return spec.bf16_tflops > spec.fp32_tflops;
  if (dtype == DType::FP8) return spec.supports_fp8() || spec.bf16_tflops > spec.fp32_tflops;
  return spec.fp16_tflops > 2 * spec.fp32_tflops;  // Volta+ tensor cores (Pascal FP16 is no faster)
}

double KernelModel::hbm_fraction(double bytes) const {
  if (hbm_curve.empty()) return 1.0;
  if (bytes <= hbm_curve.front().first) return hbm_curve.front().second;
  for (std::size_t i = 1; i < hbm_curve.size(); ++i) {
    const auto [b1, f1] = hbm_curve[i];
    if (bytes <= b1) {
      const auto [b0, f0] = hbm_curve[i - 1];
      return f0 + (f1 - f0) * (bytes - b0) / (b1 - b0);
    }
  }
  return hbm_curve.back().second;
}

double AttentionRates::fraction(bool is_backward, double keys, double head_dim, bool causal) const {
  const double forward_rate = at_length(forward, keys);
  double f = is_backward ? at_length(backward, keys) : forward_rate;
  if (causal && forward_rate > 0) f *= at_length(forward_causal, keys) / forward_rate;
  const double at_64 = is_backward ? head_dim_64_backward : head_dim_64_forward;
  if (head_dim <= 64) f *= at_64;
  else if (head_dim < 128) f *= at_64 + (1 - at_64) * (head_dim - 64) / 64;
  return f;
}

double KernelModel::memory_time_ns(double bytes) const {
  if (bytes <= 0) return 0;
  return bytes / (spec.mem_bandwidth.value * hbm_fraction(bytes));
}

GemmEstimate KernelModel::gemm(const GemmShape& s, DType dtype, double bytes_moved, bool tf32) const {
  GemmEstimate best;
  best.time_ns = std::numeric_limits<double>::infinity();
  best.tensor_cores = uses_tensor_cores(dtype, tf32);
  const bool on_tf32 = best.tensor_cores && dtype == DType::F32;
  const double peak_tflops = on_tf32             ? spec.tf32_tflops
                             : best.tensor_cores ? spec.peak_tflops(dtype)
                                                 : spec.fp32_tflops;
  const double peak = peak_tflops * 1e3;  // FLOP/ns
  const double fraction = !best.tensor_cores    ? cuda_core_fraction
                          : dtype == DType::FP8 ? tensor_core_fraction * fp8_fraction_scale
                                                : tensor_core_fraction;
  // Tensor cores need the leading dimensions in multiples of 16 bytes (8 fp16 elements); cuBLAS
  // pads or falls back to slower kernels otherwise (NVIDIA, "Matrix Multiplication Background").
  // FP8 GEMMs: 16 one-byte elements; TF32: 4 four-byte ones.
  const std::int64_t align = dtype == DType::FP8 ? 16 : on_tf32 ? 4 : 8;
  const std::int64_t lda = s.lda > 0 ? s.lda : s.k, ldb = s.ldb > 0 ? s.ldb : s.n, ldc = s.ldc > 0 ? s.ldc : s.n;
  const bool output_aligned = !best.tensor_cores || ldc % align == 0;
  const bool inputs_aligned = !best.tensor_cores || (lda % align == 0 && ldb % align == 0);
  const double achieved = output_aligned && inputs_aligned ? fraction
                          : s.convolution                  ? 0.5 * fraction
                          : !output_aligned                ? std::min(fraction, unaligned_output_fraction)
                                                           : std::min(fraction, unaligned_input_fraction);
  const double sm_rate = peak * achieved / static_cast<double>(sm_count);
  for (const GemmTile& tile : tiles) {
    const std::int64_t output_tiles = ceil_div(s.m, tile.m) * ceil_div(s.n, tile.n) * s.batch;
    // Split-K: too few output tiles to fill the SMs -> cut K so that every SM gets one, never
    // below 256 per split (cuBLAS's heuristics; the partial sums add one pass over C).
    std::int64_t split = 1;
    if (output_tiles < sm_count)
      split = std::clamp<std::int64_t>(sm_count / output_tiles, 1, std::max<std::int64_t>(1, s.k / 256));
    const std::int64_t ctas = output_tiles * split;
    const std::int64_t waves = ceil_div(ctas, sm_count);
    const double k_per_cta = static_cast<double>(ceil_div(s.k, split));
    const double cta_ns = 2.0 * static_cast<double>(tile.m * tile.n) * k_per_cta / (sm_rate * tile.relative_rate);
    // Each wave ends by storing its C tiles (fp32 partials under split-K); with one large CTA per
    // SM nothing else runs meanwhile, so the store adds to the wave (docs/fidelity.md).
    const double out_bytes = split > 1 ? 4.0 : static_cast<double>(dtype_size(dtype));
    const double wave_store =
        static_cast<double>(std::min<std::int64_t>(ctas, sm_count) * tile.m * tile.n) * out_bytes;
    double t = static_cast<double>(waves) * (cta_ns + memory_time_ns(wave_store)) + kernel_fill_ns;
    if (split > 1)
      t += memory_time_ns(2.0 * static_cast<double>(s.m * s.n * s.batch) * 4.0 * static_cast<double>(split));
    if (t < best.time_ns) {
      best.time_ns = t;
      best.tile = tile;
      best.tiles = ctas;
      best.waves = waves;
      best.split_k = split;
    }
  }
  const double memory = memory_time_ns(bytes_moved);
  if (memory > best.time_ns) {
    best.time_ns = memory;
    best.memory_bound = true;
  }
  return best;
}

KernelModel kernel_model(const DeviceSpec& spec) {
  KernelModel k;
  k.spec = spec;
  k.sm_count = std::max(1, spec.sm_count);
  const bool volta = spec.arch == "volta";
  // Blackwell has no published matmul measurement here: it takes Hopper's measured fraction, said so.
  const bool blackwell = spec.arch == "blackwell";
  k.tensor_core_fraction = spec.arch == "ampere"                ? kA100TensorFraction
                           : spec.arch == "hopper" || blackwell ? kHopperTensorFraction
                                                                : kVoltaTensorFraction;
  k.tensor_core_source = spec.arch == "ampere"   ? std::string(kSustainedSource) + ": A100 80GB 230 of 312 TFLOP/s FP16"
                         : spec.arch == "hopper" ? std::string(kHopperGemmSource)
                         : blackwell             ? "assumed: Hopper's fraction (" + std::string(kHopperGemmSource) +
                                           "); no Blackwell measurement found"
                                     : std::string(kSustainedSource) + ": V100 16GB 95 of 125 TFLOP/s FP16";
  if (spec.supports_fp8()) {
    k.fp8_fraction_scale = blackwell ? kBlackwellFp8OverBf16 : kHopperFp8OverBf16;
    k.fp8_source = std::string(kMamfSource) + (blackwell ? ": B200 SXM 76.3% FP8 against 77.6% BF16"
                                                         : ": H200 SXM 73.4% FP8 against H100/H200 SXM 80.3% BF16");
  }
  // Unaligned strides: half the aligned rate by NVIDIA's guide (Volta, Ampere); Hopper measured.
  if (spec.arch == "hopper" || blackwell) {
    const double measured_peak = device_spec("H200-SXM-141GB").bf16_tflops;  // the measured card's
    k.unaligned_output_fraction = kHopperUnalignedOutputTflops / measured_peak;
    k.unaligned_input_fraction = kHopperUnalignedInputTflops / measured_peak;
    k.unaligned_source =
        blackwell ? std::string("assumed: Hopper's, ") + kHopperUnalignedSource : kHopperUnalignedSource;
  } else {
    k.unaligned_output_fraction = k.unaligned_input_fraction = 0.5 * k.tensor_core_fraction;
    k.unaligned_source = "NVIDIA Matrix Multiplication Background User's Guide (16-byte alignment): half rate";
  }
  k.cuda_core_fraction = volta ? kVoltaCudaCoreFraction : kAssumedCudaCoreFraction;
  k.cuda_core_source = volta ? std::string(kSustainedSource) + ": V100 16GB 14 of 15.7 TFLOP/s FP32"
                             : "assumed: the V100's measured 0.89, rounded (no tensor-core pipeline to starve)";
  // Achievable HBM bandwidth by bytes per kernel: Calculon's measured-efficiency table for A100 and
  // H100 ("mem1" MB_efficiency in systems/a100_80g.json and h100_80g_nvl8.json, Apache-2.0):
  // 0.3 near 0, 0.6 at 1 MB, 0.75 at 10 MB, 0.9 from 100 MB.
  k.hbm_curve = {{0.0, 0.3}, {1e6, 0.6}, {1e7, 0.75}, {1e8, 0.9}};
  // CTA tiles of the CUTLASS/cuBLAS kernel families; smaller tiles reuse each loaded element fewer
  // times, so they run below the best-shape rate (assumed 0.9 and 0.75).
  k.tiles = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 1.0}, {128, 64, 0.9}, {64, 128, 0.9}, {64, 64, 0.75}};
  // Fused attention: Hopper's measured kernels on Hopper (Blackwell borrows them, said so); the
  // A100's FlashAttention-2 on Ampere and, for want of a kernel of their own, on older GPUs.
  if (spec.arch == "hopper" || blackwell) {
    k.native_attention = hopper_native_attention();
    k.ampere_attention = fa2_on_hopper_attention();
    if (blackwell) {
      k.native_attention.source = "assumed: Hopper's (" + k.native_attention.source + "); no Blackwell figure found";
      k.ampere_attention.source = "assumed: Hopper's (" + k.ampere_attention.source + ")";
    }
  } else {
    k.native_attention = k.ampere_attention = fa2_on_ampere_attention();
    if (spec.arch != "ampere")
      k.native_attention.source = k.ampere_attention.source =
          "assumed: the A100's (FlashAttention needs Ampere or newer): " + k.ampere_attention.source;
  }
  return k;
}

std::vector<KernelModelFigure> kernel_model_figures(const KernelModel& k) {
  const DeviceSpec& s = k.spec;
  std::vector<KernelModelFigure> rows;
  rows.push_back({"peak FP32 / TF32 / FP16 / BF16",
                  format("%g / %g / %g / %g TFLOP/s", s.fp32_tflops, s.tf32_tflops, s.fp16_tflops, s.bf16_tflops),
                  s.source});
  rows.push_back({"HBM bandwidth", format("%g GB/s", s.mem_bandwidth.value), "the same datasheet"});
  rows.push_back({"SMs", std::to_string(k.sm_count), "the same datasheet"});
  const bool has_tensor_cores = k.uses_tensor_cores(DType::F16) || k.uses_tensor_cores(DType::BF16);
  if (has_tensor_cores) {
    rows.push_back({"tensor-core GEMM, large shapes", format("%.1f%% of peak", 100 * k.tensor_core_fraction),
                    k.tensor_core_source});
    rows.push_back({"tensor-core GEMM, a row stride off 16 bytes",
                    format("%.1f%% of peak (C's stride), %.1f%% (an input's only)", 100 * k.unaligned_output_fraction,
                           100 * k.unaligned_input_fraction),
                    k.unaligned_source});
  }
  if (s.supports_fp8()) {
    rows.push_back({"peak FP8 (dense)", format("%g TFLOP/s", s.fp8_tflops), s.fp8_source});
    rows.push_back({"FP8 tensor-core GEMM, large shapes",
                    format("%.1f%% of peak: the 16-bit fraction x %.3f (strides off 16 bytes: as above)",
                           100 * k.tensor_core_fraction * k.fp8_fraction_scale, k.fp8_fraction_scale),
                    k.fp8_source});
  }
  if (s.tf32_tflops > s.fp32_tflops)
    rows.push_back({"TF32 tensor-core GEMM (FP32 data), large shapes",
                    format("%.1f%% of the TF32 peak", 100 * k.tensor_core_fraction),
                    std::string(s.arch == "ampere" ? std::string(kSustainedSource) +
                                                         ": A100 80GB TF32 116 of 156 TFLOP/s (74.4%), the FP16 "
                                                         "fraction is used"
                                                   : "assumed: the BF16 fraction above") +
                        "; cuDNN runs FP32 convolutions on TF32 tensor cores by default, matmuls only where the "
                        "framework allows it (--fp32-math, docs/fidelity.md)"});
  rows.push_back(
      {"CUDA-core GEMM, large shapes", format("%.1f%% of peak", 100 * k.cuda_core_fraction), k.cuda_core_source});
  std::string tiles;
  for (const GemmTile& t : k.tiles)
    tiles += (tiles.empty() ? "" : ", ") + format("%gx%g", static_cast<double>(t.m), static_cast<double>(t.n)) +
             (t.relative_rate < 1 ? format(" (%g)", t.relative_rate) : "");
  rows.push_back({"CTA tiles (relative rate)", tiles, "CUTLASS/cuBLAS tile families; smaller-tile rates assumed"});
  rows.push_back({"waves", "ceil(tiles / SMs), split-K below one wave (K >= 256 per split)",
                  "wave quantization, NVIDIA Matrix Multiplication Background User's Guide"});
  std::string curve;
  for (const auto& [bytes, fraction] : k.hbm_curve)
    curve += (curve.empty() ? "" : ", ") + format("%g%% at %g MB", 100 * fraction, bytes / 1e6);
  rows.push_back({"achievable HBM by bytes per kernel", curve, kCalculonHbmSource});
  const auto attention_row = [&](const char* what, const AttentionRates& a) {
    rows.push_back({what,
                    format("forward %.1f%% (causal %.1f%%), backward %.1f%% of peak at 2k keys, head dim 128",
                           100 * a.fraction(false, 2048, 128, false), 100 * a.fraction(false, 2048, 128, true),
                           100 * a.fraction(true, 2048, 128, false)),
                    a.source});
  };
  attention_row("fused attention (--attention flash)", k.native_attention);
  if (s.arch_at_least("hopper"))
    attention_row("FlashAttention-2-class attention (--attention flash2)", k.ampere_attention);
  rows.push_back({"GEMM fill and tail", format("%g us", k.kernel_fill_ns / 1e3), "assumed"});
  rows.push_back({"kernel launch", format("%g us", k.launch_overhead_ns / 1e3),
                  "assumed: eager framework dispatch plus cudaLaunchKernel"});
  const NcclChannels ch = nccl_channels(s);
  rows.push_back({"SMs a running NCCL collective holds",
                  std::to_string(ch.ring_tree) + " ring/tree" +
                      (ch.nvls > 0 ? ", " + std::to_string(ch.nvls) + " NVLS" : "") +
                      " (the compute it overlaps runs on the rest)",
                  std::string(ch.source)});
  return rows;
}

}  // namespace parasim::hardware
