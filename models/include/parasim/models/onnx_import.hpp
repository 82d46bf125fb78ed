// ONNX graphs (`.onnx` files, onnx.ModelProto protobuf) as parasim models.
//
// The forward graph of an inference or training export becomes a DFG built through
// ModelBuilder, so shapes, parameters, MACs and the derived backward are those of the zoo:
// Conv + BatchNormalization + Relu is conv2d + batch_norm + relu, Gemm with a weight is linear,
// LSTM is lstm... docs/models.md lists every supported op and how it maps. Only initializer
// dims are read, never their values (except small int64 shape tensors), so weights stored as
// external data need not be present.
//
// Batch: the leading dimension of every graph input. A symbolic one (dim_param) takes
// LoadOptions::batch (default: the file's fixed batch, else 1); a fixed one is replaced by
// LoadOptions::batch when given.
// Another symbolic dimension takes LoadOptions::seq_len, or the load fails naming it.
//
// Every error names the file, and the node (its name and op_type) or initializer at fault.
//
// Example:
//   Model m = load_onnx_model("resnet50.onnx", LoadOptions{.batch = 32});   // name "resnet50"
//   std::cout << m.total_params() << "\n";                                     // 25557032
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "parasim/models/graph.hpp"
#include "parasim/models/model_json.hpp"

namespace parasim::models {

/// Whether this parasim was built with ONNX import (PARASIM_ONNX, libonnx-dev).
bool onnx_import_built();
/// A path parasim reads as ONNX: its extension is ".onnx" (any case).
bool is_onnx_path(const std::filesystem::path& path);
/// Loads `path`; the model is named after the file (resnet50.onnx -> "resnet50"). InputError for
/// anything malformed or unsupported, or when ONNX import was not built.
Model load_onnx_model(const std::filesystem::path& path, const LoadOptions& options = {});
/// The same from the file's bytes; `origin` names them in errors, `name` becomes the model's name.
Model onnx_model_from_bytes(std::string_view bytes, const std::string& origin, const std::string& name,
                            const LoadOptions& options = {});

}  // namespace parasim::models
