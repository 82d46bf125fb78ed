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
//   llama3_8b     Meta Llama 3 (Grattafiori et al. 2024, Table 3; Hugging Face meta-llama/Meta-Llama-3-8B
//                 config.json): 32 x 4096, 32 heads, 8 KV heads, ffn 14336, vocab 128256, 8192 tokens
//                 -> 8,030,261,248 parameters.
//   llama3_70b    the same family: 80 x 8192, 64 heads, 8 KV heads, ffn 28672 -> 70,553,706,496.
//   llama31_405b  Llama 3.1 405B: 126 x 16384, 128 heads, 8 KV heads, ffn 53248, 131072 positions,
//                 pre-trained at 8192 tokens (the paper's Section 3.4) -> 405,853,388,800.
//   mixtral_8x7b  Jiang et al. 2024 (Mixtral of Experts) and mistralai/Mixtral-8x7B-v0.1 config.json:
//                 Mistral-7B's attention, 8 SwiGLU experts of 14336, top-2, vocab 32000, 32768 tokens
//                 -> 46,702,792,704.
// The Megatron-trained presets use sequence length 2048 and Megatron-LM's padded GPT-2
// vocabulary of 51,200 tokens, as in Narayanan et al. 2021.
#include "parasim/models/transformer.hpp"

#include <algorithm>
#include <array>

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

/// Llama-style: RMSNorm, SwiGLU, rotary positions, grouped-query attention, untied embeddings, no
/// biases, no dropout.
TransformerConfig llama(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                        std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab, std::int64_t seq,
                        std::int64_t positions) {
  TransformerConfig c;
  c.name = std::move(name);
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn = ffn;
  c.vocab = vocab;
  c.seq_len = seq;
  c.max_positions = positions;
  c.tied_embeddings = false;
  c.mlp = MlpKind::Swiglu;
  c.norm = NormKind::RmsNorm;
  c.positions = PositionKind::Rotary;
  c.linear_bias = false;
  c.dropout = 0.0;
  return c;
}

TransformerConfig mixtral_8x7b() {
  TransformerConfig c = llama("mixtral_8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, 32768);
  c.experts = 8;
  c.top_k = 2;
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
  bert.causal = false;
  bert.dataset = "wikipedia";
  return {gpt2,
          bert,
          megatron("megatron_22b", 48, 6144, 64),
          megatron("gpt3_175b", 96, 12288, 96),
          megatron("turing_530b", 105, 20480, 128),
          megatron("megatron_1t", 128, 25600, 160),
          llama("llama3_8b", 32, 4096, 32, 8, 14336, 128256, 8192, 8192),
          llama("llama3_70b", 80, 8192, 64, 8, 28672, 128256, 8192, 8192),
          llama("llama31_405b", 126, 16384, 128, 8, 53248, 128256, 8192, 131072),
          mixtral_8x7b()};
}

void require(bool ok, const TransformerConfig& c, const std::string& what) {
  if (!ok) throw InputError("transformer " + c.name + ": expected " + what);
}

std::int64_t checked_mul(const TransformerConfig& c, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > (std::int64_t{1} << 62))
    throw InputError("transformer " + c.name + ": sizes overflow a 64-bit integer");
  return r;
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
  require(c.head_dim >= 0, c, "head_dim >= 0, found " + std::to_string(c.head_dim));
  require(c.heads >= 1 && (c.head_dim > 0 || c.hidden % c.heads == 0), c,
          "heads >= 1 dividing hidden (" + std::to_string(c.hidden) + "), found " + std::to_string(c.heads));
  require(
      c.kv_heads >= 0 && c.kv_heads <= c.heads && (c.kv_heads == 0 || c.heads % c.kv_heads == 0), c,
      "kv_heads in [0, heads] dividing heads (" + std::to_string(c.heads) + "), found " + std::to_string(c.kv_heads));
  require(c.ffn >= 0 && c.max_positions >= 0 && c.type_vocab >= 0, c, "ffn, max_positions and type_vocab >= 0");
  require(c.dropout >= 0.0 && c.dropout < 1.0, c, "dropout in [0, 1)");
  require(c.experts >= 0 && c.moe_ffn >= 0 && c.shared_experts >= 0 && c.moe_dense_layers >= 0 &&
              c.capacity_factor >= 0.0,
          c, "experts, moe_ffn, shared_experts, moe_dense_layers and capacity_factor >= 0");
  require(c.experts == 0 || (c.top_k >= 1 && c.top_k <= c.experts), c,
          "top_k in [1, experts (" + std::to_string(c.experts) + ")], found " + std::to_string(c.top_k));
  const std::int64_t t = o.seq_len > 0 ? o.seq_len : c.seq_len;
  const bool learned = c.positions == PositionKind::Learned;
  const std::int64_t positions = c.max_positions > 0 ? c.max_positions : c.seq_len;
  require(!learned || t <= positions, c,
          "seq_len at most the " + std::to_string(positions) + " learned positions, found " + std::to_string(t));
  // Rotary/ALiBi models trained at most max_positions tokens (when the config states it).
  require(learned || c.max_positions == 0 || t <= c.max_positions, c,
          "seq_len at most the " + std::to_string(c.max_positions) + " positions, found " + std::to_string(t));
  require(c.mlm_positions >= 0 && c.mlm_positions <= t, c,
          "mlm_positions in [0, seq_len " + std::to_string(t) + "], found " + std::to_string(c.mlm_positions));
  require(c.mlm_positions == 0 || c.mlm_head, c, "mlm_positions only with an MLM head (mlm_head)");
  const std::int64_t h = c.hidden;
  // Configs come from users' files: every size derived here is overflow-checked.
  const std::int64_t ffn = c.ffn > 0 ? c.ffn : checked_mul(c, 4, h);
  const std::int64_t hd = c.head_dim > 0 ? c.head_dim : h / c.heads;
  require(c.positions != PositionKind::Rotary || hd % 2 == 0, c, "an even head dimension for rotary positions");
  // kv_heads == heads is plain multi-head attention: the op keeps its MHA form (kv_heads 0).
  const std::int64_t kv = c.kv_heads == c.heads ? 0 : c.kv_heads;
  const std::int64_t qkv_out = checked_mul(c, c.heads + 2 * (kv > 0 ? kv : c.heads), hd);
  const std::int64_t attn_out = checked_mul(c, c.heads, hd);
  const std::int64_t moe_width = c.moe_ffn > 0 ? c.moe_ffn : ffn;
  (void)checked_mul(c, 2, std::max(ffn, checked_mul(c, std::max<std::int64_t>(c.shared_experts, 1), moe_width)));
  const bool rms = c.norm == NormKind::RmsNorm;

  ModelBuilder b(c.name, o.batch, o.dtype);
  b.set_dataset(c.dataset);
  auto norm = [&](const std::string& name, OpId x) {
    return rms ? b.rms_norm(name, x) : b.layer_norm(name, x, c.norm_bias);
  };
  auto dropout = [&](const std::string& name, OpId x) { return c.dropout > 0.0 ? b.dropout(name, x, c.dropout) : x; };
  // h -> width -> h with the config's activation; SwiGLU's gate and up are one fused linear.
  auto mlp = [&](const std::string& p, OpId in, std::int64_t width) {
    OpId y = b.linear(p + ".c_fc", in, h, c.mlp == MlpKind::Swiglu ? 2 * width : width, c.linear_bias);
    switch (c.mlp) {
      case MlpKind::Gelu: y = b.gelu(p + ".gelu", y); break;
      case MlpKind::Relu: y = b.relu(p + ".relu", y); break;
      case MlpKind::SquaredRelu: y = b.squared_relu(p + ".squared_relu", y); break;
      case MlpKind::Swiglu: y = b.swiglu(p + ".swiglu", y); break;
    }
    return b.linear(p + ".c_proj", y, width, h, c.linear_bias);
  };
  OpId x = 0;
  {
    auto scope = b.block("embeddings");
    std::vector<OpId> parts;
    parts.push_back(b.embedding("wte", b.input("input_ids", {o.batch, t}), c.vocab, h));
    if (learned) parts.push_back(b.embedding("wpe", b.input("position_ids", {o.batch, t}), positions, h));
    if (c.type_vocab > 0) parts.push_back(b.embedding("wtt", b.input("token_type_ids", {o.batch, t}), c.type_vocab, h));
    x = parts.size() == 1 ? parts[0] : b.residual_add("embeddings.add", parts);
    if (!c.pre_layer_norm) x = norm("embeddings.ln", x);
    x = dropout("embeddings.dropout", x);
  }
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "h." + std::to_string(l);
    auto scope = b.block(p);
    // Attention sub-block.
    OpId a = c.pre_layer_norm ? norm(p + ".ln_1", x) : x;
    a = b.linear(p + ".attn.c_attn", a, h, qkv_out, c.linear_bias || c.qkv_bias);
    if (c.positions == PositionKind::Rotary) a = b.rotary(p + ".attn.rotary", a, c.heads, kv);
    a = b.attention(p + ".attn.core", a, c.heads, kv, c.dropout, c.causal);
    a = b.linear(p + ".attn.c_proj", a, attn_out, h, c.linear_bias);
    a = dropout(p + ".attn.dropout", a);
    x = b.residual_add(p + ".add_1", {x, a});
    if (!c.pre_layer_norm) x = norm(p + ".ln_1", x);
    // MLP sub-block.
    OpId m = c.pre_layer_norm ? norm(p + ".ln_2", x) : x;
    if (c.experts > 0 && l >= c.moe_dense_layers) {
      const OpId routed = b.experts(p + ".moe.experts", m, c.experts, c.top_k, moe_width, c.mlp == MlpKind::Swiglu,
                                    c.capacity_factor);
      m = c.shared_experts > 0
              ? b.add(p + ".moe.add", {routed, mlp(p + ".moe.shared", m, c.shared_experts * moe_width)})
              : routed;
    } else {
      m = mlp(p + ".mlp", m, ffn);
    }
    m = dropout(p + ".mlp.dropout", m);
    x = b.residual_add(p + ".add_2", {x, m});
    if (!c.pre_layer_norm) x = norm(p + ".ln_2", x);
  }
  {
    auto scope = b.block("head");
    if (c.pre_layer_norm) x = norm("ln_f", x);
    if (c.mlm_head) {
      // The head runs on the masked positions only (index_select before the transform).
      if (c.mlm_positions > 0 && c.mlm_positions < t) x = b.gather("lm_head.gather", x, c.mlm_positions);
      x = b.linear("lm_head.transform.dense", x, h, h);
      x = b.gelu("lm_head.transform.gelu", x);
      x = norm("lm_head.transform.ln", x);
    }
    x = c.tied_embeddings ? b.linear_tied("lm_head", x, "wte", /*bias=*/c.mlm_head)
                          : b.linear("lm_head", x, h, c.vocab, /*bias=*/c.mlm_head);
    b.cross_entropy("loss", x);
  }
  return b.finish();
}

namespace {

template <class E, std::size_t N>
std::optional<E> parse_named(const std::array<std::pair<E, const char*>, N>& table, const std::string& s) {
  for (const auto& [k, name] : table)
    if (s == name) return k;
  return std::nullopt;
}
template <class E, std::size_t N>
std::string name_of(const std::array<std::pair<E, const char*>, N>& table, E k) {
  for (const auto& [kind, name] : table)
    if (kind == k) return name;
  return "?";
}

constexpr std::array<std::pair<MlpKind, const char*>, 4> kMlpNames{{{MlpKind::Gelu, "gelu"},
                                                                    {MlpKind::Relu, "relu"},
                                                                    {MlpKind::SquaredRelu, "squared_relu"},
                                                                    {MlpKind::Swiglu, "swiglu"}}};
constexpr std::array<std::pair<NormKind, const char*>, 2> kNormNames{
    {{NormKind::LayerNorm, "layer_norm"}, {NormKind::RmsNorm, "rms_norm"}}};
constexpr std::array<std::pair<PositionKind, const char*>, 4> kPositionNames{{{PositionKind::Learned, "learned"},
                                                                              {PositionKind::Rotary, "rotary"},
                                                                              {PositionKind::Alibi, "alibi"},
                                                                              {PositionKind::None, "none"}}};

}  // namespace

std::string to_string(MlpKind k) { return name_of(kMlpNames, k); }
std::string to_string(NormKind k) { return name_of(kNormNames, k); }
std::string to_string(PositionKind k) { return name_of(kPositionNames, k); }
std::optional<MlpKind> parse_mlp_kind(const std::string& s) { return parse_named(kMlpNames, s); }
std::optional<NormKind> parse_norm_kind(const std::string& s) { return parse_named(kNormNames, s); }
std::optional<PositionKind> parse_position_kind(const std::string& s) { return parse_named(kPositionNames, s); }

}  // namespace parasim::models
