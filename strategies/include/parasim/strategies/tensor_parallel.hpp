// Megatron-style tensor parallelism (Shoeybi et al. 2019; sequence parallelism: Korthikanti et
// al. 2022): which ops are split across the T ranks of a TP group, the per-rank model, and the
// collectives the split needs.
//
// A *TP block* is a block (Op::block) that holds a self-attention op (one packed q|k|v input), i.e.
// a transformer layer ("h.3" in the zoo's GPT/BERT models). Walking its ops in order, a Linear
// opens a parallel region as *column-parallel* (output features / T), the ops after it are
// *split* (attention heads / T, GELU on 1/T of the features) and the next Linear closes the
// region as *row-parallel* (input features / T, full output that needs a reduction). So a GPT
// block is: ln_1 | c_attn (column) core (split) c_proj (row) | dropout add ln_2 | c_fc (column)
// gelu (split) c_proj (row) | dropout add. A block whose region holds anything but attention and
// elementwise ops is left replicated. In models with TP blocks, the LM head (the Linear feeding
// the loss) is column-parallel over the vocabulary and the embedding whose table it shares is
// vocabulary-parallel, as in Megatron-LM; the vocab is padded up to a multiple of T.
//
// Collectives per TP block and micro-batch (bytes = the full [micro, seq, hidden] activation):
//   without sequence parallelism: forward one allreduce after each row-parallel linear,
//     backward one allreduce of the input gradient of each column-parallel linear (2 + 2);
//   with sequence parallelism (tp > 1 with recompute=selective, as Korthikanti et al. pair them):
//     forward all-gather before each column and reduce-scatter after each row linear, backward
//     all-gather before each row and reduce-scatter after each column (4 + 4, same bytes on the
//     wire), and the replicated ops of the block (LayerNorms, dropouts, residual adds) work on
//     1/T of the sequence: their time and activations are divided by T.
//   The vocabulary-parallel embedding allreduces (or, with SP, reduce-scatters) its output.
//
// Example:
//   TpPlan plan = plan_tensor_parallel(model);
//   Model rank_model = shard_for_tensor_parallel(model, plan, /*tp=*/8);  // per-rank shapes and costs
//
// Grouped-query attention (kv_heads < heads): each rank gets heads / T query heads and kv_heads / T
// key/value heads when T divides kv_heads; when kv_heads divides T instead (T > kv_heads), every
// rank holds one K/V head, each replicated T / kv_heads times (vLLM's and Hugging Face's rule for
// TP wider than the KV heads; upstream Megatron-LM requires T to divide them), so the fused q|k|v
// projection keeps (heads / T + 2) head_dim
// output features per rank and its K/V weights are counted on every replica.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::strategies {

enum class TpRole : std::uint8_t {
  Replicated,       // every rank runs the whole op (LayerNorm, residual add, ops outside TP blocks)
  Column,           // column-parallel linear: output features / T
  Split,            // inside a parallel region: attention heads / T, elementwise on 1/T
  Row,              // row-parallel linear: input features / T, output reduced across ranks
  VocabEmbedding,   // vocabulary-parallel embedding table; output reduced across ranks
};

struct TpPlan {
  std::vector<TpRole> role;          // by op id
  std::vector<char> in_tp_block;     // by op id: the op belongs to a TP block
  int blocks = 0;                    // TP blocks found
  int max_heads = 0;                 // attention heads of the TP blocks (all must divide by T)
  int min_kv_heads = 0;              // fewest key/value heads of a grouped-query TP block (0: none)
  bool any() const { return blocks > 0; }
};

TpPlan plan_tensor_parallel(const models::Model& model);

/// The model one TP rank runs: sharded ops re-inferred through ModelBuilder, so shapes, MACs,
/// bytes, parameters and activation bytes are the per-rank values. Same op ids and names.
/// InputError when T does not divide the attention heads of a TP block or the split features.
models::Model shard_for_tensor_parallel(const models::Model& model, const TpPlan& plan, int tp);
/// The same at another batch size and dtype in one pass: equal to
/// shard_for_tensor_parallel(models::with_batch(model, batch, dtype), plan, tp) (a planner needs
/// the sharded model of many batch sizes, not the unsharded one in between).
models::Model shard_for_tensor_parallel(const models::Model& model, const TpPlan& plan, int tp, std::int64_t batch,
                                        models::DType dtype);

/// Whether T ranks can split `kv_heads` key/value heads (0 = not grouped-query): T divides them, or
/// they divide T and are replicated.
bool tp_fits_kv_heads(std::int64_t kv_heads, std::int64_t tp);
/// Key/value heads one of T ranks holds (kv_heads / T, or 1 when replicated). InputError if T
/// neither divides nor is divided by kv_heads.
std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp, const std::string& op_name);

std::string to_string(TpRole r);

}  // namespace parasim::strategies
