#include "parasim/profiler/roofline.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::profiler {
namespace {

using models::DType;
using models::Model;
using models::ModelBuilder;

const models::Op& op_named(const Model& m, const char* name) { return m.op(*m.find_op(name)); }

// V100-SXM2: 125 TFLOP/s fp16 tensor = 125'000 FLOP/ns, 900 GB/s = 900 B/ns.
// GEMM efficiency 0.75, memory 0.80, fill 2 us, launch 5 us.

TEST(Roofline, ComputeBoundGemmOnV100) {
  ModelBuilder b("gemm", 4096, DType::F16);
  auto x = b.input("x", {4096, 4096});
  b.linear("fc", x, 4096, 4096, /*bias=*/false);
  const Model m = b.finish();
  const models::Op& fc = op_named(m, "fc");
  ASSERT_EQ(fc.macs_fwd, 4096LL * 4096 * 4096);

  RooflineCostModel roofline;
  const OpCost c = roofline.cost(fc, "V100-SXM2-32GB", Optimizer::Sgd);
  // The kernel model prices the GEMM [4096 x 4096] over K = 4096 moving x, W and y (3 * 4096^2 *
  // 2 B); hardware/kernel_model tests its tiles and waves by hand. 5 us of launch on top.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("v100"));
  const double gemm = km.gemm_time_ns({.m = 4096, .n = 4096, .k = 4096}, DType::F16, 3.0 * 4096 * 4096 * 2);
  EXPECT_EQ(c.fwd, std::llround(gemm + 5000));
  EXPECT_EQ(c.bwd_data, 0);  // fed by the data batch: no data gradient
  EXPECT_EQ(c.bwd_weight, std::llround(gemm + 5000));  // dW [4096 x 4096] over K = 4096 rows
  // update (sgd, fp16): 4096^2 params * (2 grad + 8 master + 2 fp16 copy) B at 0.9 of 900 GB/s
  // (a kernel over 100 MB) + 5'000
  EXPECT_EQ(c.update, 253'551);
  EXPECT_EQ(c.source, CostSource::Roofline);
}

// FP32 on A100: PyTorch runs cuDNN convolutions on TF32 tensor cores and matmuls in FP32 by
// default; --fp32-math tf32 puts both on TF32, fp32 neither.
TEST(Roofline, Fp32MathChoosesTf32ForConvolutionsAndMatmuls) {
  ModelBuilder b("tf32", 64, DType::F32);
  auto x = b.input("x", {64, 256, 56, 56});
  auto y = b.conv2d("conv", x, 256, 3, 1, 1, 1, 1, /*bias=*/false);
  auto f = b.input("f", {64, 4096});
  b.linear("fc", f, 4096, 4096, /*bias=*/false);
  (void)y;
  const Model m = b.finish();
  const models::Op& conv = op_named(m, "conv");
  const models::Op& fc = op_named(m, "fc");
  RooflineCostModel costs;
  costs.set_conv_layout(ConvLayout::Nhwc);  // no layout transposes: the GEMMs alone
  auto fwd = [&](const models::Op& op, Fp32Math math) {
    costs.set_fp32_math(math);
    return costs.cost(op, "A100-SXM4-80GB", Optimizer::Sgd).fwd;
  };
  const TimeNs conv_default = fwd(conv, Fp32Math::PyTorch), conv_tf32 = fwd(conv, Fp32Math::Tf32);
  const TimeNs conv_fp32 = fwd(conv, Fp32Math::Fp32);
  EXPECT_EQ(conv_default, conv_tf32);
  // 19.5 TFLOP/s of CUDA cores at 0.90 against 156 of TF32 at 0.737; the FP32 path runs Winograd
  // (K = C x 4, not C x 9), the TF32 one an implicit GEMM: 8 x 4/9 x 0.737/0.90 = 2.9 times.
  EXPECT_GT(conv_fp32, 2.5 * conv_default);
  EXPECT_EQ(phase_work(conv, Phase::Forward, Optimizer::Sgd, /*tf32_convolutions=*/false)[0].gemm.k, 256 * 4);
  EXPECT_EQ(phase_work(conv, Phase::Forward, Optimizer::Sgd, /*tf32_convolutions=*/true)[0].gemm.k, 256 * 9);
  const TimeNs fc_default = fwd(fc, Fp32Math::PyTorch), fc_tf32 = fwd(fc, Fp32Math::Tf32);
  EXPECT_EQ(fc_default, fwd(fc, Fp32Math::Fp32));
  EXPECT_GT(fc_default, 3 * fc_tf32);  // a 64-row GEMM: part of it is moving the 64 MB of W
  // The fc: [64 x 4096] over K = 4096 on TF32 tensor cores, moving x, W and y in FP32.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("a100"));
  const double gemm =
      km.gemm_time_ns({.m = 64, .n = 4096, .k = 4096}, DType::F32, 4.0 * (64 * 4096 * 2 + 4096 * 4096), true);
  EXPECT_EQ(fc_tf32, std::llround(gemm + 5000));
  EXPECT_EQ(to_string(Fp32Math::PyTorch), "pytorch");
  EXPECT_EQ(parse_fp32_math("tf32"), Fp32Math::Tf32);
  EXPECT_EQ(parse_fp32_math("TF32"), std::nullopt);
}

// PyTorch's NCHW activations around cuDNN's NHWC tensor-core convolutions: each phase pays two
// transposes (its input-side and output-side tensors, each read and written); channels-last and
// CUDA-core convolutions (FP16 on Pascal) pay none.
TEST(Roofline, TensorCoreConvolutionsOnNchwPayLayoutTransposes) {
  ModelBuilder b("nchw", 32, DType::F16);
  auto x = b.input("x", {32, 64, 56, 56});
  b.conv2d("conv", x, 64, 3, 1, 1, 1, 1, /*bias=*/false);
  const Model m = b.finish();
  const models::Op& conv = op_named(m, "conv");
  const auto plain = phase_work(conv, Phase::Forward, Optimizer::Sgd, false, false);
  const auto wrapped = phase_work(conv, Phase::Forward, Optimizer::Sgd, false, true);
  ASSERT_EQ(wrapped.size(), plain.size() + 2);
  const double tensor = 32.0 * 64 * 56 * 56 * 2;  // [32, 64, 56, 56] fp16 in and out
  EXPECT_EQ(wrapped[1].cls, KernelClass::Memory);
  EXPECT_DOUBLE_EQ(wrapped[1].bytes, 2 * tensor);
  EXPECT_DOUBLE_EQ(wrapped[2].bytes, 2 * tensor);
  RooflineCostModel costs;
  const TimeNs nchw = costs.cost(conv, "A100-SXM4-80GB", Optimizer::Sgd).fwd;
  costs.set_conv_layout(ConvLayout::Nhwc);
  const TimeNs nhwc = costs.cost(conv, "A100-SXM4-80GB", Optimizer::Sgd).fwd;
  // Two kernels moving 2 x 12.8 MB each at the A100's HBM curve, plus their launches.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("a100"));
  EXPECT_EQ(nchw - nhwc, std::llround(2 * (km.memory_time_ns(2 * tensor) + 5000)));
  // Pascal runs FP16 on CUDA cores: no NHWC kernel, no transposes.
  RooflineCostModel pascal;
  const TimeNs gtx = pascal.cost(conv, "GTX-1080", Optimizer::Sgd).fwd;
  pascal.set_conv_layout(ConvLayout::Nhwc);
  EXPECT_EQ(gtx, pascal.cost(conv, "GTX-1080", Optimizer::Sgd).fwd);
  EXPECT_EQ(parse_conv_layout("nhwc"), ConvLayout::Nhwc);
  EXPECT_EQ(parse_conv_layout("NCHW"), std::nullopt);
}

TEST(Roofline, MemoryBoundReluOnV100) {
  ModelBuilder b("relu", 32, DType::F32);
  auto x = b.input("x", {32, 64, 112, 112});
  b.relu("relu", x);
  const Model m = b.finish();
  RooflineCostModel roofline;
  const OpCost c = roofline.cost(op_named(m, "relu"), "v100", Optimizer::Sgd);
  // 25'690'112 floats: read + write = 205'520'896 B at 0.9 of 900 GB/s (over 100 MB) + 5'000
  EXPECT_EQ(c.fwd, 258'730);
  // backward reads dY and the saved output, writes dX: 3 tensors
  EXPECT_EQ(c.bwd_data, 385'594);
  EXPECT_EQ(c.bwd_weight, 0);
  EXPECT_EQ(c.update, 0);
}

TEST(Roofline, EfficiencyCurveHalvesAtFHalf) {
  const RooflineDevice v100 = gpu_roofline_device(hardware::device_spec("V100-SXM2-32GB"));
  // GEMMs of unknown shape: the best-shape fraction with a fill-time curve.
  const double fh = v100.f_half(KernelClass::Gemm, DType::F32);
  EXPECT_DOUBLE_EQ(v100.eff_gemm, 95.0 / 125.0);  // mli/transformers-benchmarks: 95 of 125 TFLOP/s
  EXPECT_DOUBLE_EQ(fh, 95.0 / 125.0 * 15.7e3 * 2000);
  // A kernel of exactly f_half FLOPs runs at half of eff_max: twice the ideal time.
  const KernelWork k{KernelClass::Gemm, 1, fh, 0, {}};
  const double ideal = fh / (15.7e3 * (95.0 / 125.0));
  EXPECT_NEAR(v100.kernel_time_ns(k, DType::F32) - v100.launch_overhead_ns, 2 * ideal, 1e-6);
}

TEST(Roofline, ZeroCostOps) {
  ModelBuilder b("free", 8, DType::F32);
  auto x = b.input("x", {8, 16, 4, 4});
  b.flatten("flat", x);
  const Model m = b.finish();
  RooflineCostModel roofline;
  EXPECT_EQ(roofline.cost(op_named(m, "x"), "h100", Optimizer::Adam).total(), 0);
  EXPECT_EQ(roofline.cost(op_named(m, "flat"), "h100", Optimizer::Adam).total(), 0);
}

TEST(Roofline, LstmPaysLaunchOverheadPerTimestep) {
  ModelBuilder b("lstm", 4, DType::F32);
  auto ids = b.input("ids", {4, 50});
  auto e = b.embedding("emb", ids, 1000, 64);
  b.lstm("lstm", e, 64);
  const Model m = b.finish();
  const models::Op& lstm = op_named(m, "lstm");
  const auto work = phase_work(lstm, Phase::Forward, Optimizer::Sgd);
  std::int64_t launches = 0;
  for (const auto& k : work) launches += k.count;
  EXPECT_EQ(launches, 1 + 2 * 50);  // input GEMM, then a GEMM and a gate kernel per step
  RooflineCostModel roofline;
  const OpCost c = roofline.cost(lstm, "V100-SXM2-32GB", Optimizer::Sgd);
  EXPECT_GT(c.fwd, 101 * 5'000);
  EXPECT_GT(c.bwd_data, 101 * 5'000);
  EXPECT_GT(c.bwd_weight, 0);
}

TEST(Roofline, GatherCopiesTheSelectedRowsAndScattersBack) {
  // [2, 8, 4] fp32 -> 3 positions: forward one copy kernel reading 24 elements + 3 int64 indices and
  // writing 24; backward a memset of the [2, 8, 4] gradient and an index_add of the 24 elements.
  ModelBuilder b("gather", 2, DType::F32);
  b.gather("g", b.linear("h", b.input("x", {2, 8, 4}), 4, 4), 3);
  const Model m = b.finish();
  const models::Op& g = op_named(m, "g");
  const auto fwd = phase_work(g, Phase::Forward, Optimizer::Sgd);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].cls, KernelClass::Memory);
  EXPECT_DOUBLE_EQ(fwd[0].bytes, 24 * 4 + 3 * 8 + 24 * 4);
  const auto bwd = phase_work(g, Phase::BackwardData, Optimizer::Sgd);
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_DOUBLE_EQ(bwd[0].bytes, 64 * 4);              // zero-filled input gradient
  EXPECT_DOUBLE_EQ(bwd[1].bytes, 2 * 24 * 4 + 3 * 8);  // read dy and indices, add into dx
  EXPECT_TRUE(phase_work(g, Phase::BackwardWeight, Optimizer::Sgd).empty());
  EXPECT_TRUE(phase_work(g, Phase::Update, Optimizer::Sgd).empty());
  // On the A100's kernel model: one launch forward, two backward.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("a100"));
  RooflineCostModel costs;
  const OpCost c = costs.cost(g, "A100-SXM4-80GB", Optimizer::Sgd);
  EXPECT_EQ(c.fwd, std::llround(km.memory_time_ns(216) + 5000));
  EXPECT_EQ(c.bwd_data, std::llround((km.memory_time_ns(256) + 5000) + (km.memory_time_ns(216) + 5000)));
  EXPECT_EQ(c.bwd_weight, 0);
}

TEST(Roofline, LayerNormBackwardIsTheInputGradientThenTheWeightGradient) {
  // [2, 8, 16] fp32 through a layer norm (weight and bias): forward reads X twice (statistics,
  // then normalizing) and writes Y; backward one kernel reads dY and X and writes dX, a second
  // reads dY and X again for dgamma and dbeta (PyTorch's GammaBetaBackward).
  ModelBuilder b("ln", 2, DType::F32);
  b.layer_norm("ln", b.linear("h", b.input("x", {2, 8, 16}), 16, 16));
  const Model m = b.finish();
  const models::Op& ln = op_named(m, "ln");
  const double t = 2 * 8 * 16 * 4;  // one tensor's bytes
  const auto bwd = phase_work(ln, Phase::BackwardData, Optimizer::Sgd);
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_DOUBLE_EQ(bwd[0].bytes, 3 * t + 2 * 16 * 4);  // dY, X, dX; the weights read with them
  EXPECT_DOUBLE_EQ(bwd[1].bytes, 2 * t);               // dY and X (its dgamma and dbeta are a row each)
  EXPECT_TRUE(phase_work(ln, Phase::BackwardWeight, Optimizer::Sgd).empty());
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("a100"));
  RooflineCostModel costs;
  const OpCost c = costs.cost(ln, "A100-SXM4-80GB", Optimizer::Sgd);
  EXPECT_EQ(c.bwd_data,
            std::llround((km.memory_time_ns(bwd[0].bytes) + 5000) + (km.memory_time_ns(bwd[1].bytes) + 5000)));
}

TEST(Roofline, MemoryPassIsOneBandwidthBoundLaunchScaledByTheMemoryFactor) {
  // 1 GB on an A100 80GB: 2,039 GB/s at the HBM curve's 0.9 (above 100 MB) plus one 5 us launch.
  RooflineCostModel costs;
  EXPECT_EQ(costs.memory_pass_ns(1'000'000'000, "a100"), std::llround(1e9 / (2039 * 0.9) + 5000));
  EXPECT_EQ(costs.memory_pass_ns(0, "a100"), 0);
  costs.set_kernel_scales(1.0, 2.0);  // only the memory factor applies
  EXPECT_EQ(costs.memory_pass_ns(1'000'000'000, "a100"), std::llround(2 * (1e9 / (2039 * 0.9) + 5000)));
}

TEST(Roofline, GroupedQueryAttentionReadsFewerKeys) {
  // 8 query heads, 2 K/V heads of 8 features, 2 x 16 tokens, fp32: the score GEMM reads q (2 x 16 x 64),
  // k (2 x 16 x 16) and writes the scores (2 x 8 x 16 x 16).
  ModelBuilder b("gqa", 2, DType::F32);
  const auto qkv = b.input("qkv", {2, 16, 96});
  b.attention("core", qkv, 8, 2);
  const Model m = b.finish();
  const auto work = phase_work(op_named(m, "core"), Phase::Forward, Optimizer::Sgd);
  ASSERT_FALSE(work.empty());
  EXPECT_EQ(work.front().bytes, (2 * 16 * 64 + 2 * 16 * 16 + 2 * 8 * 16 * 16) * 4.0);
}

TEST(Roofline, FlashAttentionKeepsNoScoreMatrix) {
  // 4 heads, 2 x 32 tokens, packed qkv of 3 x 64 features, fp16. Flash keeps q|k|v (2 x 32 x 192),
  // the output (2 x 32 x 64), both in fp16, and one fp32 log-sum-exp per head and query (2 x 4 x 32).
  ModelBuilder b("mha", 2, DType::F16);
  const auto qkv = b.input("qkv", {2, 32, 192});
  b.attention("core", qkv, 4);
  const Model m = b.finish();
  const auto& core = op_named(m, "core");
  RooflineCostModel roofline;
  EXPECT_EQ(roofline.cost(core, "A100-SXM4-80GB", Optimizer::Sgd).saved_bytes, -1);  // unfused: the op's own
  roofline.set_attention_kernel(AttentionKernel::Flash);
  const Bytes flash = (2 * 32 * 192 + 2 * 32 * 64) * 2 + 2 * 4 * 32 * 4;
  EXPECT_EQ(roofline.cost(core, "A100-SXM4-80GB", Optimizer::Sgd).saved_bytes, flash);
  EXPECT_LT(flash, core.activation_bytes);
  EXPECT_EQ(roofline.cost(core, "cpu", Optimizer::Sgd).saved_bytes, -1);  // CPUs run the unfused decomposition
}

// A causal self-attention's fused kernels compute half the score matrix, at the rate measured on
// that count: 8 x 2048 tokens, 16 heads of 128 (a 2048-wide packed q|k|v), bf16, on an H100.
TEST(Roofline, FusedCausalAttentionIsHalfTheWorkAtTheCausalRate) {
  ModelBuilder b("mha", 8, DType::BF16);
  const auto qkv = b.linear("qkv", b.input("x", {8, 2048, 64}), 64, 3 * 2048);  // a gradient to pass back
  b.attention("full", qkv, 16);
  b.attention("causal", qkv, 16, 0, 0.0, /*causal=*/true);
  const Model m = b.finish();
  RooflineCostModel roofline;
  roofline.set_attention_kernel(AttentionKernel::Flash);
  const double flops = 4.0 * 8 * 2048 * 2048 * 2048;  // 4 x batch x queries x keys x (heads x head dim)
  const double peak = 989.4e3;                        // FLOP per ns (the datasheet peak)
  const auto ns = [&](const char* op, Phase p) {
    return roofline.cost(op_named(m, op), "H100-SXM5-80GB", Optimizer::Adam).at(p);
  };
  EXPECT_EQ(ns("full", Phase::Forward), std::llround(flops / (peak * 617 / 989) + 5000));
  EXPECT_EQ(ns("causal", Phase::Forward), std::llround(flops / 2 / (peak * 484 / 989) + 5000));
  EXPECT_EQ(ns("causal", Phase::BackwardData), std::llround(2.5 * flops / 2 / (peak * 465 / 989 * 484 / 617) + 5000));
  // FlashAttention-2's kernels on the same GPU: its own, slower rates.
  roofline.set_attention_kernel(AttentionKernel::Flash2);
  EXPECT_EQ(ns("causal", Phase::Forward), std::llround(flops / 2 / (peak * 298 / 989) + 5000));
  // MosaicML's Triton kernel: FlashAttention-2's rates on the whole matrix, mask or not.
  roofline.set_attention_kernel(AttentionKernel::Triton);
  EXPECT_EQ(ns("causal", Phase::Forward), std::llround(flops / (peak * 362 / 989) + 5000));
  EXPECT_EQ(ns("causal", Phase::BackwardData), ns("full", Phase::BackwardData));
  EXPECT_EQ(ns("full", Phase::BackwardData), std::llround(2.5 * flops / (peak * 291 / 989) + 5000));
}

// A linear layer's three GEMMs on row-major tensors: every stride is in or out, never the token
// count; on an H200 a 768 -> 50257 head (GPT-2's vocabulary) runs all three at cuBLAS's fallback.
TEST(Roofline, LinearStridesAreItsFeatureCounts) {
  ModelBuilder b("head", 8, DType::BF16);
  auto x = b.input("x", {8, 1023, 768});  // 8,184 tokens: no multiple of 16 bytes needed there
  b.linear("lm_head", b.layer_norm("ln", x), 768, 50257, /*bias=*/false);  // not the input: has a dgrad
  const Model m = b.finish();
  const models::Op& head = op_named(m, "lm_head");
  const hardware::GemmShape fwd = phase_work(head, Phase::Forward, Optimizer::Adam)[0].gemm;
  const hardware::GemmShape dgrad = phase_work(head, Phase::BackwardData, Optimizer::Adam)[0].gemm;
  const hardware::GemmShape wgrad = phase_work(head, Phase::BackwardWeight, Optimizer::Adam)[0].gemm;
  EXPECT_EQ((std::array<std::int64_t, 6>{fwd.m, fwd.n, fwd.k, fwd.lda, fwd.ldb, fwd.ldc}),
            (std::array<std::int64_t, 6>{8184, 50257, 768, 768, 768, 50257}));
  EXPECT_EQ((std::array<std::int64_t, 6>{dgrad.m, dgrad.n, dgrad.k, dgrad.lda, dgrad.ldb, dgrad.ldc}),
            (std::array<std::int64_t, 6>{8184, 768, 50257, 50257, 768, 768}));
  EXPECT_EQ((std::array<std::int64_t, 6>{wgrad.m, wgrad.n, wgrad.k, wgrad.lda, wgrad.ldb, wgrad.ldc}),
            (std::array<std::int64_t, 6>{50257, 768, 8184, 50257, 768, 768}));
  // Each at its fallback rate on an H200: C's stride odd in the forward, an input's in the others.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("h200"));
  hardware::KernelModel at_output = km, at_input = km;
  at_output.tensor_core_fraction = km.unaligned_output_fraction;  // the same rate, aligned
  at_input.tensor_core_fraction = km.unaligned_input_fraction;
  hardware::GemmShape plain_fwd = fwd, plain_dgrad = dgrad, plain_wgrad = wgrad;
  plain_fwd.lda = plain_fwd.ldb = plain_fwd.ldc = plain_dgrad.lda = plain_wgrad.lda = 768;
  EXPECT_DOUBLE_EQ(km.gemm_time_ns(fwd, DType::BF16), at_output.gemm_time_ns(plain_fwd, DType::BF16));
  EXPECT_DOUBLE_EQ(km.gemm_time_ns(dgrad, DType::BF16), at_input.gemm_time_ns(plain_dgrad, DType::BF16));
  EXPECT_DOUBLE_EQ(km.gemm_time_ns(wgrad, DType::BF16), at_input.gemm_time_ns(plain_wgrad, DType::BF16));
}

// torch.optim's foreach steps over fp32 tensors: AdamW 80 B per parameter (8 passes), momentum SGD
// 44, SGD 24; the fused kernel's 28 / 20 / 12 (fp32 training) by default.
TEST(Roofline, ForeachOptimizerMovesAPassPerStep) {
  EXPECT_EQ(foreach_optimizer_traffic_bytes_per_param(Optimizer::Adam), 80);
  EXPECT_EQ(foreach_optimizer_traffic_bytes_per_param(Optimizer::Momentum), 44);
  EXPECT_EQ(foreach_optimizer_traffic_bytes_per_param(Optimizer::Sgd), 24);
  ModelBuilder b("upd", 8, DType::BF16);
  auto x = b.input("x", {8, 4096});
  b.linear("fc", x, 4096, 4096);
  const Model m = b.finish();
  const auto& fc = op_named(m, "fc");
  RooflineCostModel fused, foreach;
  foreach
    .set_optimizer_kernels(OptimizerKernels::Foreach);
  const double params = 4096.0 * 4096 + 4096;  // 16.8 M: 1.34 GB at 80 B, past the HBM curve's 100 MB
  EXPECT_EQ(foreach.cost(fc, "H200-SXM-141GB", Optimizer::Adam).update,
            std::llround(params * 80 / (4800 * 0.9) + 5000));
  // bf16 training's fused Adam: bf16 gradient, fp32 master, two fp32 moments, bf16 weight copy.
  EXPECT_EQ(fused.cost(fc, "H200-SXM-141GB", Optimizer::Adam).update, std::llround(params * 28 / (4800 * 0.9) + 5000));
  EXPECT_EQ(foreach.cost(fc, "H200-SXM-141GB", Optimizer::Adam).fwd,
            fused.cost(fc, "H200-SXM-141GB", Optimizer::Adam).fwd);
  EXPECT_NE(foreach.describe().find("foreach"), std::string::npos);
  EXPECT_NE(fused.describe().find("fused optimizer kernels"), std::string::npos);
  EXPECT_EQ(parse_optimizer_kernels("foreach"), OptimizerKernels::Foreach);
  EXPECT_EQ(parse_optimizer_kernels("fused"), OptimizerKernels::Fused);
  EXPECT_EQ(parse_optimizer_kernels("apex"), std::nullopt);
}

// Eager torch.autocast over fp32 modules, bf16 on an H200: the norm, the residual add, the
// embedding and the loss move their bytes at 4 B an element (twice bf16's), a cast kernel follows
// the norm (6 B an element each way) and precedes the loss, and the linear's weight is cast in
// the forward and its gradient back after the weight-gradient GEMM (6 B per weight each).
TEST(Roofline, AutocastWidensNormsResidualAndLossAndCastsAroundThem) {
  ModelBuilder b("autocast", 4, DType::BF16);
  auto ids = b.input("ids", {4, 256});
  auto x = b.embedding("wte", ids, 1000, 512);
  auto ln = b.layer_norm("ln", x);
  auto fc = b.linear("fc", ln, 512, 512, /*bias=*/false);
  auto res = b.residual_add("res", {x, fc});
  auto plain = b.add("plain", {res, fc});
  b.cross_entropy("loss", b.linear("head", plain, 512, 1000, false));
  const Model m = b.finish();
  RooflineCostModel native, autocast;
  autocast.set_mixed_precision(MixedPrecision::Autocast);
  const RooflineDevice& h200 = native.device("H200-SXM-141GB");
  auto kernel = [&](double bytes) {
    return h200.kernel_time_ns(KernelWork{KernelClass::Memory, 1, 0.0, bytes}, DType::BF16);
  };
  auto widened = [&](const char* name, Phase p) {
    double t = 0;
    for (const KernelWork& k : phase_work(op_named(m, name), p, Optimizer::Adam)) t += kernel(2 * k.bytes);
    return t;
  };
  auto at = [](const RooflineCostModel& c, const models::Op& op, Phase p) {
    return c.phase_time(op, p, c.device("H200-SXM-141GB"), Optimizer::Adam);
  };
  const double e = 4.0 * 256 * 512;  // the norm's elements
  EXPECT_EQ(at(autocast, op_named(m, "ln"), Phase::Forward),
            std::llround(widened("ln", Phase::Forward) + kernel(6 * e)));
  EXPECT_EQ(at(autocast, op_named(m, "ln"), Phase::BackwardData),
            std::llround(widened("ln", Phase::BackwardData) + kernel(6 * e)));
  EXPECT_EQ(at(autocast, op_named(m, "res"), Phase::Forward), std::llround(widened("res", Phase::Forward)));
  EXPECT_EQ(at(autocast, op_named(m, "wte"), Phase::Forward), std::llround(widened("wte", Phase::Forward)));
  // An add off the residual stream stays in bf16.
  EXPECT_EQ(at(autocast, op_named(m, "plain"), Phase::Forward), at(native, op_named(m, "plain"), Phase::Forward));
  // The loss: fp32 log-softmax plus the logits' cast (4 x 256 x 1000 elements).
  EXPECT_EQ(at(autocast, op_named(m, "loss"), Phase::Forward),
            std::llround(widened("loss", Phase::Forward) + kernel(6.0 * 4 * 256 * 1000)));
  // The linear: its GEMMs as before, a weight cast each way.
  const models::Op& lin = op_named(m, "fc");
  const double cast = kernel(6.0 * 512 * 512);  // each time rounds to the ns on its own
  EXPECT_NEAR(static_cast<double>(at(autocast, lin, Phase::Forward) - at(native, lin, Phase::Forward)), cast, 1.0);
  EXPECT_NEAR(static_cast<double>(at(autocast, lin, Phase::BackwardWeight) - at(native, lin, Phase::BackwardWeight)),
              cast, 1.0);
  EXPECT_EQ(at(autocast, lin, Phase::BackwardData), at(native, lin, Phase::BackwardData));
  EXPECT_NE(autocast.describe().find("torch.autocast"), std::string::npos);
  EXPECT_EQ(parse_mixed_precision("autocast"), MixedPrecision::Autocast);
  EXPECT_EQ(parse_mixed_precision("amp"), std::nullopt);
}

TEST(Roofline, OptimizerTrafficScalesUpdate) {
  ModelBuilder b("upd", 8, DType::F32);
  auto x = b.input("x", {8, 1024});
  b.linear("fc", x, 1024, 1024);
  const Model m = b.finish();
  RooflineCostModel roofline;
  const auto& fc = op_named(m, "fc");
  const TimeNs sgd = roofline.cost(fc, "A100-SXM4-80GB", Optimizer::Sgd).update;
  const TimeNs adam = roofline.cost(fc, "A100-SXM4-80GB", Optimizer::Adam).update;
  // params * bytes at the HBM fraction for that many bytes (0.75 at 10 MB rising to 0.9 at
  // 100 MB) + 5'000, with 12 vs 28 bytes per parameter
  const double params = 1024.0 * 1024 + 1024;
  auto fraction = [](double bytes) { return 0.75 + 0.15 * (bytes - 1e7) / 9e7; };
  EXPECT_EQ(sgd, std::llround(params * 12 / (2039 * fraction(params * 12)) + 5000));
  EXPECT_EQ(adam, std::llround(params * 28 / (2039 * fraction(params * 28)) + 5000));
}

// A Zen 5 VM's /proc/cpuinfo has no "cpu MHz" line: the clock comes from cpufreq, else it is
// timed; it is never the 2000 MHz default on x86-64.
TEST(Roofline, HostClockComesFromCpuinfoThenCpufreqThenAMeasurement) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("parasim_cpu_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "cpu0" / "cpufreq");
  const std::string zen5 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B45\n"
                           "flags\t\t: fpu avx2 fma avx512f\n\nprocessor\t: 1\n";
  std::ofstream(dir / "cpuinfo") << zen5;
  std::ofstream(dir / "cpuinfo_mhz") << "processor\t: 0\ncpu MHz\t\t: 2596.152\nflags\t\t: avx2 fma\n";
  std::ofstream(dir / "cpu0" / "cpufreq" / "cpuinfo_max_freq") << "3700000\n";

  const HostCpu with_mhz = detect_host_cpu_from((dir / "cpuinfo_mhz").string(), (dir / "cpu0").string());
  EXPECT_DOUBLE_EQ(with_mhz.mhz, 2596.152);
  EXPECT_EQ(with_mhz.clock_source, "/proc/cpuinfo");

  const HostCpu cpufreq = detect_host_cpu_from((dir / "cpuinfo").string(), (dir / "cpu0").string());
  EXPECT_DOUBLE_EQ(cpufreq.mhz, 3700.0);
  EXPECT_EQ(cpufreq.clock_source, "cpufreq");
  EXPECT_EQ(cpufreq.logical_cpus, 2);
  EXPECT_EQ(cpufreq.simd_fp32_lanes, 16);
  EXPECT_DOUBLE_EQ(cpufreq.peak_gflops(1), 3.7 * 16 * 2 * 2);  // 236.8 GFLOP/s per core

  std::filesystem::remove(dir / "cpu0" / "cpufreq" / "cpuinfo_max_freq");
  const HostCpu timed = detect_host_cpu_from((dir / "cpuinfo").string(), (dir / "cpu0").string());
#if defined(__x86_64__)
  EXPECT_EQ(timed.clock_source, "measured");
  EXPECT_DOUBLE_EQ(timed.mhz, measure_host_clock_mhz());
  EXPECT_GT(timed.mhz, 0);
#else
  EXPECT_EQ(timed.clock_source, "default");
#endif
  std::filesystem::remove_all(dir);
}

TEST(Roofline, HostCpuIsADevice) {
  const HostCpu host = detect_host_cpu();
  EXPECT_GE(host.logical_cpus, 1);
  EXPECT_GT(host.peak_gflops(1), 1.0);
  const RooflineDevice cpu = cpu_roofline_device(host, 1);
  EXPECT_TRUE(cpu.is_cpu);
  EXPECT_EQ(cpu.spec.kind.rfind("cpu-", 0), 0u);
  RooflineCostModel roofline;
  ModelBuilder b("c", 1, DType::F32);
  auto x = b.input("x", {1, 3, 32, 32});
  auto c1 = b.conv2d("c1", x, 8, 3, 1, 1);
  b.relu("r", c1);
  const Model m = b.finish();
  EXPECT_GT(roofline.cost(op_named(m, "c1"), "cpu", Optimizer::Sgd).fwd, 0);
  EXPECT_GT(roofline.cost(op_named(m, "c1"), cpu.spec.kind, Optimizer::Sgd).fwd, 0);
}

TEST(Roofline, UnknownDeviceIsAnInputError) {
  RooflineCostModel roofline;
  ModelBuilder b("c", 1, DType::F32);
  auto x = b.input("x", {1, 4});
  b.relu("r", x);
  const Model m = b.finish();
  try {
    roofline.cost(op_named(m, "r"), "tpu-v9", Optimizer::Sgd);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("roofline: unknown device kind \"tpu-v9\"; known kinds: V100-SXM2-16GB, ", 0),
              0u);
  }
}

}  // namespace
}  // namespace parasim::profiler

namespace parasim::profiler {
namespace {

// FP8 matmuls (docs/models.md "FP8 matmuls"): one transformer-layer linear x [1, 1024, 4096] ->
// 4096 features (16,777,216 weights, no bias) and the same linear outside any block (an LM head).
models::Model fp8_linears(models::DType dtype) {
  models::ModelBuilder b("fp8", 1, dtype);
  auto x = b.input("x", {1, 1024, 4096});
  x = b.relu("relu", x);
  {
    auto scope = b.block("h.0");
    x = b.linear("fc", x, 4096, 4096, /*bias=*/false);
  }
  b.linear("head", x, 4096, 4096, /*bias=*/false);
  return b.finish();
}

/// A bandwidth-bound kernel on the H100 kernel model, by hand: Calculon's HBM curve (0.75 at
/// 10 MB, 0.9 at 100 MB, linear between) at 3350 GB/s, plus the 5 us launch.
double h100_memory_kernel_ns(double bytes) {
  const double fraction = 0.75 + 0.15 * (bytes - 1e7) / 9e7;
  return bytes / (3350.0 * fraction) + 5000.0;
}

/// Launches of a phase's kernels (a KernelWork of count n is n launches).
std::int64_t launches(const std::vector<KernelWork>& ks) {
  std::int64_t n = 0;
  for (const KernelWork& k : ks) n += k.count;
  return n;
}

TEST(RooflineFp8, CastKernelsBeforeEachFp8Gemm) {
  const models::Model m = fp8_linears(models::DType::FP8);
  const models::Op& fc = m.op(*m.find_op("fc"));
  const models::Op& head = m.op(*m.find_op("head"));
  EXPECT_TRUE(fp8_gemm(fc));
  EXPECT_FALSE(fp8_gemm(head));  // the LM head stays in bf16
  EXPECT_EQ(compute_dtype(fc), models::DType::FP8);
  EXPECT_EQ(compute_dtype(head), models::DType::BF16);
  // Forward: the GEMM, then the cast-transpose of X (4,194,304 elements, 4 B each).
  const std::vector<KernelWork> fwd = phase_work(fc, Phase::Forward, Optimizer::Adam);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(fwd[0].cls, KernelClass::Gemm);
  EXPECT_EQ(fwd[1].bytes, 4.0 * 4194304);
  // Backward-data: the cast-transpose of dY; backward-weight reuses the transposed copies.
  const std::vector<KernelWork> bd = phase_work(fc, Phase::BackwardData, Optimizer::Adam);
  ASSERT_EQ(bd.size(), 2u);
  EXPECT_EQ(bd[1].bytes, 4.0 * 4194304);
  EXPECT_EQ(phase_work(fc, Phase::BackwardWeight, Optimizer::Adam).size(), 1u);
  // W (16,777,216 elements) is cast once per step, with the update (Transformer Engine caches
  // it from the first micro-batch on): after the optimizer's kernel, before the amax history.
  const std::vector<KernelWork> up = phase_work(fc, Phase::Update, Optimizer::Adam);
  ASSERT_EQ(up.size(), 3u);
  EXPECT_EQ(up[1].bytes, 4.0 * 16777216);
  EXPECT_EQ(up[1].count, 1);
  EXPECT_EQ(up[2].count, 0);  // the amax history: no launch of its own
  // Exact times on H100: 16,777,216 B in 6,578.4 + 5,000 ns; 67,108,864 B in 23,702.0 + 5,000 ns.
  const RooflineCostModel roofline;
  const RooflineDevice& h100 = roofline.device("H100-SXM5-80GB");
  EXPECT_NEAR(h100.kernel_time_ns(fwd[1], models::DType::FP8), h100_memory_kernel_ns(16777216.0), 1e-6);
  EXPECT_NEAR(h100.kernel_time_ns(up[1], models::DType::FP8), h100_memory_kernel_ns(67108864.0), 1e-6);
  EXPECT_NEAR(h100_memory_kernel_ns(16777216.0), 11578.4, 0.1);
  // The op's forward: the FP8 GEMM plus the cast of X.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("h100"));
  const double gemm = km.gemm_time_ns({.m = 1024, .n = 4096, .k = 4096}, models::DType::FP8, fwd[0].bytes) + 5000;
  EXPECT_EQ(roofline.cost(fc, "H100-SXM5-80GB", Optimizer::Adam).fwd,
            std::llround(gemm + h100_memory_kernel_ns(16777216.0)));
}

TEST(RooflineFp8, ForeachOptimizerLeavesTheWeightCastAlone) {
  // torch.optim's foreach AdamW rewrites the optimizer's kernel (80 B a parameter); the FP8 weight
  // cast (4 B a parameter) and the amax history (no launch) after it keep their bytes.
  const models::Model m = fp8_linears(models::DType::FP8);
  const models::Op& fc = m.op(*m.find_op("fc"));
  RooflineCostModel roofline;
  roofline.set_optimizer_kernels(OptimizerKernels::Foreach);
  const RooflineDevice& h100 = roofline.device("H100-SXM5-80GB");
  const double p = 16777216.0;
  KernelWork optimizer = phase_work(fc, Phase::Update, Optimizer::Adam).front();
  optimizer.bytes = 80 * p;
  const KernelWork cast{KernelClass::Memory, 1, 0.0, 4 * p};
  const double amax = h100.kernels->memory_time_ns(3.0 * kFp8AmaxHistory * 4 * 2);
  EXPECT_EQ(roofline.phase_time(fc, Phase::Update, h100, Optimizer::Adam),
            std::llround(h100.kernel_time_ns(optimizer, models::DType::FP8) +
                         h100.kernel_time_ns(cast, models::DType::FP8) + amax));
}

/// An expert bank in a transformer block: 1,024 tokens of width 4096, top-2 of 8 SwiGLU experts of
/// width 1024 (2,048 slots), after a relu so that its backward-data phase exists.
models::Model expert_bank(models::DType dtype) {
  models::ModelBuilder b("moe", 1, dtype);
  const auto x = b.relu("h", b.input("x", {1, 1024, 4096}));
  {
    auto scope = b.block("h.0");
    b.experts("moe", x, 8, 2, 1024, /*gated=*/true);
  }
  return b.finish();
}

TEST(RooflineFp8, ExpertGemmsCastTheirRoutedSlots) {
  // Each expert GEMM casts its own input: fc1 the dispatched slots (2,048 x 4,096), fc2 the
  // activation (2,048 x 1,024); backward fc2's output gradient (2,048 x 4,096) and fc1's (2,048 x 2,048).
  const models::Model fp8 = expert_bank(models::DType::FP8);
  const models::Op& op = fp8.op(*fp8.find_op("moe"));
  ASSERT_TRUE(fp8_gemm(op));
  // The bank's kernels as in bf16 (the same op in a bf16 model), then the two casts.
  const models::Model bf16 = expert_bank(models::DType::BF16);
  const models::Op& bf16_op = bf16.op(*bf16.find_op("moe"));
  const std::size_t bank_fwd = phase_work(bf16_op, Phase::Forward, Optimizer::Adam).size();
  const std::size_t bank_bd = phase_work(bf16_op, Phase::BackwardData, Optimizer::Adam).size();
  const std::vector<KernelWork> fwd = phase_work(op, Phase::Forward, Optimizer::Adam);
  ASSERT_EQ(fwd.size(), bank_fwd + 2);
  EXPECT_EQ(launches(fwd), 33 + 2);
  EXPECT_EQ(fwd[bank_fwd].bytes, 4.0 * 2048 * 4096);
  EXPECT_EQ(fwd[bank_fwd + 1].bytes, 4.0 * 2048 * 1024);
  const std::vector<KernelWork> bd = phase_work(op, Phase::BackwardData, Optimizer::Adam);
  ASSERT_EQ(bd.size(), bank_bd + 2);
  EXPECT_EQ(launches(bd), 24 + 2);
  EXPECT_EQ(bd[bank_bd].bytes, 4.0 * 2048 * 4096);
  EXPECT_EQ(bd[bank_bd + 1].bytes, 4.0 * 2048 * 2048);
  // Once per step: the experts' 8 x 3 x 1024 x 4096 weights (not the router's 8 x 4096), and the
  // amax histories of 16 FP8 GEMMs (fc1 and fc2 of each expert; 3 tensors, 1024 fp32, read and written).
  ASSERT_EQ(op.params, 8 * 4096 + 8 * 3 * 1024 * 4096);
  const std::vector<KernelWork> up = phase_work(op, Phase::Update, Optimizer::Adam);
  ASSERT_EQ(up.size(), 3u);
  EXPECT_EQ(up[1].bytes, 4.0 * 8 * 3 * 1024 * 4096);
  EXPECT_EQ(up[2].bytes, 16.0 * 3 * 1024 * 4 * 2);
  EXPECT_EQ(up[2].count, 0);
}

TEST(RooflineFp8, GemmOnFp8TensorCoresOthersAsBf16) {
  const models::Model fp8 = fp8_linears(models::DType::FP8);
  const models::Model bf16 = fp8_linears(models::DType::BF16);
  const RooflineCostModel roofline;
  auto fwd = [&](const models::Model& m, const char* op) {
    return roofline.cost(m.op(*m.find_op(op)), "H100-SXM5-80GB", Optimizer::Adam).fwd;
  };
  EXPECT_EQ(fwd(fp8, "head"), fwd(bf16, "head"));
  EXPECT_EQ(fwd(fp8, "relu"), fwd(bf16, "relu"));
  // A large compute-bound GEMM: 1979 vs 989.4 TFLOP/s dense, the FP8 path at 91.4% of the 16-bit
  // achievable fraction (MAMF tables): 0.5 / 0.914 = 0.547 of the BF16 time, plus stores and fill.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("h100"));
  const hardware::GemmShape big{.m = 16384, .n = 16384, .k = 16384};
  const double ratio = km.gemm_time_ns(big, models::DType::FP8) / km.gemm_time_ns(big, models::DType::BF16);
  EXPECT_GT(ratio, 0.54);
  EXPECT_LT(ratio, 0.57);
}

TEST(RooflineFp8, NeedsHopper) {
  const models::Model m = fp8_linears(models::DType::FP8);
  const RooflineCostModel roofline;
  try {
    (void)roofline.cost(m.op(*m.find_op("fc")), "A100-SXM4-80GB", Optimizer::Adam);
    FAIL() << "fp8 on an A100 was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--dtype fp8: device A100-SXM4-80GB has no FP8 tensor cores; FP8 matmuls need Hopper or "
                 "later (H100, H200, B200)");
  }
  EXPECT_NO_THROW((void)roofline.cost(m.op(*m.find_op("fc")), "H200-SXM-141GB", Optimizer::Adam));
}

}  // namespace
}  // namespace parasim::profiler

namespace parasim::profiler {
namespace {

const KernelWork& nth_gemm(const std::vector<KernelWork>& ks, int i) {
  for (const KernelWork& k : ks)
    if (k.cls != KernelClass::Memory && i-- == 0) return k;
  throw std::out_of_range("no such GEMM");
}

TEST(RooflineExperts, GroupedGemmsOverEachExpertsShareOfTheSlots) {
  // 64 tokens of width 32, top-2 of 4 SwiGLU experts of width 16: 128 slots, 32 per expert.
  models::ModelBuilder b("moe", 1, DType::BF16);
  const auto x = b.input("x", {1, 64, 32});
  const auto h = b.relu("h", x);  // not fed by data: the backward-data phase exists
  const auto e = b.experts("moe", h, 4, 2, 16, /*gated=*/true);
  const models::Op& op = b.op(e);
  // Router 64x4x32, fc1 128x32x32 (gate|up), fc2 128x16x32 multiply-accumulates.
  ASSERT_EQ(op.macs_fwd, 64 * 4 * 32 + 128 * 32 * 32 + 128 * 16 * 32);
  const std::vector<KernelWork> fwd = phase_work(op, Phase::Forward, Optimizer::Adam);
  const KernelWork& router = nth_gemm(fwd, 0);
  EXPECT_EQ(router.gemm.m, 64);
  EXPECT_EQ(router.gemm.n, 4);
  EXPECT_EQ(router.gemm.k, 32);
  const KernelWork& fc1 = nth_gemm(fwd, 1);
  EXPECT_EQ(fc1.gemm.m, 32);  // one expert's share of the slots
  EXPECT_EQ(fc1.gemm.n, 32);
  EXPECT_EQ(fc1.gemm.k, 32);
  EXPECT_EQ(fc1.gemm.batch, 4);
  const KernelWork& fc2 = nth_gemm(fwd, 2);
  EXPECT_EQ(fc2.gemm.m, 32);
  EXPECT_EQ(fc2.gemm.n, 32);
  EXPECT_EQ(fc2.gemm.k, 16);
  EXPECT_EQ(fc2.gemm.batch, 4);
  double flops = 0;
  for (const KernelWork& k : fwd) flops += k.flops * static_cast<double>(k.count);
  EXPECT_EQ(flops, 2.0 * static_cast<double>(op.macs_fwd));
  // The backward-data and backward-weight GEMMs do the forward's FLOPs again each, transposed.
  for (Phase phase : {Phase::BackwardData, Phase::BackwardWeight}) {
    double f = 0;
    for (const KernelWork& k : phase_work(op, phase, Optimizer::Adam)) f += k.flops * static_cast<double>(k.count);
    EXPECT_EQ(f, 2.0 * static_cast<double>(op.macs_fwd)) << parasim::to_string(phase);
  }
  const std::vector<KernelWork> wgrad = phase_work(op, Phase::BackwardWeight, Optimizer::Adam);
  ASSERT_EQ(wgrad.size(), 3u);
  EXPECT_EQ(wgrad[0].gemm.m, 32);  // dW1 = dH^T X per expert: 32 x 32 over its 32 slots
  EXPECT_EQ(wgrad[0].gemm.k, 32);
  EXPECT_EQ(wgrad[0].gemm.batch, 4);
}

TEST(RooflineExperts, MegatronCoreEagerRoutingKernels) {
  // Megatron-Core core_r0.9.0 in eager PyTorch, dropless, per micro-batch: the router GEMM, 15
  // router kernels (top-k select and sort, the fp32 softmax of the k scores and its casts, the
  // softmax over all experts for the loss, the mass per expert, five scalar ops, histc), 10 of
  // the dispatch (histc, four count sums, a slice copy, the argsort, //k, the gather), fc1, the
  // activation, fc2, and 4 of the combine (zeros, scatter_add, the probability weighting, the
  // sum over k): 33 launches. Backward-data: 4 + fc2 + activation + fc1 + 2 + router GEMM + 14.
  models::ModelBuilder b("moe", 1, DType::BF16);
  const auto h = b.relu("h", b.input("x", {1, 64, 32}));
  const models::Op& op = b.op(b.experts("moe", h, 4, 2, 16, /*gated=*/true));
  const std::vector<KernelWork> fwd = phase_work(op, Phase::Forward, Optimizer::Adam);
  EXPECT_EQ(launches(fwd), 33);
  EXPECT_EQ(launches(phase_work(op, Phase::BackwardData, Optimizer::Adam)), 24);
  // The gather moves the 128 token-expert pairs of width 32 (bf16) out and in; the combine's
  // weighting reads and writes them again, its sum reads them and writes the 64 tokens.
  std::vector<double> bytes;
  for (const KernelWork& k : fwd)
    if (k.cls == KernelClass::Memory) bytes.push_back(k.bytes);
  EXPECT_EQ(bytes[bytes.size() - 6], 2.0 * 128 * 32 * 2);  // the gather (before fc1 and the activation)
  EXPECT_EQ(bytes[bytes.size() - 2], 2.0 * 128 * 32 * 2);  // the probability weighting
  EXPECT_EQ(bytes.back(), (128.0 * 32 + 64 * 32) * 2);     // the sum over k
  // Transformer Engine's fused router (4 kernels) and permutation (a row-id map and the gather;
  // one probability-weighted un-permute): 11 launches forward, 10 backward.
  const profiler::MoeKernels fused{true, true};
  EXPECT_EQ(launches(phase_work(op, Phase::Forward, Optimizer::Adam, false, false, fused)), 11);
  EXPECT_EQ(launches(phase_work(op, Phase::BackwardData, Optimizer::Adam, false, false, fused)), 10);
  // Capacity-padded (Grok-1's recipe: capacity factor 1, padded): the router builds the capacity
  // mask (26 kernels), the dispatch is an index_select (3), the combine 4; backward 3 more.
  models::ModelBuilder c("moe", 1, DType::BF16);
  const auto hc = c.relu("h", c.input("x", {1, 64, 32}));
  models::Op padded = c.op(c.experts("moe", hc, 4, 2, 16, /*gated=*/true));
  padded.attrs.capacity_factor = 1.0;
  EXPECT_EQ(launches(phase_work(padded, Phase::Forward, Optimizer::Adam)), 1 + 26 + 3 + 3 + 4);
  EXPECT_EQ(launches(phase_work(padded, Phase::BackwardData, Optimizer::Adam)), 4 + 3 + 2 + 1 + 17);
}

TEST(RooflineExperts, LaunchesAreTheCountTimesTheOverhead) {
  // The eager bank's 33 forward and 24 backward-data launches at the H100's 5 us each (the
  // weight-gradient phase: three GEMMs); a calibration's factors scale them with their class.
  models::ModelBuilder b("moe", 1, DType::BF16);
  const auto h = b.relu("h", b.input("x", {1, 64, 32}));
  const models::Op& op = b.op(b.experts("moe", h, 4, 2, 16, /*gated=*/true));
  RooflineCostModel roofline;
  OpCost c = roofline.cost(op, "H100-SXM5-80GB", Optimizer::Adam);
  EXPECT_EQ(c.launch_fwd, 33 * 5000);
  EXPECT_EQ(c.launch_bwd_data, 24 * 5000);
  EXPECT_EQ(c.launch_bwd_weight, 3 * 5000);
  roofline.set_kernel_scales(2.0, 3.0);  // matrix x2: the router, fc1, fc2; memory x3: the other 30
  c = roofline.cost(op, "H100-SXM5-80GB", Optimizer::Adam);
  EXPECT_EQ(c.launch_fwd, 3 * 2 * 5000 + 30 * 3 * 5000);
}

TEST(RooflineExperts, MoeKernelNamesRoundTrip) {
  for (const char* name : {"eager", "fused", "fused-router", "fused-permute"}) {
    const auto k = profiler::parse_moe_kernels(name);
    ASSERT_TRUE(k) << name;
    EXPECT_EQ(profiler::to_string(*k), name);
  }
  EXPECT_FALSE(profiler::parse_moe_kernels("fast"));
}

TEST(RooflineExperts, MixtralLayerRunsNearTheTensorCorePeak) {
  // Mixtral 8x7B's expert bank for 4,096 tokens on an H100: 2.9 TFLOP forward. It was once priced
  // as one GEMM with K = 1 (the op has no in_features) writing 481 GB: bandwidth-bound, not this.
  models::ModelBuilder b("moe", 1, DType::BF16);
  const auto x = b.relu("h", b.input("x", {1, 4096, 4096}));
  const models::Op& op = b.op(b.experts("moe", x, 8, 2, 14336, /*gated=*/true));
  const RooflineCostModel roofline;
  const RooflineDevice& h100 = roofline.device("H100-SXM5-80GB");
  const double flops = 2.0 * static_cast<double>(op.macs_fwd);
  const double ns = static_cast<double>(roofline.phase_time(op, Phase::Forward, h100, Optimizer::Adam));
  const double achieved = flops / ns / 989e3;  // of the 989 TFLOP/s BF16 peak
  EXPECT_GT(achieved, 0.6);
  EXPECT_LT(achieved, 0.748);  // never above the achievable fraction
}

}  // namespace
}  // namespace parasim::profiler
