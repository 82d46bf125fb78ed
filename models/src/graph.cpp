// Names, shapes, signatures and whole-model totals of the dataflow graph.
#include "parasim/models/graph.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <sstream>
#include <unordered_set>
#include <utility>

#include "checked_math.hpp"
#include "parasim/common/error.hpp"

namespace parasim::models {

// ------------------------------------------------------------------ op kinds

namespace {

// One table so that to_string and parse_op_kind can never disagree.
constexpr std::array<std::pair<OpKind, const char*>, 31> kKindNames{{
    {OpKind::Input, "input"},
    {OpKind::Conv2d, "conv2d"},
    {OpKind::Linear, "linear"},
    {OpKind::Matmul, "matmul"},
    {OpKind::BatchedMatmul, "batched_matmul"},
    {OpKind::Lstm, "lstm"},
    {OpKind::Embedding, "embedding"},
    {OpKind::MaxPool2d, "max_pool2d"},
    {OpKind::AvgPool2d, "avg_pool2d"},
    {OpKind::AdaptiveAvgPool2d, "adaptive_avg_pool2d"},
    {OpKind::BatchNorm, "batch_norm"},
    {OpKind::LayerNorm, "layer_norm"},
    {OpKind::Relu, "relu"},
    {OpKind::Gelu, "gelu"},
    {OpKind::Tanh, "tanh"},
    {OpKind::Sigmoid, "sigmoid"},
    {OpKind::Add, "add"},
    {OpKind::Mul, "mul"},
    {OpKind::Concat, "concat"},
    {OpKind::Dropout, "dropout"},
    {OpKind::Softmax, "softmax"},
    {OpKind::CrossEntropy, "cross_entropy"},
    {OpKind::SampledSoftmax, "sampled_softmax"},
    {OpKind::Reshape, "reshape"},
    {OpKind::Attention, "attention"},
    {OpKind::RmsNorm, "rms_norm"},
    {OpKind::Swiglu, "swiglu"},
    {OpKind::SquaredRelu, "squared_relu"},
    {OpKind::Rotary, "rotary"},
    {OpKind::Experts, "experts"},
    {OpKind::Gather, "gather"},
}};

}  // namespace

std::string to_string(OpKind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return "unknown";
}

std::optional<OpKind> parse_op_kind(std::string_view s) {
  for (const auto& [kind, name] : kKindNames)
    if (s == name) return kind;
  return std::nullopt;
}

std::vector<OpKind> all_op_kinds() {
  std::vector<OpKind> out;
  for (const auto& entry : kKindNames) out.push_back(entry.first);
  return out;
}

// ------------------------------------------------------------------ shapes

namespace {

void append_shape(std::string& out, const Shape& s) {
  out += '[';
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    char digits[24];  // an int64 in decimal, as std::to_string writes it, without a string per dimension
    out.append(digits, std::to_chars(digits, digits + sizeof digits, s[i]).ptr);
  }
  out += ']';
}

}  // namespace

std::string to_string(const Shape& s) {
  std::string out;
  append_shape(out, s);
  return out;
}

std::int64_t num_elements(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    if (d < 0) throw InputError("shape " + to_string(s) + " has a negative dimension");
    if (__builtin_mul_overflow(n, d, &n))
      throw InputError("shape " + to_string(s) + " has more elements than fit in a 64-bit integer");
  }
  return n;
}

// ------------------------------------------------------------------ signature

namespace {

/// The attrs that change an op's running time (output channels etc. are in the output shape).
/// Built by appending: a stream per op cost about 2,500 instructions, and planning Turing-NLG
/// signs 200,000 ops. Doubles still go through a stream (its default format is the key's).
class AttrText {
 public:
  AttrText& operator<<(const char* text) {
    s_ += text;
    return *this;
  }
  AttrText& operator<<(std::int64_t v) {
    s_ += std::to_string(v);
    return *this;
  }
  AttrText& operator<<(bool v) {
    s_ += v ? '1' : '0';
    return *this;
  }
  AttrText& operator<<(double v) {
    std::ostringstream o;
    o << v;
    s_ += o.str();
    return *this;
  }
  std::string str() && { return std::move(s_); }

 private:
  std::string s_;
};

std::string cost_relevant_attrs(const Op& op, bool mark_causal = true) {
  const OpAttrs& a = op.attrs;
  AttrText s;
  auto window = [&] {
    s << "k=" << a.kernel_h << "x" << a.kernel_w << ",s=" << a.stride_h << "x" << a.stride_w << ",p=" << a.pad_h << "x"
      << a.pad_w;
  };
  switch (op.kind) {
    case OpKind::Conv2d:
      window();
      s << ",d=" << a.dilation_h << "x" << a.dilation_w << ",g=" << a.groups << ",bias=" << a.bias;
      break;
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
      window();
      s << ",ceil=" << a.ceil_mode;
      break;
    case OpKind::Linear: s << "bias=" << a.bias; break;
    case OpKind::Lstm: s << "hidden=" << a.hidden << ",proj=" << a.proj << ",bias=" << a.bias; break;
    case OpKind::Embedding: s << "vocab=" << a.vocab; break;
    case OpKind::Concat: s << "axis=" << a.axis; break;
    case OpKind::SampledSoftmax: s << "vocab=" << a.vocab << ",sampled=" << a.num_sampled; break;
    case OpKind::Attention:
      s << "heads=" << a.heads << ",additive=" << a.additive;
      if (a.kv_heads != 0) s << ",kv_heads=" << a.kv_heads;  // absent for MHA: old profiles' keys stay valid
      if (a.causal && mark_causal) s << ",causal=1";         // fused kernels skip the masked half
      break;
    case OpKind::Experts:
      s << "experts=" << a.experts << ",top_k=" << a.top_k << ",gated=" << a.gated << ",cf=" << a.capacity_factor;
      if (a.expert_shards != 1) s << ",ep=" << a.expert_shards;  // absent without EP: old keys stay valid
      if (a.expert_load != 1.0) s << ",load=" << a.expert_load;
      if (a.expert_tp != 1) s << ",etp=" << a.expert_tp;
      break;
    case OpKind::Rotary: s << "heads=" << a.heads << ",kv_heads=" << a.kv_heads; break;
    case OpKind::LayerNorm:
      if (!a.norm_bias) s << "bias=0";
      break;
    default: break;
  }
  return std::move(s).str();
}

std::string signature_of(const Op& op, bool mark_causal) {
  std::string s;
  s.reserve(160);  // most signatures fit: one allocation
  s += to_string(op.kind);
  s += '|';
  s += to_string(op.dtype);
  s += '|';
  for (std::size_t i = 0; i < op.input_shapes.size(); ++i) {
    if (i) s += ";";
    append_shape(s, op.input_shapes[i]);
  }
  s += '|';
  append_shape(s, op.output_shape);
  s += '|';
  s += cost_relevant_attrs(op, mark_causal);
  // An op fed by the model input skips its data gradient: its backward costs less.
  if (op.macs_fwd > 0 && op.macs_bwd_data == 0) s += "|no_dgrad";
  return s;
}

}  // namespace

std::string Op::signature() const { return signature_of(*this, true); }

std::string Op::signature_unmasked() const { return signature_of(*this, false); }

// ------------------------------------------------------------------ model accessors

Model::Model(const Model& o)
    : name_(o.name_),
      batch_(o.batch_),
      dtype_(o.dtype_),
      dataset_(o.dataset_),
      graph_(o.graph_ ? std::make_unique<Graph>(*o.graph_) : nullptr) {}

Model& Model::operator=(const Model& o) {
  if (this != &o) *this = Model(o);
  return *this;
}

const Graph& Model::empty_graph() {
  static const Graph empty;
  return empty;
}

std::optional<OpId> Model::find_op(const std::string& name) const {
  for (OpId v = 0; v < num_ops(); ++v)
    if (graph()[v].name == name) return v;
  return std::nullopt;
}

std::vector<OpId> Model::inputs_of(OpId v) const {
  // Ordered by input index, equal indices in edge order (a stable insertion sort: ops have a
  // handful of inputs, and planners ask for every op of every model variant).
  std::vector<std::pair<std::int32_t, OpId>> indexed;
  indexed.reserve(boost::in_degree(v, graph()));
  for (auto [e, end] = boost::in_edges(v, graph()); e != end; ++e) {
    const std::pair<std::int32_t, OpId> x{graph()[*e].input_index, boost::source(*e, graph())};
    auto at = indexed.end();
    while (at != indexed.begin() && (at - 1)->first > x.first) --at;
    indexed.insert(at, x);
  }
  std::vector<OpId> out;
  out.reserve(indexed.size());
  for (const auto& p : indexed) out.push_back(p.second);
  return out;
}

std::vector<OpId> Model::consumers_of(OpId v) const {
  // Distinct targets in edge order; few ops have more than a handful of consumers, so a linear
  // search of the list so far beats a hash set until the list is long.
  constexpr std::size_t kLinear = 16;
  std::vector<OpId> out;
  std::unordered_set<OpId> seen;
  for (auto [e, end] = boost::out_edges(v, graph()); e != end; ++e) {
    const OpId t = boost::target(*e, graph());
    if (out.size() < kLinear) {
      if (std::find(out.begin(), out.end(), t) != out.end()) continue;
      out.push_back(t);
      if (out.size() == kLinear) seen.insert(out.begin(), out.end());
    } else if (seen.insert(t).second) {
      out.push_back(t);
    }
  }
  return out;
}

namespace {

template <class Field>
std::int64_t sum_over_ops(const Model& m, Field field, const char* what) {
  std::int64_t total = 0;
  for (OpId v = 0; v < m.num_ops(); ++v) {
    if (__builtin_add_overflow(total, field(m.op(v)), &total))
      throw InputError("model " + m.name() + ": total " + what + " overflows a 64-bit integer");
  }
  return total;
}

}  // namespace

std::int64_t Model::total_params() const {
  return sum_over_ops(*this, [](const Op& op) { return op.params; }, "parameters");
}

std::int64_t Model::total_macs_fwd() const {
  return sum_over_ops(*this, [](const Op& op) { return op.macs_fwd; }, "forward MACs");
}

std::int64_t Model::macs_per_sample() const { return batch_ > 0 ? total_macs_fwd() / batch_ : 0; }

std::int64_t Model::total_activation_bytes() const {
  return sum_over_ops(*this, [](const Op& op) { return op.activation_bytes; }, "activation bytes");
}

bool has_dot_product_attention(const Model& m) {
  for (OpId v = 0; v < m.num_ops(); ++v)
    if (m.op(v).kind == OpKind::Attention && !m.op(v).attrs.additive) return true;
  return false;
}

bool has_experts(const Model& m) {
  for (OpId v = 0; v < m.num_ops(); ++v)
    if (m.op(v).kind == OpKind::Experts) return true;
  return false;
}

std::int64_t Model::num_weighted_layers() const {
  std::int64_t n = 0;
  for (OpId v = 0; v < num_ops(); ++v) {
    const Op& op = graph()[v];
    if (op.params > 0 || !op.attrs.shares_weights_with.empty()) ++n;
  }
  return n;
}

}  // namespace parasim::models
