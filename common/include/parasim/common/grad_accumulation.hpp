// How a training loop adds each micro-batch's weight gradients into the gradients the optimizer
// step reads: a bandwidth-bound pass over every parameter that the weight-gradient kernels
// themselves do not make (docs/fidelity.md, "Gradient accumulation"):
//   in-place     autograd's `.grad += g` in the gradient's own dtype, from the second micro-batch of
//                a step on (the first one's gradient becomes .grad): read both, write one, 3 x g
//                bytes per parameter (eager PyTorch; DDP under no_sync).
//   fp32-buffer  every micro-batch adds its gradient into an fp32 buffer (Megatron-LM's main_grad,
//                DeepSpeed's BF16 optimizer): read g bytes and 4, write 4, g + 8 bytes per parameter.
//   buffer       every micro-batch adds its gradient into a buffer of the gradient's own dtype
//                (Megatron-LM's main_grad in fp16 training without --accumulate-allreduce-grads-in-fp32):
//                read both, write one, 3 x g bytes per parameter.
//   fused        the weight-gradient GEMM accumulates into an fp32 buffer itself (Megatron-LM's
//                --gradient-accumulation-fusion with its fp32 main_grad): no pass of its own.
//   fused-buffer the weight-gradient GEMM accumulates into a buffer of the gradient's own dtype
//                (Megatron-Core's grad_reduce_in_fp32=False, NeMo's grad_sync_dtype: bf16): no pass.
//   auto         fp32-buffer for 16-bit and 8-bit training, in-place for fp32.
// g is the gradient's size: 4 for fp32 training, 2 otherwise (FP8 GEMMs write bf16 gradients).
// The data-parallel reduction moves the buffer's dtype: 4 B a parameter from an fp32 buffer (Megatron's
// main_grad, DDP under autocast), g otherwise.
//
// Example:
//   GradAccumulation a = resolve(parse_grad_accumulation("auto").value(), DType::BF16);  // Fp32Buffer
//   grad_accumulation_bytes_per_param(a, DType::BF16);   // 10
//   grad_accumulation_passes_per_micro_batch(a, DType::BF16, 4);  // 1.0 (in-place: 0.75)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "parasim/common/dtype.hpp"
#include "parasim/common/units.hpp"

namespace parasim {

enum class GradAccumulation : std::uint8_t { Auto, InPlace, Fp32Buffer, Buffer, Fused, FusedBuffer };

/// "auto", "in-place", "fp32-buffer", "buffer", "fused", "fused-buffer".
std::string to_string(GradAccumulation a);
std::optional<GradAccumulation> parse_grad_accumulation(std::string_view s);
/// Auto made concrete for training in `dtype`; the others unchanged.
GradAccumulation resolve(GradAccumulation a, DType dtype);
/// Whether the gradients live in an fp32 buffer (fp32-buffer, and fused, which accumulates into
/// one), 4 bytes per parameter whatever the weights' dtype. Auto is resolved first.
bool holds_fp32_gradients(GradAccumulation a, DType dtype);
/// Bytes of gradient per parameter that the optimizer reads and the data-parallel reduction moves:
/// 4 from an fp32 buffer, else the gradient's own size (fp32 4; 16-bit and fp8 training 2).
Bytes gradient_bytes_per_param(GradAccumulation a, DType dtype);
/// Bytes one accumulation pass moves per parameter (0 for fused). Auto is resolved first.
Bytes grad_accumulation_bytes_per_param(GradAccumulation a, DType dtype);
/// Passes per micro-batch, averaged over a step of `micro_batches` K (below 1 counts as 1):
/// in-place skips the first micro-batch, so (K - 1) / K; fp32-buffer and buffer 1; fused and fused-buffer 0. Auto is
/// resolved first.
double grad_accumulation_passes_per_micro_batch(GradAccumulation a, DType dtype, std::int64_t micro_batches);
/// One line for outputs: "fp32-buffer (each micro-batch adds its gradients into an fp32 buffer,
/// 10 B/param)".
std::string describe(GradAccumulation a, DType dtype);

}  // namespace parasim
