// A performance model of one GPU's kernels, from the shape of the work rather than flat
// efficiencies: matrix products are cut into CTA tiles that run in waves over the SMs (tile and
// wave quantization, split-K when there are too few tiles), at a measured achievable fraction of
// the tensor-core or CUDA-core peak; memory-bound kernels run at an achievable HBM bandwidth that
// grows with the bytes a kernel moves. docs/fidelity.md derives each term and names every source.
//
// Example:
//   const DeviceSpec& a100 = device_spec("a100");
//   const KernelModel km = kernel_model(a100);
//   double ns = km.gemm_time_ns({.m = 8192, .n = 8192, .k = 8192}, DType::F16);  // ~4.1 ms
//   double mem = km.memory_time_ns(256e6);                                          // 256 MB at 90% of 2039 GB/s
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parasim/common/dtype.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::hardware {

/// C[batch][m][n] = A[batch][m][k] x B[batch][k][n].
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  /// Row strides (leading dimensions, in elements) of A, B and C where the caller knows how its
  /// tensors are stored; 0 takes row-major A, B and C: k, n and n. Tensor cores need them in
  /// multiples of 16 bytes.
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  /// An implicit-GEMM convolution (cuDNN), not a library GEMM: cuDNN pads unaligned channels and
  /// keeps its own kernels, so the GEMM fallback figures below do not apply (half rate instead).
  bool convolution = false;
  bool known() const { return m > 0 && n > 0 && k > 0 && batch > 0; }
};

/// One CTA tile shape the GEMM library may choose, and its throughput relative to the largest.
struct GemmTile {
  std::int64_t m = 128, n = 128;
  double relative_rate = 1.0;
};

/// How a GEMM was priced (for tests and docs): the tile chosen, waves, split-K and the bound.
struct GemmEstimate {
  double time_ns = 0;
  GemmTile tile;
  std::int64_t tiles = 0;      // CTAs launched (after split-K)
  std::int64_t waves = 0;
  std::int64_t split_k = 1;
  bool tensor_cores = false;
  bool memory_bound = false;
};

/// Fused attention kernels (FlashAttention and its kin) by generation: what a GPU's own generation
/// runs (FlashAttention-3 or cuDNN's kernels on Hopper and newer, FlashAttention-2 on Ampere), or
/// the FlashAttention-2-generation kernels (FlashAttention-2, Triton, xFormers: warp-level MMA,
/// no Hopper TMA/wgmma) wherever they run.
enum class FusedAttention : std::uint8_t { Native, Ampere };

/// The achieved rate of one class of fused attention kernels on one GPU, as fractions of the dense
/// 16-bit peak, on the FLOPs flash-attention's own benchmarks count: forward 4 x batch x heads x
/// queries x keys x head_dim, halved under a causal mask; backward 2.5 times that. Head dim 128,
/// by key length (points interpolated in log2 of the length, constant past either end).
struct AttentionRates {
  std::vector<std::pair<double, double>> forward, forward_causal, backward;
  /// The rate at head dim 64 over the rate at 128 (interpolated in between; 1 from 128 up).
  double head_dim_64_forward = 1, head_dim_64_backward = 1;
  std::string source;
  /// The fraction for one kernel. A causal backward takes the forward's causal/non-causal ratio
  /// at the same length (no causal backward figure is published beside the forward ones).
  double fraction(bool backward, double keys, double head_dim, bool causal) const;
};

struct KernelModel {
  int sm_count = 1;
  DeviceSpec spec;
  double tensor_core_fraction = 0.8;  // achievable fraction of the tensor-core peak, best shape
  /// FP8 GEMMs reach this share of tensor_core_fraction (of the FP8 peak): the FP8 path's
  /// achievable share of its peak over the 16-bit path's, measured the same way on the same part.
  double fp8_fraction_scale = 1.0;
  /// Tensor-core GEMMs with a row stride off 16 bytes, as fractions of the peak: cuBLAS runs
  /// kernels that load element by element (an input's stride) or also store so (C's stride).
  /// Convolutions run at half the aligned rate instead (NVIDIA's guide).
  double unaligned_input_fraction = 0.4;
  double unaligned_output_fraction = 0.4;
  double cuda_core_fraction = 0.9;    // achievable fraction of the FP32 (CUDA-core) peak, best shape
  /// Achievable fraction of HBM bandwidth by bytes moved per kernel: (bytes, fraction) points,
  /// interpolated linearly in bytes, constant past the last point.
  std::vector<std::pair<double, double>> hbm_curve;
  double kernel_fill_ns = 2000;       // pipeline fill and tail of one GEMM kernel (prologue/epilogue)
  double launch_overhead_ns = 5000;   // per kernel: framework dispatch and cudaLaunchKernel
  std::vector<GemmTile> tiles;        // largest first
  AttentionRates native_attention;    // FusedAttention::Native
  AttentionRates ampere_attention;    // FusedAttention::Ampere
  // Where the fractions come from (printed by `parasim clusters show`; docs/fidelity.md).
  std::string tensor_core_source;
  std::string fp8_source;
  std::string cuda_core_source;
  std::string unaligned_source;

  /// Whether a GEMM in `dtype` runs on tensor cores (Volta+ for fp16, Ampere+ for bf16; FP32 only
  /// with `tf32` on a GPU that has TF32 tensor cores).
  bool uses_tensor_cores(DType dtype, bool tf32 = false) const;
  /// Time of one GEMM kernel (launch overhead not included). `tf32`: an FP32 GEMM may run on TF32
  /// tensor cores (cuDNN's default for convolutions, PyTorch's allow_tf32 for matmuls).
  GemmEstimate gemm(const GemmShape& shape, DType dtype, double bytes_moved, bool tf32 = false) const;
  double gemm_time_ns(const GemmShape& shape, DType dtype, double bytes_moved = 0, bool tf32 = false) const {
    return gemm(shape, dtype, bytes_moved, tf32).time_ns;
  }
  /// Achievable HBM bandwidth fraction for a kernel moving `bytes`.
  double hbm_fraction(double bytes) const;
  /// Time of a bandwidth-bound kernel moving `bytes` (launch overhead not included).
  double memory_time_ns(double bytes) const;
  const AttentionRates& attention(FusedAttention kernels) const {
    return kernels == FusedAttention::Native ? native_attention : ampere_attention;
  }
};

/// One number of the kernel model with its source: a row of `parasim clusters show`.
struct KernelModelFigure {
  std::string quantity;
  std::string value;
  std::string source;
};

/// Every number the model prices a kernel with, in the order a reader needs them.
std::vector<KernelModelFigure> kernel_model_figures(const KernelModel& model);

/// The model of a datasheet device: tensor-core and CUDA-core fractions per architecture, the
/// HBM curve and the tile set (docs/fidelity.md lists the numbers and their sources).
KernelModel kernel_model(const DeviceSpec& spec);

}  // namespace parasim::hardware
