#include "parasim/common/grad_accumulation.hpp"

#include <gtest/gtest.h>

namespace parasim {
namespace {

TEST(GradAccumulation, NamesRoundTripAndUnknownIsRefused) {
  for (GradAccumulation a : {GradAccumulation::Auto, GradAccumulation::InPlace, GradAccumulation::Fp32Buffer,
                             GradAccumulation::Buffer, GradAccumulation::Fused, GradAccumulation::FusedBuffer})
    EXPECT_EQ(parse_grad_accumulation(to_string(a)), a);
  EXPECT_FALSE(parse_grad_accumulation("inplace").has_value());
  EXPECT_FALSE(parse_grad_accumulation("").has_value());
}

TEST(GradAccumulation, AutoIsAnFp32BufferForLowPrecisionAndInPlaceForFp32) {
  EXPECT_EQ(resolve(GradAccumulation::Auto, DType::F32), GradAccumulation::InPlace);
  EXPECT_EQ(resolve(GradAccumulation::Auto, DType::F16), GradAccumulation::Fp32Buffer);
  EXPECT_EQ(resolve(GradAccumulation::Auto, DType::BF16), GradAccumulation::Fp32Buffer);
  EXPECT_EQ(resolve(GradAccumulation::Auto, DType::FP8), GradAccumulation::Fp32Buffer);
  EXPECT_EQ(resolve(GradAccumulation::Fused, DType::F32), GradAccumulation::Fused);
}

TEST(GradAccumulation, BytesPerParameterOfOnePass) {
  // in-place: read .grad and g, write .grad, all in the gradient's dtype.
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::InPlace, DType::F32), 12);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::InPlace, DType::F16), 6);
  // fp32 buffer: read g, read and write the fp32 buffer; FP8 GEMMs write bf16 gradients.
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Fp32Buffer, DType::BF16), 10);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Fp32Buffer, DType::FP8), 10);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Fp32Buffer, DType::F32), 12);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Auto, DType::F16), 10);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Fused, DType::BF16), 0);
  // A buffer of the gradient's own dtype (Megatron-LM's fp16 main_grad): read both, write one.
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Buffer, DType::F16), 6);
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::Buffer, DType::F32), 12);
}

TEST(GradAccumulation, GradientBytesAreTheBuffersWidth) {
  // What the optimizer reads and DP reduces: an fp32 buffer's 4 B, else the gradient's own size,
  // which is bf16 for FP8 training (its GEMMs write bf16 weight gradients).
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::Auto, DType::BF16), 4);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::Fused, DType::BF16), 4);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::FusedBuffer, DType::BF16), 2);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::FusedBuffer, DType::FP8), 2);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::InPlace, DType::FP8), 2);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::Buffer, DType::F16), 2);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::Auto, DType::F32), 4);
  EXPECT_EQ(gradient_bytes_per_param(GradAccumulation::FusedBuffer, DType::F32), 4);
  // Fused into the gradient's own dtype: no pass of its own, and not an fp32 buffer.
  EXPECT_EQ(grad_accumulation_bytes_per_param(GradAccumulation::FusedBuffer, DType::BF16), 0);
  EXPECT_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::FusedBuffer, DType::BF16, 8), 0.0);
  EXPECT_FALSE(holds_fp32_gradients(GradAccumulation::FusedBuffer, DType::BF16));
  EXPECT_EQ(
      describe(GradAccumulation::FusedBuffer, DType::BF16),
      "fused-buffer: the weight-gradient GEMMs accumulate into a buffer of their own dtype, no pass of their own");
}

TEST(GradAccumulation, Fp32BufferAndFusedHoldFp32Gradients) {
  EXPECT_TRUE(holds_fp32_gradients(GradAccumulation::Fp32Buffer, DType::BF16));
  EXPECT_TRUE(holds_fp32_gradients(GradAccumulation::Fused, DType::F16));
  EXPECT_TRUE(holds_fp32_gradients(GradAccumulation::Auto, DType::BF16));
  EXPECT_FALSE(holds_fp32_gradients(GradAccumulation::Auto, DType::F32));
  EXPECT_FALSE(holds_fp32_gradients(GradAccumulation::InPlace, DType::F16));
  EXPECT_FALSE(holds_fp32_gradients(GradAccumulation::Buffer, DType::F16));
}

TEST(GradAccumulation, InPlaceSkipsTheFirstMicroBatchOfAStep) {
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::InPlace, DType::F16, 4), 0.75);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::InPlace, DType::F16, 1), 0.0);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::InPlace, DType::F16, 0), 0.0);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::Fp32Buffer, DType::F16, 1), 1.0);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::Auto, DType::F32, 8), 0.875);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::Fused, DType::F16, 8), 0.0);
  // A buffer is zeroed at the start of a step: every micro-batch adds into it.
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::Buffer, DType::F16, 1), 1.0);
  EXPECT_DOUBLE_EQ(grad_accumulation_passes_per_micro_batch(GradAccumulation::Buffer, DType::F16, 8), 1.0);
}

TEST(GradAccumulation, DescribeSaysWhatAutoBecame) {
  EXPECT_EQ(describe(GradAccumulation::Auto, DType::BF16),
            "fp32-buffer (auto): each micro-batch adds its gradients into an fp32 buffer, 10 B/param");
  EXPECT_EQ(describe(GradAccumulation::InPlace, DType::F16),
            "in-place: .grad += g from the second micro-batch of a step on, 6 B/param");
  EXPECT_EQ(describe(GradAccumulation::Buffer, DType::F16),
            "buffer: each micro-batch adds its gradients into a buffer of their own dtype, 6 B/param");
  EXPECT_EQ(describe(GradAccumulation::Fused, DType::F16),
            "fused: the weight-gradient GEMMs accumulate into an fp32 buffer, no pass of their own");
}

}  // namespace
}  // namespace parasim
