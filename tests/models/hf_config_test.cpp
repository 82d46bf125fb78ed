// Hugging Face config.json files: the configs below are the published ones (the fields that matter,
// copied from the Hugging Face hub's config.json of each model), and the parameter counts are the
// published totals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "parasim/common/error.hpp"
#include "parasim/models/hf_config.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {
namespace {

// meta-llama/Meta-Llama-3-8B
constexpr const char* kLlama3_8b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
  "use_cache": true, "vocab_size": 128256})";

// meta-llama/Meta-Llama-3-70B
constexpr const char* kLlama3_70b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 28672,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 64,
  "num_hidden_layers": 80, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 128256})";

// meta-llama/Llama-3.1-405B
constexpr const char* kLlama31_405b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "hidden_act": "silu", "hidden_size": 16384, "initializer_range": 0.02, "intermediate_size": 53248,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 128, "num_hidden_layers": 126, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})";

// mistralai/Mistral-7B-v0.1
constexpr const char* kMistral7b = R"({
  "architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 32000})";

// mistralai/Mixtral-8x7B-v0.1
constexpr const char* kMixtral = R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 32000})";

// openai-community/gpt2
constexpr const char* kGpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
  "embd_pdrop": 0.1, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768,
  "n_head": 12, "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257})";

// EleutherAI/pythia-70m (GPT-NeoX): 70,426,624 parameters.
constexpr const char* kPythia70m = R"({
  "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu",
  "hidden_size": 512, "initializer_range": 0.02, "intermediate_size": 2048, "layer_norm_eps": 1e-05,
  "max_position_embeddings": 2048, "model_type": "gpt_neox", "num_attention_heads": 8,
  "num_hidden_layers": 6, "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": false,
  "torch_dtype": "float16", "use_cache": true, "use_parallel_residual": true, "vocab_size": 50304})";

// google-bert/bert-large-uncased
constexpr const char* kBertLarge = R"({
  "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1, "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 4096,
  "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
  "num_attention_heads": 16, "num_hidden_layers": 24, "pad_token_id": 0, "type_vocab_size": 2,
  "vocab_size": 30522})";

// Qwen/Qwen2-0.5B: q, k, v biases, tied embeddings; 494,032,768 parameters.
constexpr const char* kQwen2_05b = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
  "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
  "max_position_embeddings": 131072, "max_window_layers": 24, "model_type": "qwen2",
  "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936})";

std::int64_t params_of(const char* text, std::int64_t seq_len = 0) {
  const TransformerConfig c = transformer_from_hf_config(nlohmann::json::parse(text), "config.json", "m");
  return build_transformer(c, ModelOptions{.batch = 1, .seq_len = seq_len == 0 ? 128 : seq_len}).total_params();
}

std::string load_error(const std::string& text) {
  try {
    (void)transformer_from_hf_config(nlohmann::json::parse(text), "bad/config.json", "bad");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HfConfig, PublishedParameterCounts) {
  EXPECT_EQ(params_of(kLlama3_8b), 8'030'261'248);
  EXPECT_EQ(params_of(kLlama3_70b), 70'553'706'496);
  EXPECT_EQ(params_of(kLlama31_405b), 405'853'388'800);
  EXPECT_EQ(params_of(kMistral7b), 7'241'732'096);
  EXPECT_EQ(params_of(kMixtral), 46'702'792'704);
  EXPECT_EQ(params_of(kGpt2), 124'439'808);      // GPT2LMHeadModel
  EXPECT_EQ(params_of(kPythia70m), 70'426'624);  // GPTNeoXForCausalLM
  EXPECT_EQ(params_of(kBertLarge), 335'174'458);  // BertForMaskedLM, as the zoo's bert_large
  EXPECT_EQ(params_of(kQwen2_05b), 494'032'768);  // Qwen2ForCausalLM
}

TEST(HfConfig, FieldsMapOntoTheTransformerConfig) {
  const TransformerConfig c = transformer_from_hf_config(nlohmann::json::parse(kLlama31_405b), "f", "x");
  EXPECT_EQ(c.kv_heads, 8);
  EXPECT_EQ(c.seq_len, 8192);  // rope_scaling.original_max_position_embeddings: the pre-training length
  EXPECT_EQ(c.max_positions, 131072);
  EXPECT_EQ(c.mlp, MlpKind::Swiglu);
  EXPECT_EQ(c.norm, NormKind::RmsNorm);
  EXPECT_EQ(c.positions, PositionKind::Rotary);
  EXPECT_FALSE(c.tied_embeddings);
  const TransformerConfig m = transformer_from_hf_config(nlohmann::json::parse(kMixtral), "f", "x");
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.seq_len, 32768);
  const TransformerConfig g = transformer_from_hf_config(nlohmann::json::parse(kGpt2), "f", "x");
  EXPECT_EQ(g.positions, PositionKind::Learned);
  EXPECT_TRUE(g.tied_embeddings);
  EXPECT_EQ(g.seq_len, 1024);
}

TEST(HfConfig, ConfigFileEqualsTheZooModel) {
  // A Hugging Face checkout's layout: the directory names the model.
  const auto dir = std::filesystem::temp_directory_path() / "parasim_hf_test" / "llama3_70b";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << kLlama3_70b;
  EXPECT_EQ(hf_model_name(dir / "config.json"), "llama3_70b");
  EXPECT_EQ(hf_model_name("models/mixtral.json"), "mixtral");
  const Model file =
      load_model_file(dir / "config.json", LoadOptions{.batch = 2, .dtype = DType::BF16, .seq_len = 4096});
  EXPECT_TRUE(file == build_zoo_model("llama3_70b", ModelOptions{.batch = 2, .dtype = DType::BF16, .seq_len = 4096}));
  // The default sequence is the config's (8192 here), as the zoo entry's.
  EXPECT_TRUE(load_model_file(dir / "config.json") == build_zoo_model("llama3_70b"));
  std::filesystem::remove_all(dir.parent_path());
}

TEST(HfConfig, Gpt2AndBertAreTheirZooEntries) {
  const TransformerConfig g = transformer_from_hf_config(nlohmann::json::parse(kGpt2), "f", "gpt2");
  EXPECT_TRUE(build_transformer(g, ModelOptions{.batch = 2}) == build_zoo_model("gpt2", ModelOptions{.batch = 2}));
  const TransformerConfig b = transformer_from_hf_config(nlohmann::json::parse(kBertLarge), "f", "bert_large");
  EXPECT_TRUE(build_transformer(b, ModelOptions{.seq_len = 128}) ==
              build_zoo_model("bert_large", ModelOptions{.seq_len = 128}));
}

TEST(HfConfig, MixtralIsItsZooEntry) {
  const TransformerConfig c = transformer_from_hf_config(nlohmann::json::parse(kMixtral), "f", "mixtral_8x7b");
  EXPECT_TRUE(build_transformer(c, ModelOptions{.seq_len = 512}) ==
              build_zoo_model("mixtral_8x7b", ModelOptions{.seq_len = 512}));
}

TEST(HfConfig, BadConfigsNameTheFileAndField) {
  EXPECT_EQ(load_error(R"({"model_type": "t5", "d_model": 512})"),
            "bad/config.json: $.model_type: expected a model_type parasim reads (gpt2, gpt_neox, llama, mistral, "
            "qwen2, mixtral, bert), found string \"t5\"");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2})"),
            "bad/config.json: $: missing required field \"num_attention_heads\"");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "hidden_size": -4, "num_hidden_layers": 2})"),
            "bad/config.json: $.hidden_size: expected an integer in [1, 1099511627776], found number -4");
  EXPECT_EQ(load_error(R"({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
                           "num_key_value_heads": 3, "intermediate_size": 128, "vocab_size": 100,
                           "max_position_embeddings": 64})"),
            "bad/config.json: transformer bad: expected kv_heads in [0, heads] dividing heads (8), found 3");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
                           "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
                           "hidden_act": "gelu"})"),
            "bad/config.json: $.hidden_act: expected \"silu\" (a SwiGLU MLP), found string \"gelu\"");
  EXPECT_EQ(load_error(R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
                           "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
                           "num_local_experts": 4})"),
            "bad/config.json: $: missing required field \"num_experts_per_tok\"");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
                           "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
                           "mlp_bias": true})"),
            "bad/config.json: $.mlp_bias: expected attention_bias equal to mlp_bias (parasim puts biases on all block "
            "linears or none), found boolean true");
  EXPECT_EQ(load_error("[1, 2]"), "bad/config.json: $: expected a Hugging Face config.json object, found an array");
}

TEST(HfConfig, SequenceLengthOnlyForConfigs) {
  const auto path = std::filesystem::temp_directory_path() / "parasim_hf_test_model.json";
  save_model_file(build_zoo_model("tiny_cnn"), path);
  try {
    (void)load_model_file(path, LoadOptions{.seq_len = 16});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() +
                                         ": a sequence length applies to zoo models and Hugging Face config.json "
                                         "files only; a parasim.model/1 file fixes its shapes");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace parasim::models
