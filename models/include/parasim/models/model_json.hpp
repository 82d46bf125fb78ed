// The model file format, "parasim.model/1".
//
//   {"schema": "parasim.model/1", "name": "mlp", "batch": 32, "dtype": "fp32", "dataset": "",
//    "ops": [
//      {"name": "x", "kind": "input", "output_shape": [32, 784]},
//      {"name": "fc1", "kind": "linear", "inputs": ["x"], "attrs": {"out_features": 256}},
//      {"name": "act", "kind": "relu", "inputs": ["fc1"]},
//      {"name": "fc2", "kind": "linear", "inputs": ["act"], "attrs": {"out_features": 10, "bias": false}},
//      {"name": "loss", "kind": "cross_entropy", "inputs": ["fc2"]}]}
//
// Users describe their own models in it, so the loader trusts nothing but kinds, attrs and
// inputs: it re-runs shape inference and cost computation (the same code as ModelBuilder) and
// checks any output_shape given against the inferred one. Ops may appear in any order; the
// model stores them in a topological order (file order when the file is already sorted, as
// every file written by save_model_file is). Every error names the file, the JSON path
// ($.ops[3].attrs.stride) and what was expected. docs/models.md lists every attribute.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/models/graph.hpp"

namespace parasim::models {

inline constexpr const char* kModelSchema = "parasim.model/1";

/// Overrides applied while loading (the file's own values otherwise).
struct LoadOptions {
  /// New batch size: the leading dimension of every input and reshape op that equals the
  /// file's batch is replaced (or, for a reshape whose input no longer matches it, its last
  /// dimension equal to the batch: a time-major view), then everything is re-inferred.
  std::optional<std::int64_t> batch = std::nullopt;
  std::optional<DType> dtype = std::nullopt;
  /// Tokens per sample: only for Hugging Face config.json files (default: the config's pre-training
  /// length) and ONNX graphs with a symbolic sequence dimension; InputError for parasim.model/1
  /// files, whose shapes are fixed.
  std::optional<std::int64_t> seq_len = std::nullopt;
};

nlohmann::json model_to_json(const Model& model);
/// `file` names the origin in error messages.
Model model_from_json(const nlohmann::json& doc, const std::string& file, const LoadOptions& options = {});
/// A parasim.model/1 file, a Hugging Face config.json (a JSON object with "model_type", built
/// with build_transformer: hf_config.hpp; batch 1 and fp32 unless overridden), or an ONNX graph
/// (a ".onnx" file: onnx_import.hpp).
Model load_model_file(const std::filesystem::path& path, const LoadOptions& options = {});
/// Writes atomically (temporary file + rename). RuntimeError if the file cannot be written.
void save_model_file(const Model& model, const std::filesystem::path& path);
/// The same model at another batch size (or dtype), re-inferred op by op through the builder:
/// equal to loading model_to_json(model) with LoadOptions{batch, dtype}. Works for any model,
/// zoo or file; for zoo models build_zoo_model gives the same result.
Model with_batch(const Model& model, std::int64_t batch, std::optional<DType> dtype = std::nullopt);

}  // namespace parasim::models
