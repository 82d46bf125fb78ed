// The model zoo: the networks parasim knows by name, built with exact torchvision-equal
// parameter counts where torchvision has the model.
//
// Example:
//   for (const ZooEntry& e : zoo_entries()) std::cout << e.name << "\n";
//   Model m = build_zoo_model("inception_v3", ModelOptions{.batch = 32, .dtype = DType::F16});
//   Model g = build_zoo_model("gpt2", ModelOptions{.batch = 8, .seq_len = 512});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::models {

struct ModelOptions {
  std::int64_t batch = 1;
  DType dtype = DType::F32;
  std::int64_t image_size = 0;     // image models: input height = width; 0 = the model's default
  std::int64_t seq_len = 0;        // sequence models: tokens per sample; 0 = the model's default
  /// Auxiliary classifiers (Inception-v3, GoogLeNet); nullopt = the preset's default
  /// (inception_v3: with, inception_v3_noaux / googlenet: without).
  std::optional<bool> aux_logits = std::nullopt;
  /// Masked-LM models (bert_large): the MLM head runs on this many gathered positions per sample;
  /// 0 = the preset's (every position). TransformerConfig::mlm_positions has the rule.
  std::int64_t mlm_positions = 0;
};

struct ZooEntry {
  std::string name = {};
  std::string description = {};
  std::string dataset = {};     // default dataset ("imagenet-1k", "cifar-10", "wmt16-en-de", "lm1b", ...)
  bool takes_image_size = false;  // honours ModelOptions::image_size
  bool takes_seq_len = false;     // honours ModelOptions::seq_len
  bool takes_aux_logits = false;  // honours ModelOptions::aux_logits
  bool takes_mlm_positions = false;  // honours ModelOptions::mlm_positions (has a masked-LM head)
};

/// Every zoo model, in a fixed order (CNNs, recurrent models, transformers, tiny test models).
const std::vector<ZooEntry>& zoo_entries();
/// The entry for `name`; InputError listing the known names if there is none.
const ZooEntry& zoo_entry(const std::string& name);
bool is_zoo_model(const std::string& name);
/// Builds a zoo model. InputError for an unknown name (listing the known ones) or options the
/// model does not take or cannot satisfy (batch < 1, an image too small for the network...).
Model build_zoo_model(const std::string& name, const ModelOptions& options = {});

}  // namespace parasim::models
