// ONNX nodes -> ModelBuilder ops. docs/models.md ("ONNX graphs") has the table of what maps to what.
//
// Three passes: pick the forward nodes (a training export's gradient and optimizer nodes are
// dropped: parasim derives the backward itself), find the patterns that fold into one op (a
// MatMul and its bias Add, erf-GELU, LogSoftmax + NegativeLogLikelihoodLoss), then map node by
// node. Shape arithmetic the exporters emit (Shape -> Gather -> Concat -> Reshape) is evaluated
// on constants; every activation op goes through the builder, whose shape inference checks it.
#include "onnx_graph.hpp"

#include <algorithm>
#include <set>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::models::detail::onnx {

namespace {

using Type = Attribute::Type;

/// What a tensor name stands for while mapping.
struct Value {
  enum class Kind { Activation, Constant, Unavailable };
  Kind kind = Kind::Unavailable;
  OpId op = 0;        // Activation: the op producing it
  Constant constant;  // Constant: initializers, Constant nodes, folded shape arithmetic
  bool initializer = false;
  std::string why;  // Unavailable: which output of which node it is
};

bool is_training_op(const Node& n) {
  static const std::set<std::string> kOptimizers = {"InPlaceAccumulator",
                                                    "InPlaceAccumulatorV2",
                                                    "ZeroGradient",
                                                    "AdamOptimizer",
                                                    "AdamWOptimizer",
                                                    "SGDOptimizer",
                                                    "LambOptimizer",
                                                    "Gradient",
                                                    "Momentum",
                                                    "Adam",
                                                    "Adagrad"};
  return n.domain == "ai.onnx.preview.training" || n.op_type.ends_with("Grad") || kOptimizers.count(n.op_type) > 0;
}

bool is_loss_op(const Node& n) {
  return n.domain.empty() && (n.op_type == "SoftmaxCrossEntropyLoss" || n.op_type == "NegativeLogLikelihoodLoss");
}

/// The block of a torch.onnx node name "/layer1/layer1.0/conv1/Conv": its module path without the
/// op, dropping a container whose child repeats its name ("layer1" before "layer1.0") -> "layer1.0/conv1".
std::string block_of(const std::string& node_name) {
  if (node_name.empty() || node_name.front() != '/') return {};
  std::vector<std::string> parts;
  std::size_t start = 1;
  while (true) {
    const std::size_t slash = node_name.find('/', start);
    if (slash == std::string::npos) break;  // the last part is the op itself
    if (slash > start) parts.push_back(node_name.substr(start, slash - start));
    start = slash + 1;
  }
  std::string block;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i + 1 < parts.size() && parts[i + 1].starts_with(parts[i] + ".")) continue;
    block += (block.empty() ? "" : "/") + parts[i];
  }
  return block;
}

/// The leading dimension the file fixes for its first graph input that fixes one (0: symbolic).
std::int64_t fixed_batch(const Graph& g) {
  for (const GraphInput& in : g.inputs)
    if (in.has_shape && !in.dims.empty() && in.dims[0].value && *in.dims[0].value > 0) return *in.dims[0].value;
  return 0;
}

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

class Importer {
 public:
  Importer(const Graph& g, std::string file, const std::string& name, const LoadOptions& o)
      : g_(g),
        file_(std::move(file)),
        options_(o),
        file_batch_(fixed_batch(g)),
        b_(name, o.batch.value_or(file_batch_ > 0 ? file_batch_ : 1), o.dtype.value_or(DType::F32)) {}

  Model run() {
    if (g_.nodes.empty()) throw InputError(file_ + ": expected a graph with at least one node, found none");
    for (const auto& [name, c] : g_.initializers) {
      Value v;
      v.kind = Value::Kind::Constant;
      v.constant = c;
      v.initializer = true;
      values_[name] = std::move(v);
    }
    read_inputs();
    select_forward();
    find_folds();
    bool has_loss = false;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!forward_[i] || folded_.count(i)) continue;
      node_ = &g_.nodes[i];
      index_ = i;
      has_loss = has_loss || is_loss_op(*node_);
      map_node_in_context();
    }
    node_ = nullptr;
    if (options_.seq_len && !seq_len_used_)
      throw InputError(file_ +
                       ": a sequence length applies to ONNX graphs with a symbolic sequence dimension; "
                       "this one fixes its shapes");
    if (!has_loss) add_loss();
    if (b_.model().num_ops() == 0) throw InputError(file_ + ": no op of the graph maps onto parasim ops");
    return b_.finish();
  }

 private:
  const Graph& g_;
  std::string file_;
  LoadOptions options_;
  std::int64_t file_batch_ = 0;  // the leading dim the file fixes (0: symbolic)
  ModelBuilder b_;
  std::map<std::string, Value> values_;
  std::map<std::string, const GraphInput*> inputs_;            // graph inputs, created as ops on first use
  std::map<std::string, std::size_t> producer_;                // tensor name -> node index
  std::map<std::string, std::vector<std::size_t>> consumers_;  // among forward nodes
  std::vector<bool> forward_;
  std::set<std::size_t> folded_;                     // nodes another node's op covers
  std::map<std::size_t, std::string> linear_bias_;   // MatMul node -> its bias initializer
  std::map<std::size_t, std::string> fused_output_;  // node -> the later tensor its op also stands for
  std::map<std::size_t, std::string> gelu_input_;    // erf-GELU: last Mul node -> x
  /// MatMul-Softmax-MatMul between head-splitting reshapes, recognised as one attention op.
  struct AttentionMatch {
    std::size_t softmax = 0;
    std::string q, k, v;                               // [B, T, D] activations before the head split
    std::string q_shape, k_shape, v_shape, out_shape;  // the Reshape targets
    std::optional<std::size_t> dropout;                // on the probabilities
  };
  std::map<std::size_t, AttentionMatch> attention_at_;  // the output Reshape node -> its match
  std::set<std::string> used_names_;
  bool seq_len_used_ = false;
  const Node* node_ = nullptr;
  std::size_t index_ = 0;

  // ---------------------------------------------------------------- errors

  std::string node_label() const {
    return "node " + (node_->name.empty() ? "#" + std::to_string(index_) : "\"" + node_->name + "\"") + " (" +
           node_->op_type + ")";
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(file_ + ": " + node_label() + ": " + what); }
  [[noreturn]] void unsupported(const std::string& what) const {
    fail(what + " is not supported (docs/models.md lists the ONNX ops parasim maps)");
  }

  void map_node_in_context() {
    try {
      // Graph inputs this node reads become input ops first, outside the node's block (a loss's
      // labels never become ops: parasim's loss ops take the logits alone).
      if (!is_loss_op(*node_))
        for (const std::string& in : node_->inputs)
          if (inputs_.count(in)) (void)value(in);
      const std::string block = block_of(node_->name);
      if (!block.empty()) b_.push_block(block);
      map_node();
      if (!block.empty()) b_.pop_block();
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (what.starts_with(file_ + ": ")) throw;
      fail(what);  // a builder message: name the file and the node around it
    }
    for (std::size_t k = 0; k < node_->outputs.size(); ++k)
      if (!node_->outputs[k].empty() && !values_.count(node_->outputs[k]))
        unavailable(k, "output " + std::to_string(k));
  }

  // ---------------------------------------------------------------- inputs and passes

  void read_inputs() {
    for (const GraphInput& in : g_.inputs) inputs_[in.name] = &in;
  }

  Shape input_shape(const GraphInput& in) {
    const std::string what = file_ + ": graph input \"" + in.name + "\"";
    if (!in.has_shape || in.dims.empty()) throw InputError(what + ": expected a tensor with a shape [batch, ...]");
    Shape s;
    for (std::size_t i = 0; i < in.dims.size(); ++i) {
      const Dim& d = in.dims[i];
      const bool fixed = d.value && *d.value > 0;
      if (d.value && *d.value <= 0 && d.param.empty() && i > 0)
        throw InputError(what + ": expected dimension " + std::to_string(i) + " > 0, found " +
                         std::to_string(*d.value));
      if (i == 0) {
        s.push_back(!fixed || *d.value == file_batch_ ? b_.model().batch() : *d.value);
      } else if (fixed) {
        s.push_back(*d.value);
      } else if (options_.seq_len) {
        s.push_back(*options_.seq_len);
        seq_len_used_ = true;
      } else {
        throw InputError(what + ": dimension " + std::to_string(i) + " is symbolic" +
                         (d.param.empty() ? "" : " (\"" + d.param + "\")") +
                         "; give the sequence length (--seq-len) or export with a fixed shape");
      }
    }
    return s;
  }

  void select_forward() {
    const std::size_t n = g_.nodes.size();
    forward_.assign(n, true);
    for (std::size_t i = 0; i < n; ++i)
      for (const std::string& out : g_.nodes[i].outputs)
        if (!out.empty()) producer_.emplace(out, i);
    std::vector<std::size_t> losses;
    bool training_ops = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (is_loss_op(g_.nodes[i])) losses.push_back(i);
      training_ops = training_ops || is_training_op(g_.nodes[i]);
    }
    if (!losses.empty()) {
      // A training graph: the forward part is what the losses depend on.
      forward_.assign(n, false);
      std::vector<std::size_t> stack = losses;
      while (!stack.empty()) {
        const std::size_t i = stack.back();
        stack.pop_back();
        if (forward_[i]) continue;
        forward_[i] = true;
        for (const std::string& in : g_.nodes[i].inputs) {
          auto it = producer_.find(in);
          if (it != producer_.end() && !forward_[it->second]) stack.push_back(it->second);
        }
      }
    } else if (training_ops) {
      throw InputError(file_ +
                       ": a training graph (gradient or optimizer nodes) without a loss parasim recognises "
                       "(SoftmaxCrossEntropyLoss or NegativeLogLikelihoodLoss)");
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!forward_[i]) continue;
      for (const std::string& in : g_.nodes[i].inputs)
        if (!in.empty()) consumers_[in].push_back(i);
    }
  }

  const Node* sole_consumer(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return nullptr;
    if (std::find(g_.outputs.begin(), g_.outputs.end(), tensor) != g_.outputs.end()) return nullptr;
    return &g_.nodes[it->second.front()];
  }
  std::size_t index_of(const Node* n) const { return static_cast<std::size_t>(n - g_.nodes.data()); }

  const Constant* initializer(const std::string& name) const {
    auto it = g_.initializers.find(name);
    return it == g_.initializers.end() ? nullptr : &it->second;
  }
  /// A constant with one element (an initializer or a Constant node's output).
  bool is_scalar_constant(const std::string& name) const {
    if (const Constant* c = initializer(name)) return num_elements(c->dims) == 1;
    auto it = producer_.find(name);
    if (it == producer_.end() || g_.nodes[it->second].op_type != "Constant") return false;
    const auto& attrs = g_.nodes[it->second].attrs;
    if (attrs.count("value_float") || attrs.count("value_int")) return true;
    auto v = attrs.find("value");
    return v != attrs.end() && v->second.type == Type::Tensor && num_elements(v->second.t.dims) == 1;
  }
  /// The operand of a two-input node that is not `name`, or "" if the node does not take `name`.
  static std::string other_input(const Node& n, const std::string& name) {
    if (n.inputs.size() != 2) return {};
    if (n.inputs[0] == name) return n.inputs[1];
    if (n.inputs[1] == name) return n.inputs[0];
    return {};
  }

  void find_folds() {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!forward_[i]) continue;
      const Node& n = g_.nodes[i];
      if (!n.domain.empty() || n.outputs.empty()) continue;
      // MatMul by a weight, then Add of a [N] initializer: nn.Linear on a rank > 2 input.
      if (n.op_type == "MatMul" && n.inputs.size() == 2) {
        const Constant* w = initializer(n.inputs[1]);
        const Node* add = sole_consumer(n.outputs[0]);
        if (w && w->dims.size() == 2 && add && add->op_type == "Add" && add->domain.empty()) {
          const std::string bias = other_input(*add, n.outputs[0]);
          const Constant* c = initializer(bias);
          if (c && c->dims.size() == 1 && c->dims[0] == w->dims[1] && !add->outputs.empty()) {
            linear_bias_[i] = bias;
            fused_output_[i] = add->outputs[0];
            folded_.insert(index_of(add));
          }
        }
      }
      // LogSoftmax feeding NegativeLogLikelihoodLoss only: the cross-entropy loss.
      if (n.op_type == "LogSoftmax" && n.inputs.size() == 1) {
        const Node* nll = sole_consumer(n.outputs[0]);
        if (nll && nll->op_type == "NegativeLogLikelihoodLoss" && nll->domain.empty()) {
          folded_.insert(i);
          alias_later_[n.outputs[0]] = n.inputs[0];
        }
      }
      // torch's erf GELU: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5.
      if (n.op_type == "Erf" && n.inputs.size() == 1) match_erf_gelu(i);
      if (n.op_type == "Softmax" && n.inputs.size() == 1) match_attention(i);
    }
  }
  std::map<std::string, std::string> alias_later_;  // folded node's output -> the tensor it passes on

  void match_erf_gelu(std::size_t erf) {
    const Node& e = g_.nodes[erf];
    auto p = producer_.find(e.inputs[0]);
    if (p == producer_.end()) return;
    const Node& div = g_.nodes[p->second];
    if (div.op_type != "Div" || div.inputs.size() != 2 || !is_scalar_constant(div.inputs[1]) || e.outputs.empty())
      return;
    const std::string& x = div.inputs[0];
    const Node* plus = sole_consumer(e.outputs[0]);
    if (!plus || plus->op_type != "Add" || !is_scalar_constant(other_input(*plus, e.outputs[0])) ||
        plus->outputs.empty())
      return;
    const Node* times_x = sole_consumer(plus->outputs[0]);
    if (!times_x || times_x->op_type != "Mul" || other_input(*times_x, plus->outputs[0]) != x ||
        times_x->outputs.empty())
      return;
    const Node* half = sole_consumer(times_x->outputs[0]);
    if (!half || half->op_type != "Mul" || !is_scalar_constant(other_input(*half, times_x->outputs[0]))) return;
    if (!sole_consumer(div.outputs.empty() ? std::string() : div.outputs[0])) return;
    for (std::size_t k : {p->second, erf, index_of(plus), index_of(times_x)}) folded_.insert(k);
    gelu_input_[index_of(half)] = x;
  }

  /// The node producing `tensor` if it is a forward node of `op_type` whose output only `tensor`'s
  /// consumer reads; nullptr otherwise.
  const Node* private_producer(const std::string& tensor, const char* op_type) const {
    auto p = producer_.find(tensor);
    if (p == producer_.end() || !forward_[p->second]) return nullptr;
    const Node& n = g_.nodes[p->second];
    if (n.op_type != op_type || !n.domain.empty() || !sole_consumer(tensor)) return nullptr;
    return &n;
  }
  bool has_perm(const Node& n, std::vector<std::int64_t> perm) const {
    auto it = n.attrs.find("perm");
    return it != n.attrs.end() && it->second.type == Type::Ints && it->second.ints == perm;
  }
  /// Reshape [B, T, D] -> [B, T, H, hd] then Transpose `perm` (a head split); the Reshape and
  /// Transpose nodes, or none.
  bool head_split(const std::string& tensor, const std::vector<std::int64_t>& perm, std::string& x, std::string& shape,
                  std::vector<std::size_t>& nodes) const {
    const Node* t = private_producer(tensor, "Transpose");
    if (!t || !has_perm(*t, perm) || t->inputs.size() != 1) return false;
    const Node* r = private_producer(t->inputs[0], "Reshape");
    if (!r || r->inputs.size() != 2) return false;
    x = r->inputs[0];
    shape = r->inputs[1];
    nodes.push_back(index_of(t));
    nodes.push_back(index_of(r));
    return true;
  }

  /// torch's eager attention: heads split by Reshape + Transpose, MatMul(Q, K^T), an optional scalar
  /// scale and constant mask, Softmax, optional Dropout, MatMul(P, V), heads merged by Transpose +
  /// Reshape. Anything else stays as batched matmuls and a softmax, costed the same way.
  void match_attention(std::size_t softmax) {
    const Node& s = g_.nodes[softmax];
    std::vector<std::size_t> nodes{softmax};
    std::string scores = s.inputs[0];
    if (const Node* add = private_producer(scores, "Add")) {
      const std::string mask = add->inputs.size() == 2 ? add->inputs[1] : std::string();
      if (!initializer(mask) && !is_scalar_constant(mask)) return;
      nodes.push_back(index_of(add));
      scores = add->inputs[0];
    }
    for (const char* op : {"Div", "Mul"}) {
      if (const Node* scale = private_producer(scores, op)) {
        if (scale->inputs.size() != 2 || !is_scalar_constant(scale->inputs[1])) return;
        nodes.push_back(index_of(scale));
        scores = scale->inputs[0];
        break;
      }
    }
    const Node* m1 = private_producer(scores, "MatMul");
    if (!m1 || m1->inputs.size() != 2 || s.outputs.empty()) return;
    nodes.push_back(index_of(m1));
    AttentionMatch a;
    a.softmax = softmax;
    std::string probs = s.outputs[0];
    const Node* next = sole_consumer(probs);
    if (next && next->op_type == "Dropout" && next->domain.empty() && !next->outputs.empty()) {
      a.dropout = index_of(next);
      nodes.push_back(*a.dropout);
      probs = next->outputs[0];
      next = sole_consumer(probs);
    }
    if (!next || next->op_type != "MatMul" || next->inputs.size() != 2 || next->inputs[0] != probs ||
        next->outputs.empty())
      return;
    const Node* m2 = next;
    nodes.push_back(index_of(m2));
    if (!head_split(m1->inputs[0], {0, 2, 1, 3}, a.q, a.q_shape, nodes)) return;
    if (!head_split(m1->inputs[1], {0, 2, 3, 1}, a.k, a.k_shape, nodes)) {
      // K^T written as a head split followed by a transpose of the last two axes.
      const Node* kt = private_producer(m1->inputs[1], "Transpose");
      if (!kt || !has_perm(*kt, {0, 1, 3, 2}) || kt->inputs.size() != 1) return;
      if (!head_split(kt->inputs[0], {0, 2, 1, 3}, a.k, a.k_shape, nodes)) return;
      nodes.push_back(index_of(kt));
    }
    if (!head_split(m2->inputs[1], {0, 2, 1, 3}, a.v, a.v_shape, nodes)) return;
    const Node* merge = sole_consumer(m2->outputs[0]);
    if (!merge || merge->op_type != "Transpose" || !has_perm(*merge, {0, 2, 1, 3}) || merge->outputs.empty()) return;
    const Node* out = sole_consumer(merge->outputs[0]);
    if (!out || out->op_type != "Reshape" || out->inputs.size() != 2 || out->inputs[0] != merge->outputs[0]) return;
    nodes.push_back(index_of(merge));
    a.out_shape = out->inputs[1];
    for (std::size_t k : nodes) folded_.insert(k);
    attention_at_[index_of(out)] = std::move(a);
  }

  // ---------------------------------------------------------------- values

  const Value& value(const std::string& name) {
    auto later = alias_later_.find(name);
    if (later != alias_later_.end()) return value(later->second);
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    auto in = inputs_.find(name);
    if (in != inputs_.end()) {
      // Graph inputs become input ops where first used, so unused ones (labels) cost nothing.
      Op op;
      op.kind = OpKind::Input;
      op.name = unique_name(name);
      op.output_shape = input_shape(*in->second);
      Value v;
      v.kind = Value::Kind::Activation;
      v.op = b_.add_op(std::move(op), {});
      return values_[name] = v;
    }
    auto prod = producer_.find(name);
    if (prod != producer_.end() && prod->second >= index_)
      fail("input \"" + name + "\" is produced by this or a later node (ONNX requires nodes in topological order)");
    if (prod != producer_.end() && !forward_[prod->second])
      fail("input \"" + name + "\" comes from a gradient or optimizer node outside the forward graph");
    fail("input \"" + name + "\" is missing: it is neither a graph input, an initializer nor a node's output");
  }

  bool present(std::size_t k) const { return k < node_->inputs.size() && !node_->inputs[k].empty(); }

  OpId activation(std::size_t k, const char* role) {
    if (!present(k)) fail(std::string("expected input ") + std::to_string(k) + " (" + role + ")");
    const Value& v = value(node_->inputs[k]);
    if (v.kind == Value::Kind::Unavailable)
      fail("input \"" + node_->inputs[k] + "\" is " + v.why + ", which parasim does not model");
    if (v.kind == Value::Kind::Constant)
      unsupported(std::string(role) + " \"" + node_->inputs[k] + "\" being a constant (expected an activation)");
    return v.op;
  }

  const Constant& constant(std::size_t k, const char* role) {
    if (!present(k)) fail(std::string("expected input ") + std::to_string(k) + " (" + role + ")");
    const Value& v = value(node_->inputs[k]);
    if (v.kind != Value::Kind::Constant)
      unsupported(std::string(role) + " \"" + node_->inputs[k] + "\" computed in the graph (expected an initializer)");
    return v.constant;
  }

  const std::vector<std::int64_t>& constant_ints(std::size_t k, const char* role) {
    const Constant& c = constant(k, role);
    if (!c.ints) fail(std::string(role) + " \"" + node_->inputs[k] + "\": expected inline integer values");
    return *c.ints;
  }

  bool is_constant(std::size_t k) { return present(k) && value(node_->inputs[k]).kind == Value::Kind::Constant; }

  void set_output(std::size_t k, OpId op) {
    if (k >= node_->outputs.size() || node_->outputs[k].empty()) return;
    Value v;
    v.kind = Value::Kind::Activation;
    v.op = op;
    values_[node_->outputs[k]] = v;
  }
  void set_constant(std::size_t k, Constant c) {
    if (k >= node_->outputs.size() || node_->outputs[k].empty()) return;
    Value v;
    v.kind = Value::Kind::Constant;
    v.constant = std::move(c);
    values_[node_->outputs[k]] = std::move(v);
  }
  void unavailable(std::size_t k, const std::string& what) {
    if (k >= node_->outputs.size() || node_->outputs[k].empty()) return;
    Value v;
    v.why = "the " + what + " of " + node_label();
    values_[node_->outputs[k]] = std::move(v);
  }
  void alias(std::size_t out, std::size_t in) {
    if (!present(in)) fail("expected input " + std::to_string(in));
    if (out < node_->outputs.size() && !node_->outputs[out].empty())
      values_[node_->outputs[out]] = value(node_->inputs[in]);
  }

  // ---------------------------------------------------------------- attributes

  const Attribute* attr(const std::string& key, Type type) const {
    auto it = node_->attrs.find(key);
    if (it == node_->attrs.end()) return nullptr;
    if (it->second.type != type) fail("attribute " + key + " has the wrong type");
    return &it->second;
  }
  std::int64_t attr_int(const std::string& key, std::int64_t fallback) const {
    const Attribute* a = attr(key, Type::Int);
    return a ? a->i : fallback;
  }
  double attr_float(const std::string& key, double fallback) const {
    const Attribute* a = attr(key, Type::Float);
    return a ? a->f : fallback;
  }
  std::vector<std::int64_t> attr_ints(const std::string& key, std::vector<std::int64_t> fallback) const {
    const Attribute* a = attr(key, Type::Ints);
    return a ? a->ints : fallback;
  }
  std::string attr_string(const std::string& key, std::string fallback) const {
    const Attribute* a = attr(key, Type::String);
    return a ? a->s : fallback;
  }

  std::int64_t axis_in(std::int64_t axis, std::size_t rank) const {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r)
      fail("expected axis in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "], found " +
           std::to_string(axis));
    return axis < 0 ? axis + r : axis;
  }

  // ---------------------------------------------------------------- naming

  std::string unique_name(const std::string& wanted) {
    std::string name = wanted;
    for (int k = 1; used_names_.count(name); ++k) name = wanted + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }
  std::string op_name(const std::string& suffix = {}) {
    const std::string base = node_->name.empty() ? node_->op_type + "_" + std::to_string(index_) : node_->name;
    return unique_name(base + suffix);
  }

  OpId view(OpId x, Shape shape, const std::string& suffix = {}) {
    return b_.reshape(op_name(suffix), x, std::move(shape));
  }

  // ---------------------------------------------------------------- the op table

  void map_node() {
    const std::string& t = node_->op_type;
    const bool ms = node_->domain == "com.microsoft";
    if (!node_->domain.empty() && !ms) unsupported("op domain \"" + node_->domain + "\"");
    if (node_->outputs.empty()) fail("expected at least one output");
    if (attention_at_.count(index_)) return map_attention(attention_at_[index_]);
    if (gelu_input_.count(index_)) {
      Value x = value(gelu_input_[index_]);
      if (x.kind != Value::Kind::Activation) fail("the GELU input is not an activation");
      return set_output(0, b_.gelu(op_name(), x.op));
    }
    if (ms) return map_microsoft(t);
    if (t == "Conv") return map_conv();
    if (t == "Gemm") return map_gemm();
    if (t == "MatMul") return map_matmul();
    if (t == "BatchNormalization") return map_batch_norm();
    if (t == "LayerNormalization") return map_layer_norm(false);
    if (t == "MaxPool" || t == "AveragePool") return map_pool(t == "MaxPool");
    if (t == "GlobalAveragePool") return set_output(0, b_.adaptive_avg_pool2d(op_name(), rank4(0), 1));
    if (t == "GlobalMaxPool") {
      const OpId x = rank4(0);
      const Shape& s = b_.shape(x);
      return set_output(0, b_.max_pool2d(op_name(), x, Hw(s[2], s[3]), Hw(s[2], s[3])));
    }
    // ReLU6 (Clip) and LeakyReLU cost what ReLU does: one elementwise pass, the output kept.
    if (t == "Relu" || t == "LeakyRelu" || t == "Clip") return set_output(0, b_.relu(op_name(), activation(0, "X")));
    if (t == "Sigmoid") return set_output(0, b_.sigmoid(op_name(), activation(0, "X")));
    if (t == "Tanh") return set_output(0, b_.tanh(op_name(), activation(0, "X")));
    if (t == "Gelu") return set_output(0, b_.gelu(op_name(), activation(0, "X")));
    if (t == "Softmax" || t == "LogSoftmax") return map_softmax();
    if (t == "Dropout") return map_dropout();
    if (t == "Identity" || t == "Cast") return is_constant(0) ? set_constant(0, constant(0, "input")) : alias(0, 0);
    if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div" || t == "Sum") return map_elementwise(t);
    if (t == "Concat") return map_concat();
    if (t == "Reshape") return map_reshape();
    if (t == "Flatten") return map_flatten();
    if (t == "Transpose") return map_transpose();
    if (t == "Squeeze" || t == "Unsqueeze") return map_squeeze(t == "Unsqueeze");
    if (t == "Gather") return map_gather();
    if (t == "Shape") return map_shape();
    if (t == "Constant") return map_constant();
    if (t == "LSTM") return map_lstm();
    if (t == "SoftmaxCrossEntropyLoss" || t == "NegativeLogLikelihoodLoss") {
      unavailable(1, "log-probability output");
      return set_output(0, b_.cross_entropy(op_name(), activation(0, "scores")));
    }
    unsupported("op " + t);
  }

  void map_microsoft(const std::string& t) {
    if (t == "Gelu" || t == "FastGelu" || t == "BiasGelu") {
      if (present(1)) unsupported(t + " with a bias input");
      return set_output(0, b_.gelu(op_name(), activation(0, "X")));
    }
    if (t == "SimplifiedLayerNormalization") return map_layer_norm(true);
    if (t == "Attention") {
      // onnxruntime's fused self-attention: packed QKV projection [D, 3D] + bias, then the core.
      const OpId x = activation(0, "input");
      const Constant& w = constant(1, "weights");
      const Shape& xs = b_.shape(x);
      if (w.dims.size() != 2 || w.dims[0] != xs.back() || w.dims[1] % 3 != 0)
        fail("expected weights [" + std::to_string(xs.back()) + ", 3 D], found " + to_string(w.dims));
      if (present(3)) unsupported("Attention with a mask input");
      const std::int64_t heads = attr_int("num_heads", 0);
      const OpId qkv = b_.linear(op_name(".qkv"), x, w.dims[0], w.dims[1], present(2));
      // unidirectional = 1: causal (each token attends to those before it).
      return set_output(0, b_.attention(op_name(), qkv, heads, 0, 0.0, attr_int("unidirectional", 0) != 0));
    }
    if (t == "MultiHeadAttention") {
      if (present(3) || present(4) || present(5)) unsupported("MultiHeadAttention with a bias, mask or past input");
      const OpId q = activation(0, "query"), k = activation(1, "key"), v = activation(2, "value");
      return set_output(0, b_.attention(op_name(), q, k, v, attr_int("num_heads", 0)));
    }
    unsupported("op com.microsoft." + t);
  }

  OpId rank4(std::size_t k) {
    const OpId x = activation(k, "X");
    if (b_.shape(x).size() != 4)
      unsupported("a " + std::to_string(b_.shape(x).size()) + "-D input " + to_string(b_.shape(x)) +
                  " (2-D convolution and pooling over NCHW only)");
    return x;
  }

  /// Symmetric (height, width) padding from pads/auto_pad; asymmetric padding is refused.
  Hw padding(const Shape& x, Hw kernel, Hw stride, Hw dilation) const {
    const std::string auto_pad = attr_string("auto_pad", "NOTSET");
    constexpr std::int64_t kMax = std::int64_t{1} << 20;  // keeps the arithmetic below far from overflow
    for (std::int64_t v : {kernel.h, kernel.w, stride.h, stride.w, dilation.h, dilation.w})
      if (v < 1 || v > kMax) fail("expected kernel, strides and dilations in [1, 2^20], found " + std::to_string(v));
    if (x[2] > kMax * kMax || x[3] > kMax * kMax) fail("an input of at most 2^40 rows and columns");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      auto same = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d) {
        const std::int64_t out = (in + s - 1) / s;
        const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
        if (total % 2 != 0) unsupported("auto_pad " + auto_pad + " needing asymmetric padding");
        return total / 2;
      };
      return Hw(same(x[2], kernel.h, stride.h, dilation.h), same(x[3], kernel.w, stride.w, dilation.w));
    }
    if (auto_pad == "VALID") return 0;
    if (auto_pad != "NOTSET") fail("expected auto_pad NOTSET, SAME_UPPER, SAME_LOWER or VALID, found " + auto_pad);
    const std::vector<std::int64_t> pads = attr_ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4) fail("expected 4 pads (top, left, bottom, right), found " + std::to_string(pads.size()));
    if (pads[0] != pads[2] || pads[1] != pads[3])
      unsupported("asymmetric padding [" + std::to_string(pads[0]) + ", " + std::to_string(pads[1]) + ", " +
                  std::to_string(pads[2]) + ", " + std::to_string(pads[3]) + "]");
    return Hw(pads[0], pads[1]);
  }

  Hw pair_attr(const std::string& key, std::int64_t fallback) const {
    const std::vector<std::int64_t> v = attr_ints(key, {fallback, fallback});
    if (v.size() != 2) fail("expected 2 values in " + key + ", found " + std::to_string(v.size()));
    return Hw(v[0], v[1]);
  }

  void map_conv() {
    const OpId x = rank4(0);
    const Shape xs = b_.shape(x);
    const Constant& w = constant(1, "W");
    const std::int64_t groups = attr_int("group", 1);
    if (w.dims.size() != 4) fail("expected a weight W [M, C/group, kH, kW], found " + to_string(w.dims));
    if (groups < 1 || xs[1] % groups != 0 || w.dims[1] != xs[1] / groups)
      fail("weight W " + to_string(w.dims) + " expects " + std::to_string(w.dims[1]) + " x group (" +
           std::to_string(groups) + ") input channels, the input " + to_string(xs) + " has " + std::to_string(xs[1]));
    const Hw kernel = pair_attr("kernel_shape", 0);
    if ((node_->attrs.count("kernel_shape") && (kernel.h != w.dims[2] || kernel.w != w.dims[3])))
      fail("kernel_shape does not match the weight W " + to_string(w.dims));
    bool bias = false;
    if (present(2)) {
      const Constant& c = constant(2, "B");
      if (c.dims != Shape{w.dims[0]})
        fail("expected a bias B [" + std::to_string(w.dims[0]) + "], found " + to_string(c.dims));
      bias = true;
    }
    const Hw k(w.dims[2], w.dims[3]);
    const Hw stride = pair_attr("strides", 1), dilation = pair_attr("dilations", 1);
    const Hw pad = padding(xs, k, stride, dilation);
    set_output(0, b_.conv2d(op_name(), x, w.dims[0], k, stride, pad, groups, dilation, bias));
  }

  void map_gemm() {
    const OpId a = activation(0, "A");
    const Shape as = b_.shape(a);
    if (as.size() != 2) fail("expected A of rank 2, found " + to_string(as));
    if (attr_int("transA", 0) != 0) unsupported("Gemm with transA = 1");
    const bool trans_b = attr_int("transB", 0) != 0;
    if (!is_constant(1)) {
      if (present(2)) unsupported("Gemm of two activations with a C input");
      OpId bmat = activation(1, "B");
      if (trans_b) {
        const Shape& bs = b_.shape(bmat);
        if (bs.size() != 2) fail("expected B of rank 2, found " + to_string(bs));
        bmat = view(bmat, {bs[1], bs[0]}, ".B_transposed");
      }
      return set_output(0, b_.matmul(op_name(), a, bmat));
    }
    const Constant& w = constant(1, "B");
    if (w.dims.size() != 2) fail("expected a weight B of rank 2, found " + to_string(w.dims));
    const std::int64_t k = trans_b ? w.dims[1] : w.dims[0];
    const std::int64_t n = trans_b ? w.dims[0] : w.dims[1];
    if (k != as[1])
      fail("weight B " + to_string(w.dims) + (trans_b ? " (transB)" : "") + " expects " + std::to_string(k) +
           " input features, A " + to_string(as) + " has " + std::to_string(as[1]));
    bool bias = false;
    if (present(2)) {
      const Constant& c = constant(2, "C");
      if (num_elements(c.dims) != n)
        unsupported("C " + to_string(c.dims) + " other than a bias of " + std::to_string(n));
      bias = true;
    }
    set_output(0, b_.linear(op_name(), a, k, n, bias));
  }

  void map_matmul() {
    const OpId a = activation(0, "A");
    if (is_constant(1)) {
      const Constant& w = constant(1, "B");
      if (w.dims.size() != 2) unsupported("MatMul by a weight of rank " + std::to_string(w.dims.size()));
      const bool bias = linear_bias_.count(index_) > 0;
      const OpId y = b_.linear(op_name(), a, w.dims[0], w.dims[1], bias);
      set_output(0, y);
      if (bias) values_[fused_output_[index_]] = values_[node_->outputs[0]];
      return;
    }
    const OpId bm = activation(1, "B");
    const std::size_t ra = b_.shape(a).size(), rb = b_.shape(bm).size();
    if (rb == 2 && ra >= 2) return set_output(0, b_.matmul(op_name(), a, bm));
    if (ra == rb && ra >= 3) return set_output(0, b_.batched_matmul(op_name(), a, bm));
    unsupported("MatMul broadcasting " + to_string(b_.shape(a)) + " by " + to_string(b_.shape(bm)));
  }

  void map_batch_norm() {
    const OpId x = activation(0, "X");
    const Shape& xs = b_.shape(x);
    if (xs.size() < 2) fail("expected X [N, C, ...], found " + to_string(xs));
    const char* roles[] = {"scale", "B", "input_mean", "input_var"};
    for (std::size_t k = 1; k <= 4; ++k) {
      const Constant& c = constant(k, roles[k - 1]);
      if (c.dims != Shape{xs[1]})
        fail(std::string("expected ") + roles[k - 1] + " [" + std::to_string(xs[1]) + "], found " + to_string(c.dims));
    }
    unavailable(1, "running mean output");
    unavailable(2, "running variance output");
    set_output(0, b_.batch_norm(op_name(), x));
  }

  void map_layer_norm(bool rms) {
    const OpId x = activation(0, "X");
    const Shape& xs = b_.shape(x);
    if (axis_in(attr_int("axis", -1), xs.size()) != static_cast<std::int64_t>(xs.size()) - 1)
      unsupported("normalizing over more than the last axis");
    const Constant& scale = constant(1, "Scale");
    if (num_elements(scale.dims) != xs.back())
      fail("expected Scale of " + std::to_string(xs.back()) + " elements, found " + to_string(scale.dims));
    for (std::size_t k = 1; k < node_->outputs.size(); ++k) unavailable(k, "statistics output");
    if (rms) {
      if (present(2)) unsupported("SimplifiedLayerNormalization with a bias");
      return set_output(0, b_.rms_norm(op_name(), x));
    }
    if (present(2)) {
      const Constant& bias = constant(2, "B");
      if (num_elements(bias.dims) != xs.back())
        fail("expected B of " + std::to_string(xs.back()) + " elements, found " + to_string(bias.dims));
    }
    set_output(0, b_.layer_norm(op_name(), x, present(2)));
  }

  void map_pool(bool max) {
    const OpId x = rank4(0);
    if (!node_->attrs.count("kernel_shape")) fail("expected a kernel_shape attribute");
    const Hw kernel = pair_attr("kernel_shape", 0);
    const Hw stride = pair_attr("strides", 1);
    const Hw dilation = pair_attr("dilations", 1);
    if (dilation.h != 1 || dilation.w != 1) unsupported("pooling with dilations");
    const Hw pad = padding(b_.shape(x), kernel, stride, 1);
    const bool ceil = attr_int("ceil_mode", 0) != 0;
    unavailable(1, "indices output");
    set_output(0, max ? b_.max_pool2d(op_name(), x, kernel, stride, pad, ceil)
                      : b_.avg_pool2d(op_name(), x, kernel, stride, pad, ceil));
  }

  void map_softmax() {
    const OpId x = activation(0, "input");
    const std::size_t rank = b_.shape(x).size();
    // Opset 13 made the last axis the default; before, axis 1 over a flattened tail.
    const std::int64_t axis = axis_in(attr_int("axis", g_.opset < 13 ? 1 : -1), rank);
    if (axis != static_cast<std::int64_t>(rank) - 1)
      unsupported("softmax over axis " + std::to_string(axis) + " of " + std::to_string(rank));
    set_output(0, b_.softmax(op_name(), x));
  }

  void map_dropout() {
    const OpId x = activation(0, "data");
    double p = attr_float("ratio", 0.5);
    if (present(1)) {
      const Constant& r = constant(1, "ratio");
      if (!r.floats || r.floats->size() != 1) fail("expected a scalar float ratio");
      p = r.floats->front();
    }
    unavailable(1, "mask output");
    set_output(0, b_.dropout(op_name(), x, p));
  }

  void map_elementwise(const std::string& t) {
    std::vector<OpId> acts;
    std::vector<std::size_t> consts;
    for (std::size_t k = 0; k < node_->inputs.size(); ++k) {
      if (!present(k)) continue;
      if (is_constant(k)) consts.push_back(k);
      else acts.push_back(activation(k, "operand"));
    }
    if (acts.empty()) return fold_arithmetic(t);
    if (!consts.empty()) {
      // Scaling by or adding a scalar (attention's 1/sqrt(d), GELU's 0.5) is folded away; a tensor
      // constant would be a parameter parasim has no op for.
      for (std::size_t k : consts) {
        const Constant& c = constant(k, "operand");
        if (num_elements(c.dims) != 1)
          unsupported(t + " with the constant operand \"" + node_->inputs[k] + "\" " + to_string(c.dims) +
                      " (only a MatMul's bias or a scalar)");
      }
      if (acts.size() == 1) return set_output(0, acts.front());
    }
    const Shape& s0 = b_.shape(acts.front());
    for (OpId a : acts)
      if (b_.shape(a) != s0) unsupported(t + " broadcasting " + to_string(s0) + " with " + to_string(b_.shape(a)));
    const bool product = t == "Mul" || t == "Div";
    set_output(0, product ? b_.mul(op_name(), acts) : b_.add(op_name(), acts));
  }

  /// Integer arithmetic on constants (shape computations).
  void fold_arithmetic(const std::string& t) {
    if (node_->inputs.size() != 2 && t != "Sum") unsupported(t + " of constants");
    const std::vector<std::int64_t>& a = constant_ints(0, "A");
    const std::vector<std::int64_t>& c = constant_ints(1, "B");
    if (a.size() != c.size() && a.size() != 1 && c.size() != 1) unsupported(t + " of constants broadcasting");
    const std::size_t n = std::max(a.size(), c.size());
    std::vector<std::int64_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t x = a[a.size() == 1 ? 0 : i], y = c[c.size() == 1 ? 0 : i];
      if (t == "Div" && y == 0) fail("division by zero in a shape computation");
      const bool overflow = (t == "Mul" && __builtin_mul_overflow(x, y, &out[i])) ||
                            ((t == "Add" || t == "Sum") && __builtin_add_overflow(x, y, &out[i])) ||
                            (t == "Sub" && __builtin_sub_overflow(x, y, &out[i]));
      if (overflow) fail("integer overflow in a shape computation");
      if (t == "Div" && x == INT64_MIN && y == -1) fail("integer overflow in a shape computation");
      if (t == "Div") out[i] = x / y;
    }
    Constant r;
    r.dims = n == 1 && constant(0, "A").dims.empty() && constant(1, "B").dims.empty()
                 ? Shape{}
                 : Shape{static_cast<std::int64_t>(n)};
    r.ints = std::move(out);
    set_constant(0, std::move(r));
  }

  void map_concat() {
    if (!node_->attrs.count("axis")) fail("expected an axis attribute");
    bool all_constant = true;
    for (std::size_t k = 0; k < node_->inputs.size(); ++k) all_constant = all_constant && is_constant(k);
    if (all_constant) {
      Constant r;
      r.ints.emplace();
      for (std::size_t k = 0; k < node_->inputs.size(); ++k) {
        const auto& v = constant_ints(k, "input");
        r.ints->insert(r.ints->end(), v.begin(), v.end());
      }
      r.dims = {static_cast<std::int64_t>(r.ints->size())};
      return set_constant(0, std::move(r));
    }
    std::vector<OpId> xs;
    for (std::size_t k = 0; k < node_->inputs.size(); ++k) xs.push_back(activation(k, "input"));
    if (xs.empty()) fail("expected at least one input");
    const std::int64_t axis = axis_in(attr_int("axis", 0), b_.shape(xs.front()).size());
    set_output(0, xs.size() == 1 ? xs.front() : b_.concat(op_name(), xs, axis));
  }

  void map_reshape() {
    std::vector<std::int64_t> target = constant_ints(1, "shape");
    if (is_constant(0)) {
      Constant c = constant(0, "data");
      if (!c.ints) unsupported("Reshape of a non-integer constant");
      c.dims = target;
      return set_constant(0, std::move(c));
    }
    const OpId x = activation(0, "data");
    const Shape& xs = b_.shape(x);
    const bool allow_zero = attr_int("allowzero", 0) != 0;
    for (std::size_t i = 0; i < target.size(); ++i) {
      if (target[i] == 0 && !allow_zero) {
        if (i >= xs.size())
          fail("shape " + to_string(target) + " copies dimension " + std::to_string(i) + " of " + to_string(xs));
        target[i] = xs[i];
      }
    }
    // A shape written for the file's fixed batch follows a --batch override (as parasim.model/1 does).
    const std::int64_t batch = b_.model().batch();
    if (file_batch_ > 0 && file_batch_ != batch && !target.empty() && target[0] == file_batch_ && !xs.empty() &&
        xs[0] == batch)
      target[0] = batch;
    set_output(0, view(x, target));
  }

  void map_flatten() {
    const OpId x = activation(0, "input");
    const Shape& xs = b_.shape(x);
    const std::int64_t axis = axis_in(attr_int("axis", 1), xs.size() + 1);
    const auto a = static_cast<std::size_t>(axis);
    set_output(0, view(x, {product(xs, 0, a), product(xs, a, xs.size())}));
  }

  void map_transpose() {
    const OpId x = activation(0, "data");
    const Shape& xs = b_.shape(x);
    std::vector<std::int64_t> perm = attr_ints("perm", {});
    if (perm.empty())
      for (std::size_t i = xs.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
    if (perm.size() != xs.size()) fail("expected perm of " + std::to_string(xs.size()) + " axes");
    Shape out;
    std::vector<bool> seen(xs.size(), false);
    for (std::int64_t p : perm) {
      const auto i = static_cast<std::size_t>(axis_in(p, xs.size()));
      if (seen[i]) fail("perm repeats axis " + std::to_string(p));
      seen[i] = true;
      out.push_back(xs[i]);
    }
    set_output(0, out == xs ? x : view(x, out));
  }

  void map_squeeze(bool unsqueeze) {
    std::vector<std::int64_t> axes = attr_ints("axes", {});
    if (present(1)) axes = constant_ints(1, "axes");
    const bool on_constant = is_constant(0);
    Shape in = on_constant ? constant(0, "data").dims : b_.shape(activation(0, "data"));
    Shape out;
    if (unsqueeze) {
      const std::size_t rank = in.size() + axes.size();
      std::vector<bool> added(rank, false);
      for (std::int64_t a : axes) {
        const auto i = static_cast<std::size_t>(axis_in(a, rank));
        if (added[i]) fail("axes repeat axis " + std::to_string(a));
        added[i] = true;
      }
      std::size_t next = 0;
      for (std::size_t i = 0; i < rank; ++i) out.push_back(added[i] ? 1 : in[next++]);
    } else {
      std::vector<bool> drop(in.size(), axes.empty());
      for (std::int64_t a : axes) drop[static_cast<std::size_t>(axis_in(a, in.size()))] = true;
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (drop[i] && in[i] != 1 && !axes.empty())
          fail("cannot squeeze axis " + std::to_string(i) + " of " + to_string(in));
        if (!(drop[i] && in[i] == 1)) out.push_back(in[i]);
      }
    }
    if (on_constant) {
      Constant c = constant(0, "data");
      c.dims = out;
      return set_constant(0, std::move(c));
    }
    const OpId x = activation(0, "data");
    if (out.empty()) unsupported("squeezing to a scalar");
    set_output(0, view(x, out));
  }

  void map_gather() {
    const std::int64_t axis = attr_int("axis", 0);
    if (is_constant(0) && !is_constant(1)) {
      // nn.Embedding: rows of a [vocab, dim] table picked by token ids.
      const Constant& table = constant(0, "data");
      if (table.dims.size() != 2 || axis != 0)
        unsupported("Gather other than an embedding lookup (a [vocab, dim] table, axis 0)");
      return set_output(0, b_.embedding(op_name(), activation(1, "indices"), table.dims[0], table.dims[1]));
    }
    if (is_constant(0) && is_constant(1)) {
      const std::vector<std::int64_t>& data = constant_ints(0, "data");
      const Constant& idx = constant(1, "indices");
      if (!idx.ints || constant(0, "data").dims.size() != 1 || axis != 0)
        unsupported("Gather on constants beyond 1-D integers");
      Constant r;
      r.dims = idx.dims;
      r.ints.emplace();
      for (std::int64_t i : *idx.ints) {
        const auto n = static_cast<std::int64_t>(data.size());
        if (i < -n || i >= n) fail("index " + std::to_string(i) + " out of range for " + std::to_string(n) + " values");
        r.ints->push_back(data[static_cast<std::size_t>(i < 0 ? i + n : i)]);
      }
      return set_constant(0, std::move(r));
    }
    if (is_constant(1)) {
      // index_select along the sequence axis (masked-LM positions): the gather op keeps the count of
      // indices; its kernels take evenly spaced positions, which cost the same as the stored ones.
      const OpId x = activation(0, "data");
      const Shape& s = b_.shape(x);
      const Constant& idx = constant(1, "indices");
      if (s.size() != 3 || (axis != 1 && axis != -2) || idx.dims.size() != 1)
        unsupported("Gather from an activation other than 1-D constant indices along axis 1 of a [B, T, D] tensor");
      if (idx.ints)
        for (std::int64_t i : *idx.ints)
          if (i < -s[1] || i >= s[1])
            fail("index " + std::to_string(i) + " out of range for " + std::to_string(s[1]) + " positions");
      return set_output(0, b_.gather(op_name(), x, idx.dims[0]));
    }
    unsupported("Gather from an activation with computed indices");
  }

  void map_shape() {
    const Shape& s = b_.shape(activation(0, "data"));
    const auto rank = static_cast<std::int64_t>(s.size());
    auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const std::int64_t start = clamp(attr_int("start", 0)), end = clamp(attr_int("end", rank));
    Constant c;
    c.ints.emplace();
    for (std::int64_t i = start; i < end; ++i) c.ints->push_back(s[static_cast<std::size_t>(i)]);
    c.dims = {static_cast<std::int64_t>(c.ints->size())};
    set_constant(0, std::move(c));
  }

  void map_constant() {
    Constant c;
    if (const Attribute* a = attr("value", Type::Tensor)) c = a->t;
    else if (const Attribute* i = attr("value_int", Type::Int)) c.ints = std::vector<std::int64_t>{i->i};
    else if (const Attribute* is = attr("value_ints", Type::Ints))
      c.ints = is->ints, c.dims = {static_cast<std::int64_t>(is->ints.size())};
    else if (const Attribute* f = attr("value_float", Type::Float)) c.floats = std::vector<double>{f->f};
    else if (const Attribute* fs = attr("value_floats", Type::Floats))
      c.floats = fs->floats, c.dims = {static_cast<std::int64_t>(fs->floats.size())};
    else unsupported("Constant without a value, value_int(s) or value_float(s) attribute");
    set_constant(0, std::move(c));
  }

  void map_lstm() {
    const OpId x = activation(0, "X");
    const Shape xs = b_.shape(x);
    if (xs.size() != 3) fail("expected X of rank 3, found " + to_string(xs));
    const std::int64_t layout = attr_int("layout", 0);
    const std::int64_t t = layout == 0 ? xs[0] : xs[1], batch = layout == 0 ? xs[1] : xs[0], in = xs[2];
    const std::string direction = attr_string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      fail("expected direction forward, reverse or bidirectional, found " + direction);
    const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
    const std::int64_t h = attr_int("hidden_size", 0);
    if (h < 1 || h > (std::int64_t{1} << 40)) fail("expected a hidden_size attribute in [1, 2^40]");
    if (attr_int("input_forget", 0) != 0) unsupported("LSTM with input_forget");
    if (node_->attrs.count("activations")) unsupported("LSTM with non-default activations");
    if (present(7)) unsupported("LSTM with peepholes (P)");
    const Constant& w = constant(1, "W");
    const Constant& r = constant(2, "R");
    if (w.dims != Shape{dirs, 4 * h, in})
      fail("expected W [" + std::to_string(dirs) + ", " + std::to_string(4 * h) + ", " + std::to_string(in) +
           "], found " + to_string(w.dims));
    if (r.dims != Shape{dirs, 4 * h, h})
      fail("expected R [" + std::to_string(dirs) + ", " + std::to_string(4 * h) + ", " + std::to_string(h) +
           "], found " + to_string(r.dims));
    const bool bias = present(3);
    if (bias && constant(3, "B").dims != Shape{dirs, 8 * h})
      fail("expected B [" + std::to_string(dirs) + ", " + std::to_string(8 * h) + "], found " +
           to_string(constant(3, "B").dims));
    // parasim's LSTM runs batch-major [B, T, in]; the time-major layout is a view around it.
    const OpId xb = layout == 0 ? view(x, {batch, t, in}, ".batch_major") : x;
    OpId y = 0;
    if (dirs == 2) {
      const OpId fwd = b_.lstm(op_name(".forward"), xb, h, 0, bias, false);
      const OpId rev = b_.lstm(op_name(".reverse"), xb, h, 0, bias, true);
      y = b_.concat(op_name(".concat"), {fwd, rev}, 2);
    } else {
      y = b_.lstm(op_name(), xb, h, 0, bias, direction == "reverse");
    }
    unavailable(1, "last hidden state Y_h");
    unavailable(2, "last cell state Y_c");
    set_output(0, view(y, layout == 0 ? Shape{t, dirs, batch, h} : Shape{batch, t, dirs, h}, ".Y"));
  }

  /// A Reshape target for `x` with 0 (copy) and one -1 resolved.
  Shape resolved_shape(const std::string& shape_tensor, const Shape& x) {
    const Value& v = value(shape_tensor);
    if (v.kind != Value::Kind::Constant || !v.constant.ints)
      fail("reshape target \"" + shape_tensor + "\" is not a constant");
    Shape t = *v.constant.ints;
    std::int64_t known = 1, inferred = -1;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == 0 && i < x.size()) t[i] = x[i];
      if (t[i] == -1 && inferred < 0) inferred = static_cast<std::int64_t>(i);
      else if (t[i] < 1) fail("reshape target " + to_string(*v.constant.ints) + " for " + to_string(x));
      else if (__builtin_mul_overflow(known, t[i], &known)) fail("reshape target " + to_string(t) + " overflows");
    }
    if (inferred >= 0 && known > 0) t[static_cast<std::size_t>(inferred)] = num_elements(x) / known;
    return t;
  }

  void map_attention(const AttentionMatch& a) {
    const Node& softmax = g_.nodes[a.softmax];
    const std::string what = "attention (MatMul-Softmax-MatMul around node \"" + softmax.name + "\")";
    auto act = [&](const std::string& name) {
      const Value& v = value(name);
      if (v.kind != Value::Kind::Activation) fail(what + ": \"" + name + "\" is not an activation");
      return v.op;
    };
    const OpId q = act(a.q), k = act(a.k), v = act(a.v);
    const Shape qs = b_.shape(q), ks = b_.shape(k), vs = b_.shape(v);
    if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3)
      fail(what + ": expected q, k, v of rank 3, found " + to_string(qs) + ", " + to_string(ks) + ", " + to_string(vs));
    const Shape qt = resolved_shape(a.q_shape, qs), kt = resolved_shape(a.k_shape, ks),
                vt = resolved_shape(a.v_shape, vs);
    const std::int64_t heads = qt.size() == 4 ? qt[2] : 0;
    auto split_ok = [&](const Shape& t, const Shape& x) {
      return t.size() == 4 && t[0] == x[0] && t[1] == x[1] && t[2] == heads && heads > 0 && t[3] > 0 &&
             x[2] % heads == 0 && x[2] / heads == t[3];
    };
    if (!split_ok(qt, qs) || !split_ok(kt, ks) || !split_ok(vt, vs))
      fail(what + ": expected the heads split as [B, T, heads, head_dim], found " + to_string(qt) + ", " +
           to_string(kt) + ", " + to_string(vt));
    Op op;
    op.kind = OpKind::Attention;
    op.name = unique_name(softmax.name.empty() ? "attention_" + std::to_string(a.softmax) : softmax.name);
    op.attrs.heads = heads;
    if (a.dropout) {
      const Node& d = g_.nodes[*a.dropout];
      op.attrs.p = 0.5;
      if (auto r = d.attrs.find("ratio"); r != d.attrs.end() && r->second.type == Type::Float) op.attrs.p = r->second.f;
      if (d.inputs.size() > 1 && !d.inputs[1].empty()) {
        const Value& r = value(d.inputs[1]);
        if (r.kind != Value::Kind::Constant || !r.constant.floats || r.constant.floats->size() != 1)
          fail(what + ": expected a scalar constant dropout ratio");
        op.attrs.p = r.constant.floats->front();
      }
    }
    const OpId y = b_.add_op(std::move(op), {q, k, v});
    const Shape out = resolved_shape(a.out_shape, Shape{qs[0], qs[1], heads, vs[2] / heads});
    if (out != b_.shape(y))
      fail(what + ": expected the heads merged back to " + to_string(b_.shape(y)) + ", found " + to_string(out));
    set_output(0, y);
  }

  // ---------------------------------------------------------------- the loss

  /// An inference graph trains against the zoo's loss: cross-entropy over its first output, and
  /// over any other output no op reads (every sink of a parasim model is a loss).
  void add_loss() {
    if (g_.outputs.empty()) throw InputError(file_ + ": expected a graph output, found none");
    std::set<OpId> done;
    for (std::size_t i = 0; i < g_.outputs.size(); ++i) {
      const std::string& out = g_.outputs[i];
      auto it = values_.find(out);
      if (it == values_.end() || it->second.kind != Value::Kind::Activation) {
        if (i == 0)
          throw InputError(file_ + ": graph output \"" + out + "\" is not computed by the graph's forward ops");
        continue;
      }
      const OpId v = it->second.op;
      if (done.count(v) || (i > 0 && !b_.model().consumers_of(v).empty())) continue;
      done.insert(v);
      b_.cross_entropy(unique_name("loss"), v);
    }
  }
};

}  // namespace

Model build_model(const Graph& g, const std::string& file, const std::string& name, const LoadOptions& options) {
  if (options.batch && *options.batch < 1)
    throw InputError(file + ": batch override must be >= 1, found " + std::to_string(*options.batch));
  return Importer(g, file, name, options).run();
}

}  // namespace parasim::models::detail::onnx
