#include "parasim/strategies/memory_model.hpp"

namespace parasim::strategies {

ParamBytes param_bytes_per_param(models::DType dtype, profiler::Optimizer optimizer, GradAccumulation accumulation) {
  const Bytes size = models::dtype_size(dtype);
  const Bytes master = dtype == models::DType::F32 ? 0 : 4;
  // fp8: the bf16 weights plus their fp8 copy and its transpose (Transformer Engine keeps both).
  const Bytes fp8_copies = dtype == models::DType::FP8 ? 2 : 0;
  const Bytes grads = gradient_bytes_per_param(accumulation, dtype);
  return {size + fp8_copies, grads, master + profiler::optimizer_state_bytes_per_param(optimizer)};
}

simulator::StaticMemory static_memory_for(std::int64_t params, models::DType dtype, profiler::Optimizer optimizer,
                                          int zero_shards, bool shard_grads, bool shard_params,
                                          GradAccumulation accumulation) {
  const ParamBytes per = param_bytes_per_param(dtype, optimizer, accumulation);
  simulator::StaticMemory m;
  m.params = params * per.weights;
  m.grads = params * per.grads;
  if (shard_params) m.params = (m.params + zero_shards - 1) / zero_shards;
  if (shard_grads) m.grads = (m.grads + zero_shards - 1) / zero_shards;
  const Bytes optimizer_bytes = params * per.optimizer;
  m.optimizer = (optimizer_bytes + zero_shards - 1) / zero_shards;
  return m;
}

}  // namespace parasim::strategies
