// A parameterised transformer (GPT-style decoder or BERT-style encoder) and the presets built
// from it. Costs are the same for causal and bidirectional attention: the zoo counts the full
// T x T score matrix, as Megatron-LM's FLOP formula does.
//
// Example:
//   TransformerConfig c = transformer_preset("gpt2");
//   c.layers = 6;                                           // a half-depth GPT-2
//   Model m = build_transformer(c, ModelOptions{.batch = 4});
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "parasim/models/graph.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {

/// The MLP of a block. Gelu/Relu/SquaredRelu: h -> ffn -> h, two matrices. Swiglu: gate and up
/// (h -> ffn each, stored fused as one h -> 2 ffn linear as Megatron-LM's linear_fc1 does), silu(gate)
/// * up, down ffn -> h: three matrices, 3 h ffn weights.
enum class MlpKind : std::uint8_t { Gelu, Relu, SquaredRelu, Swiglu };
/// LayerNorm (scale and shift per feature, shift optional) or RMSNorm (scale only).
enum class NormKind : std::uint8_t { LayerNorm, RmsNorm };
/// Learned: a [max_positions, hidden] table added to the token embedding (GPT-2, BERT). Rotary: an
/// elementwise rotation of q and k in every layer, no parameters (Llama, Mistral, GPT-NeoX). Alibi:
/// a per-head linear bias added to the scores inside the attention kernel, no parameters and no
/// separate op (BLOOM, MPT). None: no position information (NoPE).
enum class PositionKind : std::uint8_t { Learned, Rotary, Alibi, None };

std::string to_string(MlpKind k);
std::string to_string(NormKind k);
std::string to_string(PositionKind k);
std::optional<MlpKind> parse_mlp_kind(const std::string& s);         // "gelu", "relu", "squared_relu", "swiglu"
std::optional<NormKind> parse_norm_kind(const std::string& s);       // "layer_norm", "rms_norm"
std::optional<PositionKind> parse_position_kind(const std::string& s);  // "learned", "rotary", "alibi", "none"

struct TransformerConfig {
  std::string name = "transformer";
  std::int64_t layers = 12;
  std::int64_t hidden = 768;
  std::int64_t heads = 12;          // query heads
  std::int64_t kv_heads = 0;        // key/value heads: 0 = heads (MHA), 1 = multi-query, else grouped-query
  std::int64_t head_dim = 0;        // features per head; 0 = hidden / heads
  std::int64_t ffn = 0;             // feed-forward width (per matrix, also for swiglu); 0 = 4 x hidden
  std::int64_t seq_len = 1024;      // default tokens per sample
  std::int64_t max_positions = 0;   // learned position table size; 0 = seq_len
  std::int64_t vocab = 50257;
  std::int64_t type_vocab = 0;      // BERT token-type (segment) embeddings; 0 = none
  bool tied_embeddings = true;      // LM head reuses the token embedding matrix
  /// true: GPT-2 pre-LN blocks with a final LayerNorm; false: BERT post-LN blocks with a
  /// LayerNorm after the embeddings. Same parameter count per block either way.
  bool pre_layer_norm = true;
  bool mlm_head = false;            // BERT's LM head transform (dense + gelu + LayerNorm) and output bias
  /// Causal self-attention (a decoder LM: each token sees the ones before it); false for BERT's
  /// bidirectional encoder. Fused attention kernels skip the masked half of the score matrix.
  bool causal = true;
  /// Masked positions per sample the MLM head runs on (NVIDIA's BERT gathers max_predictions_per_seq
  /// of them before the transform); 0 (or seq_len) = every position. Only with mlm_head.
  std::int64_t mlm_positions = 0;
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  PositionKind positions = PositionKind::Learned;
  bool norm_bias = true;            // LayerNorms have a learned shift (ignored for RMSNorm)
  bool linear_bias = true;          // the block's linears (q|k|v, output, MLP) have biases
  bool qkv_bias = false;            // the q|k|v projection has a bias even without linear_bias (Qwen2)
  // Mixture of experts: the MLP of every layer from moe_dense_layers on is `experts` experts of
  // width moe_ffn (same MlpKind), each token routed to top_k of them by a linear router, plus
  // `shared_experts` always-active experts (DeepSeek) run as one dense MLP of shared x moe_ffn.
  std::int64_t experts = 0;         // 0 = dense MLP everywhere
  std::int64_t top_k = 2;           // experts per token
  std::int64_t moe_ffn = 0;         // width of one expert; 0 = ffn
  std::int64_t shared_experts = 0;
  std::int64_t moe_dense_layers = 0;  // the first layers keep a dense MLP of width ffn (DeepSeek-V2/V3)
  double capacity_factor = 0.0;     // expert capacity = cf x tokens x top_k / experts; 0 = dropless
  double dropout = 0.1;             // 0: no dropout ops at all (Llama-style training)
  std::string dataset = "openwebtext";
};

/// Presets: gpt2, bert_large, megatron_22b, gpt3_175b, turing_530b, megatron_1t, llama3_8b, llama3_70b,
/// llama31_405b, mixtral_8x7b.
/// InputError listing the known presets for any other name.
TransformerConfig transformer_preset(const std::string& name);
/// Builds the model; options.seq_len (if nonzero) overrides config.seq_len and must not exceed
/// the position table.
Model build_transformer(const TransformerConfig& config, const ModelOptions& options);

}  // namespace parasim::models
