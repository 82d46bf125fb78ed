// Context parallelism (ring attention: Liu et al. 2023; Megatron-LM's context parallelism and
// NVIDIA Transformer Engine's implementation): the C ranks of a CP group each hold seq / C tokens
// of every sample. Every op but the attention core acts on its seq / C tokens alone; the attention
// core of rank c runs C steps, step j computing its local queries against the key/value chunk of
// rank c - j while the ring passes the chunks on (docs/strategies.md, "Context parallelism").
//
// One rank's model (shard_for_context_parallel) is the model at seq / C tokens: its attention op
// is ONE ring step (queries of seq / C against keys of seq / C), which the lowering runs C times.
// Every step costs the same: with a causal mask that is what Megatron's load balancing gives (rank
// c holds chunks c and 2C - 1 - c of 2C, so every step does half a block), which is why the
// sequence must split into 2C chunks; the step's op keeps the mask, so fused kernels price that
// half block (unfused kernels compute and mask the whole one).
//
// Example:
//   models::Model m = models::build_zoo_model("llama3_8b", {.batch = 1, .seq_len = 8192});
//   models::Model rank = shard_for_context_parallel(m, /*cp=*/2);  // inputs [1, 4096]
//   ring_kv_bytes(rank.op(*rank.find_op("h.0.attn.core")));     // K + V of 4096 tokens: 16 MiB fp32
#pragma once

#include <cstdint>

#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::strategies {

/// The attention ops a CP ring runs: self-attention cores (one packed q|k|v input).
bool is_ring_attention(const models::Op& op);

/// Tokens per sample of the model's self-attention ops; 0 when it has none.
std::int64_t attention_seq_len(const models::Model& model);

/// The model one of `cp` context-parallel ranks runs: every sequence-long input at seq / cp tokens.
/// InputError when the model has no self-attention or 2 x cp does not divide its sequence; cp == 1
/// returns it unchanged.
models::Model shard_for_context_parallel(const models::Model& model, int cp);

/// Bytes of the key and value chunk a ring step passes on for one attention op of a rank's model:
/// batch x tokens x kv_heads x head_dim x 2 x dtype; 0 for other ops.
Bytes ring_kv_bytes(const models::Op& op);

}  // namespace parasim::strategies
