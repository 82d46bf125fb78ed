// The GPU kernel model on hand-computed cases: tile and wave quantization, split-K, the tensor-core
// alignment rule and the HBM curve.
#include "parasim/hardware/kernel_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace parasim::hardware {
namespace {

// A100: 312 TFLOP/s FP16 at the sustained 230/312 of it over 108 SMs -> FLOP per ns per SM.
double a100_sm_rate() { return 312.0e3 * (230.0 / 312.0) / 108.0; }

// The store of one wave's C tiles: `ctas` tiles of tm x tn elements of `bytes` each.
double store(const KernelModel& km, double ctas, double tm, double tn, double bytes) {
  return km.memory_time_ns(ctas * tm * tn * bytes);
}

TEST(KernelModel, BlackwellTakesTheHopperFractionAndSaysItIsAssumed) {
  const KernelModel b200 = kernel_model(device_spec("b200"));
  EXPECT_EQ(b200.tensor_core_fraction, kernel_model(device_spec("h100")).tensor_core_fraction);
  EXPECT_EQ(b200.tensor_core_source.rfind("assumed: Hopper's fraction", 0), 0u) << b200.tensor_core_source;
  EXPECT_EQ(b200.sm_count, 148);
}

TEST(KernelModel, LargeAlignedGemmRunsInFullWavesAtTheMeasuredFraction) {
  const KernelModel km = kernel_model(device_spec("a100"));
  // 8192^3: 256x128 tiles -> 32 x 64 = 2048 CTAs -> ceil(2048 / 108) = 19 waves.
  const GemmEstimate e = km.gemm({.m = 8192, .n = 8192, .k = 8192}, DType::F16, 0);
  EXPECT_TRUE(e.tensor_cores);
  EXPECT_EQ(e.tile.m, 256);
  EXPECT_EQ(e.tile.n, 128);
  EXPECT_EQ(e.tiles, 2048);
  EXPECT_EQ(e.waves, 19);
  EXPECT_EQ(e.split_k, 1);
  const double cta = 2.0 * 256 * 128 * 8192 / a100_sm_rate();
  EXPECT_DOUBLE_EQ(e.time_ns, 19 * (cta + store(km, 108, 256, 128, 2)) + 2000.0);
}

TEST(KernelModel, OneTileTooManyCostsAPartialWave) {
  const KernelModel km = kernel_model(device_spec("a100"));
  const double t = 2.0 * 128 * 128 * 4096 / a100_sm_rate();  // one 128x128 CTA over K = 4096
  // 12 x 9 = 108 tiles of 128x128: exactly one wave.
  const GemmEstimate full = km.gemm({.m = 1536, .n = 1152, .k = 4096}, DType::F16, 0);
  EXPECT_EQ(full.tile.m, 128);
  EXPECT_EQ(full.waves, 1);
  EXPECT_DOUBLE_EQ(full.time_ns, t + store(km, 108, 128, 128, 2) + 2000.0);
  // One more row: 13 x 9 = 117 tiles of 128x128 need two waves (2t), as do the 256-wide tiles;
  // 128x64 tiles (13 x 18 = 234 CTAs: 3 waves of half-size CTAs at 0.9 of the rate) and 64x64
  // tiles (450 CTAs: 5 waves of quarter-size CTAs at 0.75) both compute for 5/3 t; the 64x64
  // waves store less each and win.
  const GemmEstimate over = km.gemm({.m = 1537, .n = 1152, .k = 4096}, DType::F16, 0);
  EXPECT_EQ(over.tile.n, 64);
  EXPECT_EQ(over.waves, 5);
  EXPECT_NEAR(over.time_ns, 5 * (t / 4 / 0.75 + store(km, 108, 64, 64, 2)) + 2000.0, 1e-9 * t);
  EXPECT_LT(over.time_ns, 3 * (t / 2 / 0.9 + store(km, 108, 128, 64, 2)) + 2000.0);
}

TEST(KernelModel, FewOutputTilesSplitK) {
  const KernelModel km = kernel_model(device_spec("a100"));
  // One 128x128 output tile over K = 65536 would leave 107 SMs idle: split-K fills them.
  const GemmEstimate e = km.gemm({.m = 128, .n = 128, .k = 65536}, DType::F16, 0);
  EXPECT_GT(e.split_k, 1);
  EXPECT_LE(e.waves, 1);
  EXPECT_LT(e.time_ns, 2.0 * 128 * 128 * 65536 / a100_sm_rate() / 10);
}

TEST(KernelModel, UnalignedTensorCoreGemmRunsAtHalfRate) {
  const KernelModel km = kernel_model(device_spec("a100"));
  const GemmEstimate aligned = km.gemm({.m = 1536, .n = 1152, .k = 4096}, DType::F16, 0);
  const GemmEstimate odd = km.gemm({.m = 1536, .n = 1152, .k = 4095}, DType::F16, 0);  // k % 8 != 0
  const double s = store(km, 108, 128, 128, 2);
  EXPECT_NEAR(odd.time_ns - 2000.0 - s, 2.0 * (aligned.time_ns - 2000.0 - s) * 4095.0 / 4096.0, 1e-6 * aligned.time_ns);
}

// The GEMM part of an estimate, one wave's C store and the fill taken out: what the rate sets.
double core_ns(const KernelModel& km, const GemmEstimate& e, double bytes) {
  const double ctas = static_cast<double>(std::min<std::int64_t>(e.tiles, km.sm_count));
  return e.time_ns - 2000.0 - static_cast<double>(e.waves) * store(km, ctas, e.tile.m, e.tile.n, bytes);
}

// Hopper: a row stride off 16 bytes leaves no TMA/wgmma kernel; cuBLAS's CUTLASS sm75 fallback
// ran 96.0 TFLOP/s with C's stride odd and 141.95 with only an input's on an H200 (bf16 linear
// layers to 50257 outputs, scripts/gpu_microbench.py), against the aligned 74.8% of peak.
TEST(KernelModel, HopperUnalignedStridesRunAtTheMeasuredFallbackRates) {
  const KernelModel km = kernel_model(device_spec("h200"));
  const GemmShape base{.m = 1536, .n = 1152, .k = 4096};
  GemmShape odd_c = base, odd_a = base, conv = base;
  odd_c.ldc = 1153;
  odd_a.lda = 4097;
  conv.ldc = 1153;
  conv.convolution = true;
  const GemmEstimate aligned = km.gemm(base, DType::BF16, 0);
  const GemmEstimate out = km.gemm(odd_c, DType::BF16, 0);
  const GemmEstimate in = km.gemm(odd_a, DType::BF16, 0);
  const GemmEstimate c = km.gemm(conv, DType::BF16, 0);
  EXPECT_EQ(out.tiles, aligned.tiles);  // same tiles and waves: only the rate differs
  EXPECT_EQ(out.waves, aligned.waves);
  const double rate = 0.748;
  EXPECT_NEAR(core_ns(km, out, 2) / core_ns(km, aligned, 2), rate / (96.0 / 989.4), 1e-9);
  EXPECT_NEAR(core_ns(km, in, 2) / core_ns(km, aligned, 2), rate / (141.95 / 989.4), 1e-9);
  EXPECT_NEAR(core_ns(km, c, 2) / core_ns(km, aligned, 2), 2.0, 1e-9);  // cuDNN: half rate
  EXPECT_NEAR(km.unaligned_output_fraction, 96.0 / 989.4, 1e-12);
  EXPECT_NE(km.unaligned_source.find("measured by parasim on an H200"), std::string::npos);
  // Ampere keeps NVIDIA's half rate for either stride.
  const KernelModel a100 = kernel_model(device_spec("a100"));
  const GemmEstimate a_al = a100.gemm(base, DType::F16, 0), a_out = a100.gemm(odd_c, DType::F16, 0);
  EXPECT_NEAR(core_ns(a100, a_out, 2) / core_ns(a100, a_al, 2), 2.0, 1e-9);
}

// FP8 GEMMs run at the FP8 peak times the 16-bit fraction scaled by the FP8 path's share of its peak
// over the BF16 path's, both from the same MAMF tables: H200 1453.4/1979 against 794.5/989; B200
// 3432.5/4500 against 1745.0/2250. Same tiles and waves as BF16: only the rate differs.
TEST(KernelModel, Fp8GemmsRunAtTheFp8PathsShareOfItsPeak) {
  const KernelModel km = kernel_model(device_spec("h100"));
  const double scale = (1453.4 / 1979.0) / (794.5 / 989.0);
  EXPECT_NEAR(km.fp8_fraction_scale, scale, 1e-12);
  EXPECT_NEAR(scale, 0.91420, 1e-5);
  const GemmShape shape{.m = 8192, .n = 8192, .k = 8192};
  const GemmEstimate bf16 = km.gemm(shape, DType::BF16, 0), fp8 = km.gemm(shape, DType::FP8, 0);
  EXPECT_EQ(fp8.tiles, bf16.tiles);
  EXPECT_EQ(fp8.waves, bf16.waves);
  // The wave store of C is priced at dtype_size(fp8), 2 bytes (FP8 GEMMs write bf16 outputs).
  const double bytes = static_cast<double>(dtype_size(DType::FP8));
  EXPECT_NEAR(core_ns(km, fp8, bytes) / core_ns(km, bf16, 2), (989.4 / 1979.0) / scale, 1e-9);
  EXPECT_NE(km.fp8_source.find("H200 SXM 73.4% FP8"), std::string::npos);
  const KernelModel b200 = kernel_model(device_spec("b200"));
  EXPECT_NEAR(b200.fp8_fraction_scale, (3432.5 / 4500.0) / (1745.0 / 2250.0), 1e-12);
  EXPECT_EQ(kernel_model(device_spec("a100")).fp8_fraction_scale, 1.0);  // no FP8 tensor cores
}

TEST(KernelModel, Fp32UsesCudaCoresAndBf16NeedsAmpere) {
  const KernelModel v100 = kernel_model(device_spec("v100"));
  EXPECT_FALSE(v100.uses_tensor_cores(DType::F32));
  EXPECT_TRUE(v100.uses_tensor_cores(DType::F16));
  EXPECT_FALSE(v100.uses_tensor_cores(DType::BF16));  // Volta has no BF16 path
  EXPECT_TRUE(kernel_model(device_spec("h100")).uses_tensor_cores(DType::BF16));
  // V100 FP32: 15.7 TFLOP/s at the measured 14/15.7 over 80 SMs; 8192^2 x 4096 in 256x128 tiles: 2048 CTAs in
  // 26 waves, each storing 80 tiles of FP32 (128x128 tiles: 52 waves of half the work, which
  // store twice as often).
  const GemmEstimate e = v100.gemm({.m = 8192, .n = 8192, .k = 4096}, DType::F32, 0);
  EXPECT_FALSE(e.tensor_cores);
  EXPECT_EQ(e.waves, 26);
  EXPECT_NEAR(e.time_ns,
              26 * (2.0 * 256 * 128 * 4096 / (15.7e3 * (14.0 / 15.7) / 80) + store(v100, 80, 256, 128, 4)) + 2000.0,
              1e-6);
}

// FP32 data on Ampere's TF32 tensor cores (cuDNN's default for convolutions): 156 TFLOP/s at the
// tensor-core fraction; V100 has no TF32 and stays on CUDA cores whatever is asked.
TEST(KernelModel, Tf32RunsFp32GemmsOnTensorCoresWhereThereAreSome) {
  const KernelModel a100 = kernel_model(device_spec("a100"));
  EXPECT_FALSE(a100.uses_tensor_cores(DType::F32));
  EXPECT_TRUE(a100.uses_tensor_cores(DType::F32, /*tf32=*/true));
  EXPECT_FALSE(kernel_model(device_spec("v100")).uses_tensor_cores(DType::F32, true));
  // 8192^3 in 256x128 tiles: 2048 CTAs in 19 waves, each storing 108 FP32 tiles.
  const GemmEstimate e = a100.gemm({.m = 8192, .n = 8192, .k = 8192}, DType::F32, 0, true);
  EXPECT_TRUE(e.tensor_cores);
  EXPECT_EQ(e.waves, 19);
  const double sm_rate = 156.0e3 * (230.0 / 312.0) / 108.0;
  EXPECT_NEAR(e.time_ns, 19 * (2.0 * 256 * 128 * 8192 / sm_rate + store(a100, 108, 256, 128, 4)) + 2000.0, 1e-6);
  // TF32 needs 16-byte alignment too: 4 FP32 elements. K = 4094 is off by 2: half rate.
  const GemmEstimate odd = a100.gemm({.m = 1536, .n = 1152, .k = 4094}, DType::F32, 0, true);
  const GemmEstimate even = a100.gemm({.m = 1536, .n = 1152, .k = 4096}, DType::F32, 0, true);
  EXPECT_GT(odd.time_ns, 1.9 * (even.time_ns - 2000.0 - store(a100, 108, 128, 128, 4)));
}

TEST(KernelModel, HbmCurveInterpolatesCalculonsTable) {
  const KernelModel km = kernel_model(device_spec("a100"));
  EXPECT_DOUBLE_EQ(km.hbm_fraction(0), 0.3);
  EXPECT_DOUBLE_EQ(km.hbm_fraction(5e5), 0.45);
  EXPECT_DOUBLE_EQ(km.hbm_fraction(1e6), 0.6);
  EXPECT_DOUBLE_EQ(km.hbm_fraction(5.5e6), 0.675);
  EXPECT_DOUBLE_EQ(km.hbm_fraction(1e9), 0.9);
  EXPECT_DOUBLE_EQ(km.memory_time_ns(2.56e8), 2.56e8 / (2039.0 * 0.9));
}

TEST(KernelModel, MemoryBoundGemmIsPricedByItsBytes) {
  const KernelModel km = kernel_model(device_spec("a100"));
  // A skinny GEMM moving 1 GB: the HBM time dominates.
  const GemmEstimate e = km.gemm({.m = 8, .n = 8, .k = 8}, DType::F16, 1e9);
  EXPECT_TRUE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.time_ns, 1e9 / (2039.0 * 0.9));
}

}  // namespace
}  // namespace parasim::hardware

namespace parasim::hardware {
namespace {

// `parasim clusters show` prints these rows: every number the model uses, each with a source.
TEST(KernelModel, FiguresNameEveryNumberWithItsSource) {
  const auto rows = kernel_model_figures(kernel_model(device_spec("a100")));
  ASSERT_EQ(rows.size(), 14u);
  EXPECT_EQ(rows[0].value, "19.5 / 156 / 312 / 312 TFLOP/s");
  EXPECT_EQ(rows[1].value, "2039 GB/s");
  EXPECT_EQ(rows[2].value, "108");
  EXPECT_EQ(rows[3].quantity, "tensor-core GEMM, large shapes");
  EXPECT_EQ(rows[3].value, "73.7% of peak");
  EXPECT_NE(rows[3].source.find("median of >= 3 s"), std::string::npos);
  EXPECT_NE(rows[3].source.find("230 of 312"), std::string::npos);
  EXPECT_EQ(rows[5].quantity, "TF32 tensor-core GEMM (FP32 data), large shapes");
  EXPECT_NE(rows[5].source.find("TF32 116 of 156"), std::string::npos);
  EXPECT_NE(rows[6].source.find("assumed"), std::string::npos);  // A100 SGEMM on CUDA cores
  EXPECT_EQ(rows[7].value, "256x128, 128x256, 128x128, 128x64 (0.9), 64x128 (0.9), 64x64 (0.75)");
  EXPECT_EQ(rows[9].value, "30% at 0 MB, 60% at 1 MB, 75% at 10 MB, 90% at 100 MB");
  EXPECT_EQ(rows[10].quantity, "fused attention (--attention flash)");
  EXPECT_EQ(rows[10].value, "forward 60.0% (causal 49.6%), backward 50.0% of peak at 2k keys, head dim 128");
  EXPECT_NE(rows[10].source.find("liangan1/GPU_travel"), std::string::npos);
  EXPECT_EQ(rows[12].value, "5 us");
  EXPECT_EQ(rows[13].quantity, "SMs a running NCCL collective holds");
  EXPECT_EQ(rows[13].value, "24 ring/tree (the compute it overlaps runs on the rest)");
  EXPECT_NE(rows[13].source.find("24 coll channels"), std::string::npos);
  for (const auto& r : rows) EXPECT_FALSE(r.source.empty()) << r.quantity;
  // Pascal consumer cards have no tensor cores: no tensor-core rows, and Volta's figure is not shown.
  const auto pascal = kernel_model_figures(kernel_model(device_spec("gtx1080")));
  EXPECT_EQ(pascal.size(), 11u);
  EXPECT_EQ(pascal[10].value, "2 ring/tree (the compute it overlaps runs on the rest)");
  EXPECT_EQ(pascal[7].source.rfind("assumed: the A100's", 0), 0u);  // no FlashAttention before Ampere
  EXPECT_EQ(pascal[3].quantity, "CUDA-core GEMM, large shapes");
  EXPECT_EQ(pascal[3].value, "90.0% of peak");
  // Volta's fractions are the sustained measurements they cite; Hopper's is parasim's own.
  const auto volta = kernel_model_figures(kernel_model(device_spec("v100")));
  EXPECT_EQ(volta[3].value, "76.0% of peak");
  EXPECT_NE(volta[3].source.find("V100 16GB 95 of 125"), std::string::npos);
  EXPECT_EQ(volta[5].value, "89.2% of peak");
  EXPECT_NE(volta[5].source.find("V100 16GB 14 of 15.7"), std::string::npos);
  const auto hopper = kernel_model_figures(kernel_model(device_spec("h100")));
  EXPECT_EQ(hopper[3].value, "74.8% of peak");
  EXPECT_EQ(hopper.back().value, "24 ring/tree, 16 NVLS (the compute it overlaps runs on the rest)");
  EXPECT_NE(hopper[3].source.find("measured by parasim on an H200"), std::string::npos);
  // Hopper's own attention kernels and the FlashAttention-2 generation's, from the FA3 paper.
  EXPECT_EQ(hopper[12].value, "forward 62.4% (causal 48.9%), backward 47.0% of peak at 2k keys, head dim 128");
  EXPECT_EQ(hopper[13].quantity, "FlashAttention-2-class attention (--attention flash2)");
  EXPECT_EQ(hopper[13].value, "forward 36.6% (causal 30.1%), backward 29.4% of peak at 2k keys, head dim 128");
  EXPECT_NE(hopper[13].source.find("arXiv 2407.08608"), std::string::npos);
}

// Fused attention rates: the FA3 paper's H100 figures (TFLOP/s over the 989 peak), interpolated in
// log2 of the key length, clamped past the ends, a causal backward at the forward's causal ratio,
// head dim 64 at its own ratio and linear in between.
TEST(KernelModel, AttentionRatesFollowThePublishedCurves) {
  const KernelModel h100 = kernel_model(device_spec("h100"));
  const AttentionRates& native = h100.attention(FusedAttention::Native);
  EXPECT_DOUBLE_EQ(native.fraction(false, 2048, 128, false), 617.0 / 989);
  EXPECT_DOUBLE_EQ(native.fraction(false, 2048, 128, true), 484.0 / 989);
  EXPECT_DOUBLE_EQ(native.fraction(true, 2048, 128, false), 465.0 / 989);
  EXPECT_DOUBLE_EQ(native.fraction(true, 2048, 128, true), 465.0 / 989 * (484.0 / 617));
  EXPECT_DOUBLE_EQ(native.fraction(false, 2048, 64, false), 395.0 / 989);
  EXPECT_DOUBLE_EQ(native.fraction(true, 2048, 96, false), 465.0 / 989 * (0.5 * 395.0 / 465 + 0.5));
  EXPECT_DOUBLE_EQ(native.fraction(false, 2048, 256, false), 617.0 / 989);  // head dim 128 and up: as 128
  EXPECT_NEAR(native.fraction(false, std::exp2(10.5), 128, false), (574.0 + 617.0) / 2 / 989, 1e-12);
  EXPECT_DOUBLE_EQ(native.fraction(false, 128, 128, false), 497.0 / 989);     // below 512: 512's
  EXPECT_DOUBLE_EQ(native.fraction(false, 131072, 128, false), 595.0 / 989);  // past 16k: 16k's
  const AttentionRates& fa2 = h100.attention(FusedAttention::Ampere);
  EXPECT_DOUBLE_EQ(fa2.fraction(false, 8192, 128, true), 333.0 / 989);
  EXPECT_DOUBLE_EQ(fa2.fraction(true, 8192, 64, false), 318.0 / 989 * (264.0 / 291));
  // On an A100 both names are FlashAttention-2: 60% forward and 50% backward at 2k.
  const KernelModel a100 = kernel_model(device_spec("a100"));
  EXPECT_DOUBLE_EQ(a100.attention(FusedAttention::Native).fraction(false, 2048, 128, false), 0.6);
  EXPECT_DOUBLE_EQ(a100.attention(FusedAttention::Ampere).fraction(true, 2048, 128, false), 0.5);
  EXPECT_DOUBLE_EQ(a100.attention(FusedAttention::Native).fraction(false, 1024, 128, true),
                   0.6 * 350.0 / 362 * (143.7 / 179.1));
}

// Hopper's achievable fraction is what the H200 measured: for each aligned GEMM of at least 0.1
// TFLOP in the microbenchmark (bf16 and fp16, medians of 10 calls), the fraction at which the
// model gives the measured time; their median is the model's figure. The file is the committed
// measurement, so this fails if either the figure or the tile and wave model drifts from it.
TEST(KernelModel, HopperFractionReproducesTheMeasuredH200Gemms) {
  std::ifstream in(PARASIM_H200_MICROBENCH);
  ASSERT_TRUE(in) << PARASIM_H200_MICROBENCH;
  const nlohmann::json bench = nlohmann::json::parse(in);
  const KernelModel h200 = kernel_model(device_spec("h200"));
  std::vector<double> implied;
  for (const char* key : {"gemm_bf16", "gemm_fp16"}) {
    const DType dtype = std::string(key) == "gemm_bf16" ? DType::BF16 : DType::F16;
    for (const auto& g : bench.at(key)) {
      const auto m = g.at("m").get<std::int64_t>(), n = g.at("n").get<std::int64_t>(),
                 k = g.at("k").get<std::int64_t>();
      if (m % 8 != 0 || n % 8 != 0 || k % 8 != 0 || 2.0 * static_cast<double>(m * n) * static_cast<double>(k) < 1e11)
        continue;
      const double measured_ns = g.at("ms").get<double>() * 1e6;
      // The model's time falls as the fraction rises: bisect for the one that gives the measurement.
      KernelModel km = h200;
      double lo = 0.05, hi = 1.5;
      for (int i = 0; i < 60; ++i) {
        km.tensor_core_fraction = 0.5 * (lo + hi);
        (km.gemm({.m = m, .n = n, .k = k}, dtype, 0).time_ns > measured_ns ? lo : hi) = km.tensor_core_fraction;
      }
      implied.push_back(0.5 * (lo + hi));
    }
  }
  ASSERT_EQ(implied.size(), 44u);
  std::sort(implied.begin(), implied.end());
  const double median = 0.5 * (implied[21] + implied[22]);
  EXPECT_NEAR(h200.tensor_core_fraction, median, 0.0005) << "median implied fraction " << median;
  EXPECT_EQ(kernel_model(device_spec("h100")).tensor_core_fraction, h200.tensor_core_fraction);
}

}  // namespace
}  // namespace parasim::hardware
