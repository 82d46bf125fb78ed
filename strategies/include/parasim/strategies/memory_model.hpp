// Bytes a device keeps for its parameters for the whole step.
//
// Per parameter:
//   weights    dtype size (fp32 4, fp16/bf16 2)
//   gradients  same dtype as the weights (in-place or buffer accumulation), or 4 bytes in an fp32 buffer
//              (fp32-buffer and fused: Megatron-LM's main_grad; auto for 16/8-bit training)
//   optimizer  fp32 state (profiler::optimizer_state_bytes_per_param: sgd 0, momentum 4, adam 8)
//              + 4 bytes of fp32 master weights when training in fp16/bf16 (mixed precision)
// so fp32 Adam is 4 + 4 + 8 = 16 bytes/param and mixed-precision Adam 2 + 2 + 4 + 8 = 16 bytes/param
// in place, 2 + 4 + 4 + 8 = 18 with an fp32 gradient buffer (Megatron-LM's figure); mixed-precision
// SGD 2 + 2 + 4 = 8, momentum 12 (in place).
// ZeRO stage 1 (zero=1) divides the optimizer bytes by the data-parallel degree (rounded up);
// stage 2 (zero=2) divides the gradient bytes too (Rajbhandari et al. 2020, Table 1: P_os+g), stage 3
// (zero=3) the weights as well (P_os+g+p; the gathered layers are counted by the lowering).
//
// Example:
//   ParamBytes b = param_bytes_per_param(models::DType::F16, profiler::Optimizer::Adam);  // {2, 2, 12}
#pragma once

#include "parasim/common/grad_accumulation.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::strategies {

struct ParamBytes {
  Bytes weights = 0;
  Bytes grads = 0;
  Bytes optimizer = 0;
  Bytes total() const { return weights + grads + optimizer; }
};

/// `accumulation`: an fp32 gradient buffer (fp32-buffer, and fused, which accumulates into one)
/// holds 4 bytes of gradient per parameter whatever the weights' dtype.
ParamBytes param_bytes_per_param(models::DType dtype, profiler::Optimizer optimizer,
                                 GradAccumulation accumulation = GradAccumulation::InPlace);

/// Static memory of `params` parameters, with the optimizer state sharded over `zero_shards`
/// data-parallel ranks (1 = no ZeRO) and, when `shard_grads` (ZeRO-2), the gradients too, and when
/// `shard_params` (ZeRO-3) the weights too.
simulator::StaticMemory static_memory_for(std::int64_t params, models::DType dtype, profiler::Optimizer optimizer,
                                          int zero_shards = 1, bool shard_grads = false, bool shard_params = false,
                                          GradAccumulation accumulation = GradAccumulation::InPlace);

}  // namespace parasim::strategies
