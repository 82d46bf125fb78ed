// The parameterised transformer and its presets.
//
// Block structure (per layer, 12 h^2 + 13 h parameters): fused q|k|v projection (h -> 3h, with
// bias), attention core, output projection (h -> h), two LayerNorms, MLP h -> ffn -> h with GELU.
// Embeddings: token (vocab x h, tied with the LM head) + learned positions (+ token types for
// BERT). This is GPT-2's and Megatron-LM's layout, so the parameter count of the big presets is
// Narayanan et al. 2021's P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) plus the final LayerNorm.
//
// Presets:
//   gpt2          Radford et al. 2019, the 124M model: 12 x 768, 12 heads, 1024 positions, vocab 50257
//                 -> 124,439,808 parameters (exactly Hugging Face's GPT2LMHeadModel).
//   bert_large    Devlin et al. 2019: 24 x 1024, 16 heads, 512 positions, vocab 30522, 2 token types,
//                 post-LN, MLM head -> 335,174,458 parameters (Hugging Face BertForMaskedLM).
//   megatron_22b  Korthikanti et al. 2022 (Reducing Activation Recomputation), Table 3:
//                 48 x 6144, 64 heads.
//   gpt3_175b     Brown et al. 2020 shape, Megatron-LM vocabulary: 96 x 12288, 96 heads.
//   turing_530b   Smith et al. 2022 (Megatron-Turing NLG 530B): 105 x 20480, 128 heads.
//   megatron_1t   Narayanan et al. 2021 (Efficient Large-Scale LM Training, Table 1): 128 x 25600, 160 heads.
// The Megatron-trained presets use sequence length 2048 and Megatron-LM's padded GPT-2
// vocabulary of 51,200 tokens, as in Narayanan et al. 2021.
#include "parasim/models/transformer.hpp"

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::models {

namespace {

TransformerConfig megatron(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  TransformerConfig c;
  c.name = std::move(name);
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.seq_len = 2048;
  c.vocab = 51200;
  return c;
}

std::vector<TransformerConfig> presets() {
  TransformerConfig gpt2;
  gpt2.name = "gpt2";
  TransformerConfig bert;
  bert.name = "bert_large";
  bert.layers = 24;
  bert.hidden = 1024;
  bert.heads = 16;
  bert.seq_len = 512;
  bert.vocab = 30522;
  bert.type_vocab = 2;
  bert.pre_layer_norm = false;
  bert.mlm_head = true;
  bert.dataset = "wikipedia";
  return {gpt2,
          bert,
          megatron("megatron_22b", 48, 6144, 64),
          megatron("gpt3_175b", 96, 12288, 96),
          megatron("turing_530b", 105, 20480, 128),
          megatron("megatron_1t", 128, 25600, 160)};
}

void require(bool ok, const TransformerConfig& c, const std::string& what) {
  if (!ok) throw InputError("transformer " + c.name + ": expected " + what);
}

}  // namespace

TransformerConfig transformer_preset(const std::string& name) {
  std::string known;
  for (const TransformerConfig& c : presets()) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  throw InputError("unknown transformer preset \"" + name + "\"; known presets: " + known);
}

Model build_transformer(const TransformerConfig& c, const ModelOptions& o) {
  require(c.layers >= 1 && c.hidden >= 1 && c.vocab >= 1 && c.seq_len >= 1,
          c, "layers, hidden, vocab and seq_len >= 1");
  require(c.heads >= 1 && c.hidden % c.heads == 0, c,
          "heads >= 1 dividing hidden (" + std::to_string(c.hidden) + "), found " + std::to_string(c.heads));
  require(c.ffn >= 0 && c.max_positions >= 0 && c.type_vocab >= 0, c, "ffn, max_positions and type_vocab >= 0");
  const std::int64_t t = o.seq_len > 0 ? o.seq_len : c.seq_len;
  const std::int64_t positions = c.max_positions > 0 ? c.max_positions : c.seq_len;
  require(t <= positions, c,
          "seq_len at most the " + std::to_string(positions) + " learned positions, found " + std::to_string(t));
  const std::int64_t h = c.hidden;
  const std::int64_t ffn = c.ffn > 0 ? c.ffn : 4 * h;

  ModelBuilder b(c.name, o.batch, o.dtype);
  b.set_dataset(c.dataset);
  OpId x = 0;
  {
    auto scope = b.block("embeddings");
    std::vector<OpId> parts;
    parts.push_back(b.embedding("wte", b.input("input_ids", {o.batch, t}), c.vocab, h));
    parts.push_back(b.embedding("wpe", b.input("position_ids", {o.batch, t}), positions, h));
    if (c.type_vocab > 0) parts.push_back(b.embedding("wtt", b.input("token_type_ids", {o.batch, t}), c.type_vocab, h));
    x = b.add("embeddings.add", parts);
    if (!c.pre_layer_norm) x = b.layer_norm("embeddings.ln", x);
    x = b.dropout("embeddings.dropout", x, c.dropout);
  }
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "h." + std::to_string(l);
    auto scope = b.block(p);
    // Attention sub-block.
    OpId a = c.pre_layer_norm ? b.layer_norm(p + ".ln_1", x) : x;
    a = b.linear(p + ".attn.c_attn", a, h, 3 * h);
    a = b.attention(p + ".attn.core", a, c.heads, c.dropout);
    a = b.linear(p + ".attn.c_proj", a, h, h);
    a = b.dropout(p + ".attn.dropout", a, c.dropout);
    x = b.add(p + ".add_1", {x, a});
    if (!c.pre_layer_norm) x = b.layer_norm(p + ".ln_1", x);
    // MLP sub-block.
    OpId m = c.pre_layer_norm ? b.layer_norm(p + ".ln_2", x) : x;
    m = b.linear(p + ".mlp.c_fc", m, h, ffn);
    m = b.gelu(p + ".mlp.gelu", m);
    m = b.linear(p + ".mlp.c_proj", m, ffn, h);
    m = b.dropout(p + ".mlp.dropout", m, c.dropout);
    x = b.add(p + ".add_2", {x, m});
    if (!c.pre_layer_norm) x = b.layer_norm(p + ".ln_2", x);
  }
  {
    auto scope = b.block("head");
    if (c.pre_layer_norm) x = b.layer_norm("ln_f", x);
    if (c.mlm_head) {
      x = b.linear("lm_head.transform.dense", x, h, h);
      x = b.gelu("lm_head.transform.gelu", x);
      x = b.layer_norm("lm_head.transform.ln", x);
    }
    x = c.tied_embeddings ? b.linear_tied("lm_head", x, "wte", /*bias=*/c.mlm_head)
                          : b.linear("lm_head", x, h, c.vocab, /*bias=*/c.mlm_head);
    b.cross_entropy("loss", x);
  }
  return b.finish();
}

}  // namespace parasim::models
