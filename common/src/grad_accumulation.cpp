#include "parasim/common/grad_accumulation.hpp"

#include <array>

namespace parasim {

namespace {
constexpr std::array kAll{GradAccumulation::Auto,   GradAccumulation::InPlace, GradAccumulation::Fp32Buffer,
                          GradAccumulation::Buffer, GradAccumulation::Fused,   GradAccumulation::FusedBuffer};

/// FP8 GEMMs write their weight gradients in bf16.
Bytes gradient_size(DType dtype) { return dtype == DType::F32 ? 4 : 2; }
}  // namespace

std::string to_string(GradAccumulation a) {
  switch (a) {
    case GradAccumulation::Auto: return "auto";
    case GradAccumulation::InPlace: return "in-place";
    case GradAccumulation::Fp32Buffer: return "fp32-buffer";
    case GradAccumulation::Buffer: return "buffer";
    case GradAccumulation::Fused: return "fused";
    case GradAccumulation::FusedBuffer: return "fused-buffer";
  }
  return "?";
}

std::optional<GradAccumulation> parse_grad_accumulation(std::string_view s) {
  for (GradAccumulation a : kAll)
    if (to_string(a) == s) return a;
  return std::nullopt;
}

GradAccumulation resolve(GradAccumulation a, DType dtype) {
  if (a != GradAccumulation::Auto) return a;
  return dtype == DType::F32 ? GradAccumulation::InPlace : GradAccumulation::Fp32Buffer;
}

bool holds_fp32_gradients(GradAccumulation a, DType dtype) {
  const GradAccumulation r = resolve(a, dtype);
  return r == GradAccumulation::Fp32Buffer || r == GradAccumulation::Fused;
}

Bytes gradient_bytes_per_param(GradAccumulation a, DType dtype) {
  return holds_fp32_gradients(a, dtype) ? 4 : gradient_size(dtype);
}

Bytes grad_accumulation_bytes_per_param(GradAccumulation a, DType dtype) {
  switch (resolve(a, dtype)) {
    case GradAccumulation::InPlace:
    case GradAccumulation::Buffer: return 3 * gradient_size(dtype);
    case GradAccumulation::Fp32Buffer: return gradient_size(dtype) + 8;
    default: return 0;
  }
}

double grad_accumulation_passes_per_micro_batch(GradAccumulation a, DType dtype, std::int64_t micro_batches) {
  const auto k = static_cast<double>(micro_batches < 1 ? 1 : micro_batches);
  switch (resolve(a, dtype)) {
    case GradAccumulation::InPlace: return (k - 1) / k;
    case GradAccumulation::Fp32Buffer:
    case GradAccumulation::Buffer: return 1.0;
    default: return 0.0;
  }
}

std::string describe(GradAccumulation a, DType dtype) {
  const GradAccumulation r = resolve(a, dtype);
  const std::string bytes = std::to_string(grad_accumulation_bytes_per_param(r, dtype)) + " B/param";
  std::string s = to_string(r);
  if (a == GradAccumulation::Auto) s += " (auto)";
  switch (r) {
    case GradAccumulation::InPlace: return s + ": .grad += g from the second micro-batch of a step on, " + bytes;
    case GradAccumulation::Fp32Buffer: return s + ": each micro-batch adds its gradients into an fp32 buffer, " + bytes;
    case GradAccumulation::Buffer:
      return s + ": each micro-batch adds its gradients into a buffer of their own dtype, " + bytes;
    case GradAccumulation::Fused:
      return s + ": the weight-gradient GEMMs accumulate into an fp32 buffer, no pass of their own";
    default: return s + ": the weight-gradient GEMMs accumulate into a buffer of their own dtype, no pass of their own";
  }
}

}  // namespace parasim
