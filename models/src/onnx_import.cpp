// Reading onnx.ModelProto (libonnx_proto's generated classes) into onnx_graph.hpp's plain structs.
//
// Only what the op mapping needs is copied: node types, attributes, graph input dims, initializer
// dims and the values of small integer or float constants. Weights stay unread; their size is
// checked against their dims when they are stored inline.
#include "parasim/models/onnx_import.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "onnx_graph.hpp"
#include "parasim/common/error.hpp"

namespace parasim::models {

namespace {

// Values are decoded only for tensors this small: shape arguments, axes and scalars.
constexpr std::int64_t kMaxDecodedValues = 4096;

std::int64_t element_size(std::int32_t type) {
  switch (type) {
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::BOOL: return 1;
    case ::onnx::TensorProto::UINT16:
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::FLOAT16:
    case ::onnx::TensorProto::BFLOAT16: return 2;
    case ::onnx::TensorProto::INT32:
    case ::onnx::TensorProto::UINT32:
    case ::onnx::TensorProto::FLOAT: return 4;
    case ::onnx::TensorProto::INT64:
    case ::onnx::TensorProto::UINT64:
    case ::onnx::TensorProto::DOUBLE:
    case ::onnx::TensorProto::COMPLEX64: return 8;
    case ::onnx::TensorProto::COMPLEX128: return 16;
    default: return 0;  // strings, undefined: no fixed size
  }
}

template <class T>
std::vector<T> decode_raw(const std::string& raw, std::int64_t n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  if (n > 0) std::memcpy(v.data(), raw.data(), static_cast<std::size_t>(n) * sizeof(T));  // ONNX: little-endian
  return v;
}

/// Dims, a size check of inline data, and the values of small numeric tensors.
detail::onnx::Constant read_tensor(const ::onnx::TensorProto& t, const std::string& what) {
  detail::onnx::Constant c;
  for (std::int64_t d : t.dims()) {
    if (d < 0) throw InputError(what + ": expected dims >= 0, found " + std::to_string(d));
    c.dims.push_back(d);
  }
  std::int64_t n = 1;
  for (std::int64_t d : c.dims) {
    if (d != 0 && n > (std::int64_t{1} << 50) / d)
      throw InputError(what + ": dims " + to_string(c.dims) + " hold more than 2^50 elements");
    n *= d;
  }
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) return c;  // weights in another file: never read
  const std::int32_t type = t.data_type();
  const std::int64_t size = element_size(type);
  const bool raw = t.has_raw_data();
  if (raw && size > 0 && static_cast<std::int64_t>(t.raw_data().size()) != n * size)
    throw InputError(what + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, expected " +
                     std::to_string(n * size) + " for dims " + to_string(c.dims));
  std::int64_t typed = 0;
  switch (type) {
    case ::onnx::TensorProto::INT64: typed = t.int64_data_size(); break;
    case ::onnx::TensorProto::FLOAT: typed = t.float_data_size(); break;
    case ::onnx::TensorProto::DOUBLE: typed = t.double_data_size(); break;
    case ::onnx::TensorProto::STRING: typed = t.string_data_size(); break;
    case ::onnx::TensorProto::UINT64:
    case ::onnx::TensorProto::UINT32: typed = t.uint64_data_size(); break;
    default: typed = t.int32_data_size(); break;  // int32 and every smaller type, float16, bool
  }
  if (!raw && typed != n) {
    if (typed == 0 && n > 0)
      throw InputError(what + ": no data for dims " + to_string(c.dims) + " (expected inline data or external data)");
    throw InputError(what + ": holds " + std::to_string(typed) + " values, expected " + std::to_string(n) +
                     " for dims " + to_string(c.dims));
  }
  if (n > kMaxDecodedValues) return c;
  switch (type) {
    case ::onnx::TensorProto::INT64:
      c.ints = raw ? decode_raw<std::int64_t>(t.raw_data(), n)
                   : std::vector<std::int64_t>(t.int64_data().begin(), t.int64_data().end());
      break;
    case ::onnx::TensorProto::INT32: {
      const std::vector<std::int32_t> v = raw ? decode_raw<std::int32_t>(t.raw_data(), n)
                                              : std::vector<std::int32_t>(t.int32_data().begin(), t.int32_data().end());
      c.ints = std::vector<std::int64_t>(v.begin(), v.end());
      break;
    }
    case ::onnx::TensorProto::FLOAT: {
      const std::vector<float> v =
          raw ? decode_raw<float>(t.raw_data(), n) : std::vector<float>(t.float_data().begin(), t.float_data().end());
      c.floats = std::vector<double>(v.begin(), v.end());
      break;
    }
    case ::onnx::TensorProto::DOUBLE:
      c.floats = raw ? decode_raw<double>(t.raw_data(), n)
                     : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    default: break;
  }
  return c;
}

detail::onnx::Attribute read_attribute(const ::onnx::AttributeProto& a, const std::string& what) {
  using Type = detail::onnx::Attribute::Type;
  detail::onnx::Attribute out;
  switch (a.type()) {
    case ::onnx::AttributeProto::INT: out.type = Type::Int, out.i = a.i(); break;
    case ::onnx::AttributeProto::FLOAT: out.type = Type::Float, out.f = a.f(); break;
    case ::onnx::AttributeProto::INTS:
      out.type = Type::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case ::onnx::AttributeProto::FLOATS:
      out.type = Type::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case ::onnx::AttributeProto::STRING: out.type = Type::String, out.s = a.s(); break;
    case ::onnx::AttributeProto::TENSOR:
      out.type = Type::Tensor;
      out.t = read_tensor(a.t(), what + " attribute " + a.name());
      break;
    default: break;  // graphs, sparse tensors, type protos: the ops that carry them are unsupported
  }
  return out;
}

detail::onnx::Graph read_graph(const ::onnx::ModelProto& m, const std::string& file) {
  detail::onnx::Graph g;
  for (const auto& op_set : m.opset_import())
    if (op_set.domain().empty() || op_set.domain() == "ai.onnx") g.opset = op_set.version();
  if (!m.has_graph()) throw InputError(file + ": expected an ONNX model with a graph, found none");
  const ::onnx::GraphProto& graph = m.graph();
  if (g.opset <= 0)
    throw InputError(file + ": expected an opset_import for the default ONNX domain (the opset version)");
  if (graph.sparse_initializer_size() > 0)
    throw InputError(file + ": initializer " + graph.sparse_initializer(0).values().name() +
                     ": sparse initializers are not supported");
  for (const auto& t : graph.initializer()) {
    if (t.name().empty()) throw InputError(file + ": expected every initializer to have a name, found one without");
    g.initializers[t.name()] = read_tensor(t, file + ": initializer " + t.name());
  }
  for (const auto& vi : graph.input()) {
    if (g.initializers.count(vi.name())) continue;  // IR < 4 lists initializers as inputs too
    detail::onnx::GraphInput in;
    in.name = vi.name();
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
      in.has_shape = true;
      for (const auto& d : vi.type().tensor_type().shape().dim()) {
        detail::onnx::Dim dim;
        if (d.has_dim_value()) dim.value = d.dim_value();
        else if (d.has_dim_param()) dim.param = d.dim_param();
        in.dims.push_back(std::move(dim));
      }
    }
    g.inputs.push_back(std::move(in));
  }
  for (const auto& vi : graph.output()) g.outputs.push_back(vi.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const ::onnx::NodeProto& n = graph.node(i);
    detail::onnx::Node node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? std::string() : n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    // Appended piece by piece: GCC 12 sees a false -Wrestrict in one long chain of + here.
    std::string what = file;
    what += ": node ";
    if (n.name().empty()) what.append(1, '#').append(std::to_string(i));
    else what.append("\"").append(n.name()).append("\"");
    what.append(" (").append(n.op_type()).append(")");
    for (const auto& a : n.attribute()) node.attrs[a.name()] = read_attribute(a, what);
    g.nodes.push_back(std::move(node));
  }
  return g;
}

std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path.string() + ": cannot read the file");
  return ss.str();
}

}  // namespace

bool onnx_import_built() { return true; }

bool is_onnx_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

Model onnx_model_from_bytes(std::string_view bytes, const std::string& origin, const std::string& name,
                            const LoadOptions& options) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw InputError(origin + ": an ONNX file over 2 GiB; store the weights as external data");
  ::onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw InputError(origin + ": not an ONNX model (the bytes do not parse as an onnx.ModelProto protobuf)");
  return detail::onnx::build_model(read_graph(m, origin), origin, name, options);
}

Model load_onnx_model(const std::filesystem::path& path, const LoadOptions& options) {
  return onnx_model_from_bytes(read_file_bytes(path), path.string(), path.stem().string(), options);
}

}  // namespace parasim::models
