// The parts of an ONNX graph the importer reads, free of protobuf (internal).
//
// onnx_import.cpp fills these from an onnx.ModelProto; onnx_graph.cpp maps them onto
// ModelBuilder ops. Keeping protobuf on one side keeps the op mapping readable.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"
#include "parasim/models/model_json.hpp"

namespace parasim::models::detail::onnx {

/// A tensor constant: its dims, plus its values when it is a small integer or float tensor stored
/// inline (shape arguments, axes, scalars). Weights keep only their dims.
struct Constant {
  Shape dims;
  std::optional<std::vector<std::int64_t>> ints;
  std::optional<std::vector<double>> floats;
};

struct Attribute {
  enum class Type { Int, Float, Ints, Floats, String, Tensor, Other };
  Type type = Type::Other;
  std::int64_t i = 0;
  double f = 0.0;
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
  std::string s;
  Constant t;
};

struct Node {
  std::string name;  // may be empty in the file
  std::string op_type;
  std::string domain;               // "" = ai.onnx
  std::vector<std::string> inputs;  // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;
};

/// One dimension of a graph input: a value, or a symbol (dim_param), or unknown (neither).
struct Dim {
  std::optional<std::int64_t> value;
  std::string param;
};

struct GraphInput {
  std::string name;
  std::vector<Dim> dims;
  bool has_shape = false;
};

struct Graph {
  std::int64_t opset = 0;  // of the default domain
  std::vector<GraphInput> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Constant> initializers;
  std::vector<Node> nodes;
};

/// Builds the model; `file` names the origin in errors.
Model build_model(const Graph& g, const std::string& file, const std::string& name, const LoadOptions& options);

}  // namespace parasim::models::detail::onnx
