// The blocks of today's LLMs in the transformer builder: grouped-query attention, rotary positions,
// SwiGLU / squared-ReLU MLPs, RMSNorm, bias-free norms and linears, untied embeddings. Numbers are
// hand-computed for a one-layer toy (hidden 64, 8 heads of 8, 2 KV heads, ffn 128, vocab 100,
// 16 tokens, batch 2, fp32) and, for the parameter count, taken from Llama-3-8B's model card.
#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/transformer.hpp"

namespace parasim::models {
namespace {

TransformerConfig toy_llama() {
  TransformerConfig c;
  c.name = "toy_llama";
  c.layers = 1;
  c.hidden = 64;
  c.heads = 8;
  c.kv_heads = 2;
  c.ffn = 128;
  c.vocab = 100;
  c.seq_len = 16;
  c.tied_embeddings = false;
  c.mlp = MlpKind::Swiglu;
  c.norm = NormKind::RmsNorm;
  c.positions = PositionKind::Rotary;
  c.linear_bias = false;
  c.dropout = 0.0;
  return c;
}

const Op& op_named(const Model& m, const std::string& name) {
  const auto v = m.find_op(name);
  if (!v) throw std::runtime_error("no op " + name);
  return m.op(*v);
}

TEST(LlmBlocks, GroupedQueryAttentionRotarySwigluRmsNorm) {
  const Model m = build_transformer(toy_llama(), ModelOptions{.batch = 2});
  // q|k|v: (8 + 2 x 2) heads x 8 features = 96 outputs, no bias.
  const Op& qkv = op_named(m, "h.0.attn.c_attn");
  EXPECT_EQ(qkv.output_shape, (Shape{2, 16, 96}));
  EXPECT_EQ(qkv.params, 64 * 96);
  // Rotary: q and k heads (8 + 2) x 8 = 80 features of 2 x 16 tokens rotated in place, plus the
  // 16 x 8 cos|sin table read; nothing kept for backward.
  const Op& rot = op_named(m, "h.0.attn.rotary");
  EXPECT_EQ(rot.params, 0);
  EXPECT_EQ(rot.macs_fwd, 0);
  EXPECT_EQ(rot.bytes_read, (2 * 16 * 80 + 16 * 8) * 4);
  EXPECT_EQ(rot.bytes_written, 2 * 16 * 80 * 4);
  EXPECT_EQ(rot.activation_bytes, 0);
  // Attention: the score and context matmuls of full MHA (K/V heads are shared, not fewer FLOPs):
  // 2 x 16 x 16 pairs x (64 + 64) features.
  const Op& core = op_named(m, "h.0.attn.core");
  EXPECT_EQ(core.output_shape, (Shape{2, 16, 64}));
  EXPECT_EQ(core.macs_fwd, 2 * 16 * 16 * 128);
  EXPECT_EQ(core.macs_bwd_data, 2 * core.macs_fwd);
  // Kept: the packed q|k|v (2 x 16 x 96) and the probabilities (2 x 8 x 16 x 16).
  EXPECT_EQ(core.activation_bytes, (2 * 16 * 96 + 2 * 8 * 16 * 16) * 4);
  // SwiGLU: fused gate|up 64 -> 256, silu(gate) * up -> 128, down 128 -> 64.
  EXPECT_EQ(op_named(m, "h.0.mlp.c_fc").params, 64 * 256);
  const Op& glu = op_named(m, "h.0.mlp.swiglu");
  EXPECT_EQ(glu.output_shape, (Shape{2, 16, 128}));
  EXPECT_EQ(glu.bytes_read, 2 * 16 * 256 * 4);
  EXPECT_EQ(glu.activation_bytes, 2 * 16 * 256 * 4);
  EXPECT_EQ(op_named(m, "h.0.mlp.c_proj").params, 128 * 64);
  EXPECT_EQ(op_named(m, "h.0.ln_1").kind, OpKind::RmsNorm);
  EXPECT_EQ(op_named(m, "h.0.ln_1").params, 64);
  // No learned positions, no dropout, untied head.
  EXPECT_FALSE(m.find_op("wpe"));
  EXPECT_FALSE(m.find_op("h.0.attn.dropout"));
  EXPECT_EQ(op_named(m, "lm_head").params, 64 * 100);
  // 2 x 6400 (embedding, head) + 6144 + 4096 + 24576 + 128 (layer) + 64 (final norm).
  EXPECT_EQ(m.total_params(), 47'808);
}

TEST(LlmBlocks, MultiQuerySquaredReluLayerNormWithoutBias) {
  TransformerConfig c = toy_llama();
  c.kv_heads = 1;
  c.mlp = MlpKind::SquaredRelu;
  c.norm = NormKind::LayerNorm;
  c.norm_bias = false;
  c.positions = PositionKind::Alibi;  // inside the attention kernel: no op, no parameters
  const Model m = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_EQ(op_named(m, "h.0.attn.c_attn").params, 64 * (8 + 2) * 8);
  EXPECT_FALSE(m.find_op("h.0.attn.rotary"));
  EXPECT_EQ(op_named(m, "h.0.mlp.c_fc").params, 64 * 128);
  EXPECT_EQ(op_named(m, "h.0.mlp.squared_relu").activation_bytes, 2 * 16 * 128 * 4);
  EXPECT_EQ(op_named(m, "h.0.ln_2").params, 64);  // scale only
  c.norm_bias = true;
  c.linear_bias = true;
  const Model biased = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_EQ(op_named(biased, "h.0.ln_2").params, 128);
  EXPECT_EQ(op_named(biased, "h.0.attn.c_attn").params, 64 * 80 + 80);
  // Qwen2's layout: biases on q|k|v only.
  c.linear_bias = false;
  c.qkv_bias = true;
  const Model qwen = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_EQ(op_named(qwen, "h.0.attn.c_attn").params, 64 * 80 + 80);
  EXPECT_EQ(op_named(qwen, "h.0.attn.c_proj").params, 64 * 64);
}

TEST(LlmBlocks, KvHeadsEqualToHeadsIsMultiHeadAttention) {
  TransformerConfig c = toy_llama();
  c.kv_heads = 8;
  const Model a = build_transformer(c, ModelOptions{.batch = 2});
  c.kv_heads = 0;
  EXPECT_TRUE(a == build_transformer(c, ModelOptions{.batch = 2}));
  EXPECT_EQ(op_named(a, "h.0.attn.core").attrs.kv_heads, 0);
}

TEST(LlmBlocks, Llama3_8bParameterCount) {
  // Meta's Llama-3-8B: 32 layers, 4096 hidden, 32 heads, 8 KV heads, ffn 14336, vocab 128256,
  // untied; 8,030,261,248 parameters (the model card's and Hugging Face's count).
  TransformerConfig c = toy_llama();
  c.layers = 32;
  c.hidden = 4096;
  c.heads = 32;
  c.kv_heads = 8;
  c.ffn = 14336;
  c.vocab = 128256;
  c.seq_len = 8192;
  EXPECT_EQ(build_transformer(c, ModelOptions{.batch = 1}).total_params(), 8'030'261'248);
}

TEST(LlmBlocks, BadConfigsNameTheField) {
  TransformerConfig c = toy_llama();
  c.kv_heads = 3;
  try {
    (void)build_transformer(c, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "transformer toy_llama: expected kv_heads in [0, heads] dividing heads (8), found 3");
  }
  c = toy_llama();
  c.head_dim = 7;
  EXPECT_THROW((void)build_transformer(c, {}), InputError);  // rotary needs an even head dimension
}

TEST(LlmBlocks, JsonRoundTripKeepsTheNewOps) {
  for (bool norm_bias : {false, true}) {
    TransformerConfig c = toy_llama();
    c.norm = NormKind::LayerNorm;
    c.norm_bias = norm_bias;
    const Model m = build_transformer(c, ModelOptions{.batch = 2});
    EXPECT_TRUE(model_from_json(model_to_json(m), "round trip") == m);
  }
  const Model m = build_transformer(toy_llama(), ModelOptions{.batch = 2});
  EXPECT_TRUE(model_from_json(model_to_json(m), "round trip") == m);
  const nlohmann::json j = model_to_json(m);
  bool saw_kv = false;
  for (const auto& op : j["ops"])
    if (op["kind"] == "attention") saw_kv = op["attrs"]["kv_heads"] == 2;
  EXPECT_TRUE(saw_kv);
}

TEST(LlmBlocks, MixtureOfExpertsLayer) {
  // 4 SwiGLU experts of width 32, top-2, one shared expert; 2 x 16 = 32 tokens of 64 features.
  TransformerConfig c = toy_llama();
  c.experts = 4;
  c.top_k = 2;
  c.moe_ffn = 32;
  c.shared_experts = 1;
  const Model m = build_transformer(c, ModelOptions{.batch = 2});
  const Op& e = op_named(m, "h.0.moe.experts");
  EXPECT_EQ(e.params, 4 * 64 + 4 * 3 * 64 * 32);  // router + experts (gate, up, down)
  // Router 32 x 64 x 4, then 32 x 2 = 64 slots through 3 matrices of 64 x 32.
  EXPECT_EQ(e.macs_fwd, 32 * 64 * 4 + 64 * 3 * 64 * 32);
  EXPECT_EQ(e.macs_bwd_data, e.macs_fwd);
  EXPECT_EQ(e.macs_bwd_weight, e.macs_fwd);
  // Input, router probabilities and per slot the token and gate, up, product.
  EXPECT_EQ(e.activation_bytes, (32 * 64 + 32 * 4 + 64 * (64 + 3 * 32)) * 4);
  EXPECT_EQ(op_named(m, "h.0.moe.shared.c_fc").params, 64 * 64);  // fused gate|up of one shared expert
  EXPECT_EQ(op_named(m, "h.0.moe.shared.c_proj").params, 32 * 64);
  EXPECT_FALSE(m.find_op("h.0.mlp.c_fc"));
  // Capacity factor 1.25: ceil(1.25 x 64 / 4) = 20 slots per expert, 80 in all.
  c.capacity_factor = 1.25;
  const Model padded = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_EQ(op_named(padded, "h.0.moe.experts").macs_fwd, 32 * 64 * 4 + 80 * 3 * 64 * 32);
  EXPECT_TRUE(model_from_json(model_to_json(padded), "round trip") == padded);
  // DeepSeek's first dense layers.
  c.layers = 2;
  c.moe_dense_layers = 1;
  const Model mixed = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_TRUE(mixed.find_op("h.0.mlp.c_fc"));
  EXPECT_TRUE(mixed.find_op("h.1.moe.experts"));
  c.top_k = 5;
  EXPECT_THROW((void)build_transformer(c, {}), InputError);
}

TEST(LlmBlocks, KindNamesParse) {
  EXPECT_EQ(parse_mlp_kind("swiglu"), MlpKind::Swiglu);
  EXPECT_EQ(parse_norm_kind("rms_norm"), NormKind::RmsNorm);
  EXPECT_EQ(parse_position_kind("alibi"), PositionKind::Alibi);
  EXPECT_FALSE(parse_mlp_kind("geglu"));
  EXPECT_EQ(to_string(PositionKind::Rotary), "rotary");
  EXPECT_EQ(parse_op_kind("squared_relu"), OpKind::SquaredRelu);
}

}  // namespace
}  // namespace parasim::models
