// Element types of tensors, shared by the model graph and the device specs (peak FLOP/s per
// dtype), so that hardware/ need not depend on models/.
//
// Example:
//   DType t = parse_dtype("bf16").value();   // DType::BF16
//   int bytes = dtype_size(t);                // 2
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parasim {

// FP8 is a training precision, not a tensor format: FP8 matrix multiplies (E4M3 forward, E5M2
// gradients, as NVIDIA Transformer Engine's HYBRID recipe) in the transformer layers, with tensors
// kept in bf16 between ops - so its element size is bf16's (docs/models.md, "FP8 matmuls").
enum class DType : std::uint8_t { F32, F16, BF16, FP8 };

/// Bytes per element (fp8: 2, the bf16 tensors between the FP8 GEMMs).
int dtype_size(DType t);
std::string to_string(DType t);
/// Parses "fp32"/"f32"/"float32", "fp16"/"f16"/"half", "bf16"/"bfloat16", "fp8"; nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view s);

}  // namespace parasim
