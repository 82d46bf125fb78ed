// ModelBuilder: one method per op kind, all funnelled through add_op -> detail::infer_op.
#include "parasim/models/builder.hpp"

#include "op_inference.hpp"
#include "parasim/common/error.hpp"

namespace parasim::models {

ModelBuilder::ModelBuilder(std::string model_name, std::int64_t batch, DType dtype)
    : model_(std::move(model_name), batch, dtype) {
  if (batch < 1) throw InputError("model " + model_.name() + ": batch must be >= 1, found " + std::to_string(batch));
}

// ------------------------------------------------------------------ blocks

ModelBuilder::BlockScope ModelBuilder::block(const std::string& name) {
  push_block(name);
  return BlockScope(*this);
}

void ModelBuilder::push_block(const std::string& name) {
  blocks_.push_back(blocks_.empty() ? name : blocks_.back() + "/" + name);
}

void ModelBuilder::pop_block() {
  if (!blocks_.empty()) blocks_.pop_back();
}

const std::string& ModelBuilder::current_block() const {
  static const std::string kTopLevel;
  return blocks_.empty() ? kTopLevel : blocks_.back();
}

// ------------------------------------------------------------------ generic

std::optional<OpId> ModelBuilder::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

OpId ModelBuilder::add_op(Op op, const std::vector<OpId>& inputs) {
  if (op.name.empty())
    throw InputError(to_string(op.kind) + " op in model " + model_.name() + ": expected a non-empty name");
  if (by_name_.count(op.name)) throw InputError("duplicate op name \"" + op.name + "\" in model " + model_.name());
  std::vector<const Op*> producers;
  producers.reserve(inputs.size());
  for (OpId u : inputs) {
    if (u >= model_.num_ops())
      throw InputError(to_string(op.kind) + " \"" + op.name + "\": input op id " + std::to_string(u) +
                       " does not exist in model " + model_.name());
    producers.push_back(&model_.op(u));
  }
  const Op* owner = nullptr;
  if (!op.attrs.shares_weights_with.empty()) {
    if (auto id = find(op.attrs.shares_weights_with)) owner = &model_.op(*id);
  }
  op.dtype = model_.dtype();
  if (op.block.empty()) op.block = current_block();
  detail::infer_op(op, producers, owner);

  Graph& g = model_.graph();
  // Boost 1.74's add_vertex(property, g) and add_edge(u, v, property, g) copy the property: add
  // an empty vertex or edge and move into it instead (model variants rebuild every op).
  const OpId v = boost::add_vertex(g);
  g[v] = std::move(op);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Op& producer = g[inputs[i]];
    Tensor t;
    t.shape = producer.output_shape;
    t.dtype = model_.dtype();
    t.bytes = num_elements(t.shape) * dtype_size(t.dtype);  // fits: checked by infer_op
    t.input_index = static_cast<std::int32_t>(i);
    g[boost::add_edge(inputs[i], v, g).first] = std::move(t);
  }
  by_name_.emplace(g[v].name, v);
  return v;
}

Model ModelBuilder::finish() {
  Model out = std::move(model_);
  model_ = Model(out.name(), out.batch(), out.dtype());
  by_name_.clear();
  blocks_.clear();
  return out;
}

namespace {

Op make_op(OpKind kind, const std::string& name) {
  Op op;
  op.kind = kind;
  op.name = name;
  return op;
}

}  // namespace

OpId ModelBuilder::unary(OpKind kind, const std::string& name, OpId x) { return add_op(make_op(kind, name), {x}); }

// ------------------------------------------------------------------ data

OpId ModelBuilder::input(const std::string& name, Shape shape) {
  Op op = make_op(OpKind::Input, name);
  op.output_shape = std::move(shape);
  return add_op(std::move(op), {});
}

// ------------------------------------------------------------------ weighted layers

OpId ModelBuilder::conv2d(const std::string& name, OpId x, std::int64_t out_channels, Hw kernel, Hw stride, Hw padding,
                          std::int64_t groups, Hw dilation, bool bias) {
  Op op = make_op(OpKind::Conv2d, name);
  OpAttrs& a = op.attrs;
  a.out_features = out_channels;
  a.kernel_h = kernel.h, a.kernel_w = kernel.w;
  a.stride_h = stride.h, a.stride_w = stride.w;
  a.pad_h = padding.h, a.pad_w = padding.w;
  a.dilation_h = dilation.h, a.dilation_w = dilation.w;
  a.groups = groups;
  a.bias = bias;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::linear(const std::string& name, OpId x, std::int64_t in_features, std::int64_t out_features,
                          bool bias) {
  Op op = make_op(OpKind::Linear, name);
  if (in_features < 1)
    throw InputError("linear \"" + name + "\": expected in_features >= 1, found " + std::to_string(in_features));
  op.attrs.in_features = in_features;
  op.attrs.out_features = out_features;
  op.attrs.bias = bias;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::linear_tied(const std::string& name, OpId x, const std::string& weight_owner, bool bias) {
  Op op = make_op(OpKind::Linear, name);
  op.attrs.shares_weights_with = weight_owner;
  op.attrs.bias = bias;
  if (auto id = find(weight_owner)) {
    const Op& owner = model_.op(*id);
    // The owner's [rows, cols] weight serves as this layer's [out_features, in_features].
    op.attrs.out_features = owner.kind == OpKind::Embedding ? owner.attrs.vocab : owner.attrs.out_features;
    op.attrs.in_features = owner.kind == OpKind::Embedding ? owner.attrs.out_features : owner.attrs.in_features;
  }
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::lstm(const std::string& name, OpId x, std::int64_t hidden, std::int64_t proj, bool bias,
                        bool reverse) {
  Op op = make_op(OpKind::Lstm, name);
  op.attrs.hidden = hidden;
  op.attrs.proj = proj;
  op.attrs.bias = bias;
  op.attrs.reverse = reverse;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::embedding(const std::string& name, OpId ids, std::int64_t vocab, std::int64_t dim) {
  Op op = make_op(OpKind::Embedding, name);
  op.attrs.vocab = vocab;
  op.attrs.out_features = dim;
  return add_op(std::move(op), {ids});
}

OpId ModelBuilder::embedding_shared(const std::string& name, OpId ids, const std::string& weight_owner) {
  Op op = make_op(OpKind::Embedding, name);
  op.attrs.shares_weights_with = weight_owner;
  if (auto id = find(weight_owner)) {
    const Op& owner = model_.op(*id);
    op.attrs.vocab = owner.kind == OpKind::Embedding ? owner.attrs.vocab : owner.attrs.out_features;
    op.attrs.out_features = owner.kind == OpKind::Embedding ? owner.attrs.out_features : owner.attrs.in_features;
  }
  return add_op(std::move(op), {ids});
}

OpId ModelBuilder::batch_norm(const std::string& name, OpId x) { return unary(OpKind::BatchNorm, name, x); }
OpId ModelBuilder::layer_norm(const std::string& name, OpId x, bool bias) {
  Op op = make_op(OpKind::LayerNorm, name);
  op.attrs.norm_bias = bias;
  return add_op(std::move(op), {x});
}
OpId ModelBuilder::rms_norm(const std::string& name, OpId x) { return unary(OpKind::RmsNorm, name, x); }

// ------------------------------------------------------------------ products

OpId ModelBuilder::matmul(const std::string& name, OpId a, OpId b) {
  return add_op(make_op(OpKind::Matmul, name), {a, b});
}

OpId ModelBuilder::batched_matmul(const std::string& name, OpId a, OpId b) {
  return add_op(make_op(OpKind::BatchedMatmul, name), {a, b});
}

OpId ModelBuilder::attention(const std::string& name, OpId qkv, std::int64_t heads, std::int64_t kv_heads,
                             double dropout, bool causal) {
  Op op = make_op(OpKind::Attention, name);
  op.attrs.heads = heads;
  op.attrs.kv_heads = kv_heads;
  op.attrs.p = dropout;
  op.attrs.causal = causal;
  return add_op(std::move(op), {qkv});
}

OpId ModelBuilder::experts(const std::string& name, OpId x, std::int64_t experts, std::int64_t top_k,
                           std::int64_t width, bool gated, double capacity_factor) {
  Op op = make_op(OpKind::Experts, name);
  op.attrs.experts = experts;
  op.attrs.top_k = top_k;
  op.attrs.out_features = width;
  op.attrs.gated = gated;
  op.attrs.capacity_factor = capacity_factor;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::rotary(const std::string& name, OpId qkv, std::int64_t heads, std::int64_t kv_heads) {
  Op op = make_op(OpKind::Rotary, name);
  op.attrs.heads = heads;
  op.attrs.kv_heads = kv_heads;
  return add_op(std::move(op), {qkv});
}

OpId ModelBuilder::attention(const std::string& name, OpId q, OpId k, OpId v, std::int64_t heads, bool additive) {
  Op op = make_op(OpKind::Attention, name);
  op.attrs.heads = heads;
  op.attrs.additive = additive;
  return add_op(std::move(op), {q, k, v});
}

// ------------------------------------------------------------------ pooling

namespace {

Op pool_op(OpKind kind, const std::string& name, Hw kernel, Hw stride, Hw padding, bool ceil_mode) {
  Op op = make_op(kind, name);
  op.attrs.kernel_h = kernel.h, op.attrs.kernel_w = kernel.w;
  op.attrs.stride_h = stride.h, op.attrs.stride_w = stride.w;
  op.attrs.pad_h = padding.h, op.attrs.pad_w = padding.w;
  op.attrs.ceil_mode = ceil_mode;
  return op;
}

}  // namespace

OpId ModelBuilder::max_pool2d(const std::string& name, OpId x, Hw kernel, Hw stride, Hw padding, bool ceil_mode) {
  return add_op(pool_op(OpKind::MaxPool2d, name, kernel, stride, padding, ceil_mode), {x});
}

OpId ModelBuilder::avg_pool2d(const std::string& name, OpId x, Hw kernel, Hw stride, Hw padding, bool ceil_mode) {
  return add_op(pool_op(OpKind::AvgPool2d, name, kernel, stride, padding, ceil_mode), {x});
}

OpId ModelBuilder::adaptive_avg_pool2d(const std::string& name, OpId x, Hw output_size) {
  Op op = make_op(OpKind::AdaptiveAvgPool2d, name);
  op.attrs.kernel_h = output_size.h;
  op.attrs.kernel_w = output_size.w;
  return add_op(std::move(op), {x});
}

// ------------------------------------------------------------------ elementwise and bookkeeping

OpId ModelBuilder::relu(const std::string& name, OpId x) { return unary(OpKind::Relu, name, x); }
OpId ModelBuilder::gelu(const std::string& name, OpId x) { return unary(OpKind::Gelu, name, x); }
OpId ModelBuilder::tanh(const std::string& name, OpId x) { return unary(OpKind::Tanh, name, x); }
OpId ModelBuilder::sigmoid(const std::string& name, OpId x) { return unary(OpKind::Sigmoid, name, x); }
OpId ModelBuilder::softmax(const std::string& name, OpId x) { return unary(OpKind::Softmax, name, x); }
OpId ModelBuilder::squared_relu(const std::string& name, OpId x) { return unary(OpKind::SquaredRelu, name, x); }
OpId ModelBuilder::swiglu(const std::string& name, OpId gate_up) { return unary(OpKind::Swiglu, name, gate_up); }

OpId ModelBuilder::dropout(const std::string& name, OpId x, double p) {
  Op op = make_op(OpKind::Dropout, name);
  op.attrs.p = p;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::add(const std::string& name, const std::vector<OpId>& xs) {
  return add_op(make_op(OpKind::Add, name), xs);
}
OpId ModelBuilder::residual_add(const std::string& name, const std::vector<OpId>& xs) {
  Op op = make_op(OpKind::Add, name);
  op.attrs.residual = true;
  return add_op(std::move(op), xs);
}
OpId ModelBuilder::mul(const std::string& name, const std::vector<OpId>& xs) {
  return add_op(make_op(OpKind::Mul, name), xs);
}

OpId ModelBuilder::concat(const std::string& name, const std::vector<OpId>& xs, std::int64_t axis) {
  Op op = make_op(OpKind::Concat, name);
  op.attrs.axis = axis;
  return add_op(std::move(op), xs);
}

OpId ModelBuilder::reshape(const std::string& name, OpId x, Shape shape) {
  Op op = make_op(OpKind::Reshape, name);
  op.output_shape = std::move(shape);
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::gather(const std::string& name, OpId x, std::int64_t positions) {
  Op op = make_op(OpKind::Gather, name);
  op.attrs.positions = positions;
  return add_op(std::move(op), {x});
}

OpId ModelBuilder::flatten(const std::string& name, OpId x, std::int64_t start_dim) {
  const Shape& in = shape(x);
  if (start_dim < 0 || start_dim >= static_cast<std::int64_t>(in.size()))
    throw InputError("reshape \"" + name + "\" with input " + to_string(in) + ": expected flatten start_dim in [0, " +
                     std::to_string(static_cast<std::int64_t>(in.size()) - 1) + "], found " +
                     std::to_string(start_dim));
  Shape out(in.begin(), in.begin() + start_dim);
  out.push_back(-1);
  return reshape(name, x, std::move(out));
}

// ------------------------------------------------------------------ losses

OpId ModelBuilder::cross_entropy(const std::string& name, OpId logits) {
  return unary(OpKind::CrossEntropy, name, logits);
}

OpId ModelBuilder::sampled_softmax(const std::string& name, OpId x, std::int64_t vocab, std::int64_t num_sampled) {
  Op op = make_op(OpKind::SampledSoftmax, name);
  op.attrs.vocab = vocab;
  op.attrs.num_sampled = num_sampled;
  return add_op(std::move(op), {x});
}

Op op_to_rebuild(const Op& src) {
  Op op;
  op.name = src.name;
  op.kind = src.kind;
  op.attrs = src.attrs;
  op.block = src.block;
  if (src.kind == OpKind::Input || src.kind == OpKind::Reshape) op.output_shape = src.output_shape;
  return op;
}

}  // namespace parasim::models
