// Hugging Face `config.json` files as transformer configurations.
//
// model_type gpt2, gpt_neox, llama, mistral, qwen2, mixtral and bert map onto TransformerConfig
// (docs/models.md has the field table). Only the fields that change the parameter count or the
// cost are read; the others (rope_theta, rms_norm_eps' value, initializer_range...) are ignored,
// except that a field we read must have the right type. An unknown model_type or a missing
// required field is an InputError naming the file and the field.
//
// Example:
//   TransformerConfig c = load_hf_config("llama3_8b/config.json");   // name "llama3_8b"
//   Model m = build_transformer(c, ModelOptions{.batch = 1, .seq_len = 8192});
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/models/transformer.hpp"

namespace parasim::models {

/// A JSON object with "model_type" and no parasim "schema".
bool is_hf_config(const nlohmann::json& doc);
/// The configuration `doc` describes; `file` names it in errors, `name` becomes the model's name.
/// seq_len: rope_scaling.original_max_position_embeddings when given (the pre-training length of
/// Llama 3.1), else max_position_embeddings (n_positions for gpt2).
TransformerConfig transformer_from_hf_config(const nlohmann::json& doc, const std::string& file,
                                             const std::string& name);
/// The model name a config file gives: its directory's name for ".../NAME/config.json" (the layout
/// of a Hugging Face checkout), else the file name without ".json".
std::string hf_model_name(const std::filesystem::path& path);
TransformerConfig load_hf_config(const std::filesystem::path& path);

}  // namespace parasim::models
