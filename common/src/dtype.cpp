#include "parasim/common/dtype.hpp"

namespace parasim {

int dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::FP8: return 2;
  }
  return 4;
}

std::string to_string(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
  }
  return "fp32";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::F32;
  if (s == "fp16" || s == "f16" || s == "half" || s == "float16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "fp8") return DType::FP8;
  return std::nullopt;
}

}  // namespace parasim
