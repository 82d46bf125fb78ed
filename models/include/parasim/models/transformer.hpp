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
#include <string>

#include "parasim/models/graph.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {

struct TransformerConfig {
  std::string name = "transformer";
  std::int64_t layers = 12;
  std::int64_t hidden = 768;
  std::int64_t heads = 12;
  std::int64_t ffn = 0;             // feed-forward width; 0 = 4 x hidden
  std::int64_t seq_len = 1024;      // default tokens per sample
  std::int64_t max_positions = 0;   // learned position table size; 0 = seq_len
  std::int64_t vocab = 50257;
  std::int64_t type_vocab = 0;      // BERT token-type (segment) embeddings; 0 = none
  bool tied_embeddings = true;      // LM head reuses the token embedding matrix
  /// true: GPT-2 pre-LN blocks with a final LayerNorm; false: BERT post-LN blocks with a
  /// LayerNorm after the embeddings. Same parameter count per block either way.
  bool pre_layer_norm = true;
  bool mlm_head = false;            // BERT's LM head transform (dense + gelu + LayerNorm) and output bias
  double dropout = 0.1;
  std::string dataset = "openwebtext";
};

/// Presets: gpt2, bert_large, megatron_22b, gpt3_175b, turing_530b, megatron_1t.
/// InputError listing the known presets for any other name.
TransformerConfig transformer_preset(const std::string& name);
/// Builds the model; options.seq_len (if nonzero) overrides config.seq_len and must not exceed
/// the position table.
Model build_transformer(const TransformerConfig& config, const ModelOptions& options);

}  // namespace parasim::models
