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

enum class DType : std::uint8_t { F32, F16, BF16 };

/// Bytes per element.
int dtype_size(DType t);
std::string to_string(DType t);
/// Parses "fp32"/"f32"/"float32", "fp16"/"f16"/"half", "bf16"/"bfloat16"; nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view s);

}  // namespace parasim
