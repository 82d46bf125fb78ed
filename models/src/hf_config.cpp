// Hugging Face config.json -> TransformerConfig. The mapping per model_type follows the modeling
// files of transformers (modeling_llama.py, modeling_mistral.py, modeling_qwen2.py,
// modeling_mixtral.py, modeling_gpt2.py, modeling_gpt_neox.py, modeling_bert.py).
#include "parasim/models/hf_config.hpp"

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::models {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr std::int64_t kMaxLayers = 4096;  // hostile input must not build millions of ops (126 in Llama 3.1 405B)

struct Reader {
  JsonField root;
  std::int64_t req(const char* key, std::int64_t min = 1) const { return root.at(key).as_int(min, kMaxDim); }
  std::int64_t opt(const char* key, std::int64_t fallback, std::int64_t min = 1) const {
    const auto v = root.find(key);
    return v && !v->raw().is_null() ? v->as_int(min, kMaxDim) : fallback;
  }
  bool flag(const char* key, bool fallback) const {
    const auto v = root.find(key);
    return v && !v->raw().is_null() ? v->as_bool() : fallback;
  }
  std::string str(const char* key, const std::string& fallback) const {
    const auto v = root.find(key);
    return v && !v->raw().is_null() ? v->as_string() : fallback;
  }
  /// hidden_act / activation_function -> MLP kind; llama-family configs must say silu (SwiGLU).
  MlpKind activation(const char* key, const std::string& fallback, bool gated) const {
    const std::string act = str(key, fallback);
    if (gated) {
      if (act == "silu" || act == "swish") return MlpKind::Swiglu;
      root.at(key).fail("\"silu\" (a SwiGLU MLP)");
    }
    if (act == "gelu" || act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh" || act == "gelu_python")
      return MlpKind::Gelu;
    if (act == "relu") return MlpKind::Relu;
    if (act == "relu2") return MlpKind::SquaredRelu;
    root.at(key).fail("a gelu, relu or relu2 activation");
  }
  /// Non-negative number checked for type only (rms_norm_eps, layer_norm_eps...).
  void number(const char* key) const {
    if (const auto v = root.find(key); v && !v->raw().is_null()) (void)v->as_double(0.0);
  }
};

void read_llama_family(const Reader& r, const std::string& type, TransformerConfig& c) {
  c.layers = r.req("num_hidden_layers");
  c.hidden = r.req("hidden_size");
  c.heads = r.req("num_attention_heads");
  c.kv_heads = r.opt("num_key_value_heads", c.heads);
  c.head_dim = r.opt("head_dim", 0);
  c.ffn = r.req("intermediate_size");
  c.vocab = r.req("vocab_size");
  c.max_positions = r.req("max_position_embeddings");
  c.seq_len = c.max_positions;
  if (const auto scaling = r.root.find("rope_scaling"); scaling && !scaling->raw().is_null()) {
    if (const auto orig = scaling->find("original_max_position_embeddings")) c.seq_len = orig->as_int(1, kMaxDim);
  }
  c.tied_embeddings = r.flag("tie_word_embeddings", false);
  c.mlp = r.activation("hidden_act", "silu", /*gated=*/true);
  c.norm = NormKind::RmsNorm;
  r.number("rms_norm_eps");
  c.positions = PositionKind::Rotary;
  c.dropout = 0.0;  // attention_dropout is 0 in every published config; no hidden dropout
  c.linear_bias = false;
  if (type == "qwen2") c.qkv_bias = true;  // Qwen2Attention: q, k, v projections with bias, o without
  if (type == "llama") {
    const bool attention_bias = r.flag("attention_bias", false);
    const bool mlp_bias = r.flag("mlp_bias", false);
    if (attention_bias != mlp_bias) {
      const JsonField field = r.root.at(r.root.has("attention_bias") ? "attention_bias" : "mlp_bias");
      field.fail("attention_bias equal to mlp_bias (parasim puts biases on all block linears or none)");
    }
    c.linear_bias = attention_bias;
  }
  if (type == "mixtral") {
    c.experts = r.req("num_local_experts");
    c.top_k = r.req("num_experts_per_tok");
    if (c.top_k > c.experts) r.root.at("num_experts_per_tok").fail("at most num_local_experts");
  }
}

void read_gpt2(const Reader& r, TransformerConfig& c) {
  c.layers = r.req("n_layer");
  c.hidden = r.req("n_embd");
  c.heads = r.req("n_head");
  c.ffn = r.opt("n_inner", 0);
  c.vocab = r.req("vocab_size");
  c.max_positions = r.req("n_positions");
  c.seq_len = c.max_positions;
  c.tied_embeddings = r.flag("tie_word_embeddings", true);
  c.mlp = r.activation("activation_function", "gelu_new", false);
  r.number("layer_norm_epsilon");
}

void read_gpt_neox(const Reader& r, TransformerConfig& c) {
  c.layers = r.req("num_hidden_layers");
  c.hidden = r.req("hidden_size");
  c.heads = r.req("num_attention_heads");
  c.ffn = r.req("intermediate_size");
  c.vocab = r.req("vocab_size");
  c.max_positions = r.req("max_position_embeddings");
  c.seq_len = c.max_positions;
  c.tied_embeddings = r.flag("tie_word_embeddings", false);
  c.mlp = r.activation("hidden_act", "gelu", false);
  c.positions = PositionKind::Rotary;
  c.linear_bias = r.flag("attention_bias", true);
  if (!c.linear_bias) r.root.at("attention_bias").fail("true (GPT-NeoX's MLP always has biases)");
  c.dropout = 0.0;
  r.number("layer_norm_eps");
}

void read_bert(const Reader& r, TransformerConfig& c) {
  c.layers = r.req("num_hidden_layers");
  c.hidden = r.req("hidden_size");
  c.heads = r.req("num_attention_heads");
  c.ffn = r.req("intermediate_size");
  c.vocab = r.req("vocab_size");
  c.max_positions = r.req("max_position_embeddings");
  c.seq_len = c.max_positions;
  c.type_vocab = r.opt("type_vocab_size", 2, 0);
  c.tied_embeddings = r.flag("tie_word_embeddings", true);
  c.mlp = r.activation("hidden_act", "gelu", false);
  c.pre_layer_norm = false;
  c.mlm_head = true;  // BertForMaskedLM, the pre-training model
  c.causal = false;   // a bidirectional encoder
  c.dataset = "wikipedia";
  r.number("layer_norm_eps");
}

}  // namespace

bool is_hf_config(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("model_type") && !doc.contains("schema");
}

TransformerConfig transformer_from_hf_config(const nlohmann::json& doc, const std::string& file,
                                             const std::string& name) {
  const JsonField root{doc, file, "$"};
  if (!root.is_object()) root.fail("a Hugging Face config.json object");
  const Reader r{root};
  const JsonField type_field = root.at("model_type");
  const std::string type = type_field.as_string();
  TransformerConfig c;
  c.name = name;
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "mixtral") read_llama_family(r, type, c);
  else if (type == "gpt2") read_gpt2(r, c);
  else if (type == "gpt_neox") read_gpt_neox(r, c);
  else if (type == "bert") read_bert(r, c);
  else type_field.fail("a model_type parasim reads (gpt2, gpt_neox, llama, mistral, qwen2, mixtral, bert)");
  if (c.layers > kMaxLayers)
    root.at(root.has("n_layer") ? "n_layer" : "num_hidden_layers")
        .fail("at most " + std::to_string(kMaxLayers) + " layers");
  // The builder's own checks (heads dividing hidden...), reported against the file; one layer
  // suffices, every layer is alike.
  try {
    TransformerConfig probe = c;
    probe.layers = 1;
    (void)build_transformer(probe, ModelOptions{.batch = 1, .seq_len = 1});
  } catch (const InputError& e) {
    throw InputError(file + ": " + e.what());
  }
  return c;
}

std::string hf_model_name(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path().filename();
  if (path.filename() == "config.json" && !parent.empty() && parent != "." && parent != "..") return parent.string();
  return path.stem().string();
}

TransformerConfig load_hf_config(const std::filesystem::path& path) {
  return transformer_from_hf_config(read_json_file(path), path.string(), hf_model_name(path));
}

}  // namespace parasim::models
