// Attribute validation and output-shape inference, one rule per op kind.
//
// Every failure names the op, its input shapes and what was expected, e.g.
//   conv2d "Mixed_5b.branch1x1.conv" with input [1, 190, 35, 35]: expected input channels (190) divisible by groups (4)
#include <sstream>

#include "checked_math.hpp"
#include "op_inference.hpp"
#include "parasim/common/error.hpp"

namespace parasim::models::detail {

std::string describe_op(const Op& op) {
  std::string s = to_string(op.kind) + " \"" + op.name + "\"";
  if (op.input_shapes.empty()) return s;
  s += op.input_shapes.size() == 1 ? " with input " : " with inputs ";
  for (std::size_t i = 0; i < op.input_shapes.size(); ++i) {
    if (i) s += ", ";
    s += to_string(op.input_shapes[i]);
  }
  return s;
}

namespace {

[[noreturn]] void fail(const Op& op, const std::string& expected) {
  throw InputError(describe_op(op) + ": expected " + expected);
}

std::string str(std::int64_t v) { return std::to_string(v); }
std::string hw(std::int64_t h, std::int64_t w) { return str(h) + "x" + str(w); }

void require_inputs(const Op& op, std::size_t n) {
  if (op.input_shapes.size() == n) return;
  fail(op, (n == 0 ? std::string("no inputs")
                   : "exactly " + str(static_cast<std::int64_t>(n)) + (n == 1 ? " input" : " inputs")) +
               ", found " + str(static_cast<std::int64_t>(op.input_shapes.size())));
}

void require_min_inputs(const Op& op, std::size_t n) {
  if (op.input_shapes.size() >= n) return;
  fail(op, "at least " + str(static_cast<std::int64_t>(n)) + " inputs, found " +
               str(static_cast<std::int64_t>(op.input_shapes.size())));
}

void require_rank(const Op& op, const Shape& s, std::size_t rank, const std::string& layout) {
  if (s.size() != rank) fail(op, "a " + str(static_cast<std::int64_t>(rank)) + "-D input " + layout);
}

void require_at_least(const Op& op, const char* attr, std::int64_t value, std::int64_t min) {
  if (value < min) fail(op, std::string(attr) + " >= " + str(min) + ", found " + str(value));
}

void require_positive_dims(const Op& op, const Shape& s, const char* what) {
  if (s.empty()) fail(op, std::string(what) + " with at least one dimension, found []");
  for (std::int64_t d : s)
    if (d < 1) fail(op, std::string(what) + " with positive dimensions, found " + to_string(s));
}

// ---------------------------------------------------------------- weight sharing

/// The [rows, cols] weight matrix an embedding or linear op uses.
Shape weight_matrix_of(const Op& op) {
  if (op.kind == OpKind::Embedding) return {op.attrs.vocab, op.attrs.out_features};
  return {op.attrs.out_features, op.attrs.in_features};
}

/// Before the kind's rules: does the named owner exist and own a weight matrix?
void check_weight_owner(const Op& op, const Op* owner) {
  const std::string& shared = op.attrs.shares_weights_with;
  if (shared.empty()) return;
  if (op.kind != OpKind::Linear && op.kind != OpKind::Embedding)
    fail(op, "no shares_weights_with (only linear and embedding ops share weights), found \"" + shared + "\"");
  if (owner == nullptr) fail(op, "shares_weights_with to name an earlier op, found \"" + shared + "\"");
  if (owner->kind != OpKind::Linear && owner->kind != OpKind::Embedding)
    fail(op, "shares_weights_with to name an embedding or linear op, found " + to_string(owner->kind) + " \"" +
                 owner->name + "\"");
  if (!owner->attrs.shares_weights_with.empty())
    fail(op, "shares_weights_with to name the op that owns the weight, but " + to_string(owner->kind) + " \"" +
                 owner->name + "\" itself shares \"" + owner->attrs.shares_weights_with + "\"");
}

/// After the kind's rules (which settle in_features): do the weight matrices match?
void check_shared_weight_shape(const Op& op, const Op* owner) {
  if (op.attrs.shares_weights_with.empty() || owner == nullptr) return;
  const Shape mine = weight_matrix_of(op);
  const Shape theirs = weight_matrix_of(*owner);
  if (mine != theirs)
    fail(op, "a weight of shape " + to_string(mine) + " equal to the shared weight " + to_string(theirs) + " of " +
                 to_string(owner->kind) + " \"" + owner->name + "\"");
}

// ---------------------------------------------------------------- per-kind rules

void infer_input(Op& op) {
  require_inputs(op, 0);
  require_positive_dims(op, op.output_shape, "an output_shape");
}

void infer_conv2d(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  require_rank(op, x, 4, "[N, C, H, W]");
  const OpAttrs& a = op.attrs;
  require_at_least(op, "out_channels", a.out_features, 1);
  require_at_least(op, "kernel height", a.kernel_h, 1);
  require_at_least(op, "kernel width", a.kernel_w, 1);
  require_at_least(op, "stride height", a.stride_h, 1);
  require_at_least(op, "stride width", a.stride_w, 1);
  require_at_least(op, "padding height", a.pad_h, 0);
  require_at_least(op, "padding width", a.pad_w, 0);
  require_at_least(op, "dilation height", a.dilation_h, 1);
  require_at_least(op, "dilation width", a.dilation_w, 1);
  require_at_least(op, "groups", a.groups, 1);
  if (x[1] % a.groups != 0)
    fail(op, "input channels (" + str(x[1]) + ") divisible by groups (" + str(a.groups) + ")");
  if (a.out_features % a.groups != 0)
    fail(op, "out_channels (" + str(a.out_features) + ") divisible by groups (" + str(a.groups) + ")");
  const std::int64_t kh = add(mul(a.dilation_h, a.kernel_h - 1), 1);
  const std::int64_t kw = add(mul(a.dilation_w, a.kernel_w - 1), 1);
  const std::int64_t ph = add(x[2], mul(2, a.pad_h));
  const std::int64_t pw = add(x[3], mul(2, a.pad_w));
  if (ph < kh || pw < kw)
    fail(op, "a padded input (" + hw(ph, pw) + ") at least as large as the dilated kernel (" + hw(kh, kw) + ")");
  op.output_shape = {x[0], a.out_features, (ph - kh) / a.stride_h + 1, (pw - kw) / a.stride_w + 1};
}

/// PyTorch's pooling output size, including its ceil_mode rule that the last window must start
/// inside the input or the left padding.
std::int64_t pool_output(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
  const std::int64_t span = add(in, mul(2, p)) - k;
  std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

void infer_pool2d(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  require_rank(op, x, 4, "[N, C, H, W]");
  const OpAttrs& a = op.attrs;
  require_at_least(op, "kernel height", a.kernel_h, 1);
  require_at_least(op, "kernel width", a.kernel_w, 1);
  require_at_least(op, "stride height", a.stride_h, 1);
  require_at_least(op, "stride width", a.stride_w, 1);
  require_at_least(op, "padding height", a.pad_h, 0);
  require_at_least(op, "padding width", a.pad_w, 0);
  if (mul(2, a.pad_h) > a.kernel_h || mul(2, a.pad_w) > a.kernel_w)
    fail(op, "padding (" + hw(a.pad_h, a.pad_w) + ") at most half the kernel (" + hw(a.kernel_h, a.kernel_w) + ")");
  const std::int64_t ph = add(x[2], mul(2, a.pad_h));
  const std::int64_t pw = add(x[3], mul(2, a.pad_w));
  if (ph < a.kernel_h || pw < a.kernel_w)
    fail(op,
         "a padded input (" + hw(ph, pw) + ") at least as large as the kernel (" + hw(a.kernel_h, a.kernel_w) + ")");
  op.output_shape = {x[0], x[1], pool_output(x[2], a.kernel_h, a.stride_h, a.pad_h, a.ceil_mode),
                     pool_output(x[3], a.kernel_w, a.stride_w, a.pad_w, a.ceil_mode)};
}

void infer_adaptive_avg_pool2d(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  require_rank(op, x, 4, "[N, C, H, W]");
  require_at_least(op, "output height", op.attrs.kernel_h, 1);
  require_at_least(op, "output width", op.attrs.kernel_w, 1);
  op.output_shape = {x[0], x[1], op.attrs.kernel_h, op.attrs.kernel_w};
}

void infer_linear(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  if (x.empty()) fail(op, "an input with a feature dimension");
  require_at_least(op, "out_features", op.attrs.out_features, 1);
  if (op.attrs.in_features == 0) op.attrs.in_features = x.back();
  if (x.back() != op.attrs.in_features)
    fail(op, "the last input dimension to be in_features = " + str(op.attrs.in_features));
  op.output_shape = x;
  op.output_shape.back() = op.attrs.out_features;
}

void infer_matmul(Op& op) {
  require_inputs(op, 2);
  const Shape& a = op.input_shapes[0];
  const Shape& b = op.input_shapes[1];
  if (a.size() < 2 || b.size() != 2) fail(op, "A [..., M, K] and B [K, N]");
  if (a.back() != b[0]) fail(op, "A's last dimension (" + str(a.back()) + ") to equal B's first (" + str(b[0]) + ")");
  op.output_shape = a;
  op.output_shape.back() = b[1];
}

void infer_batched_matmul(Op& op) {
  require_inputs(op, 2);
  const Shape& a = op.input_shapes[0];
  const Shape& b = op.input_shapes[1];
  if (a.size() < 3 || a.size() != b.size()) fail(op, "A [batch..., M, K] and B [batch..., K, N] of the same rank >= 3");
  for (std::size_t i = 0; i + 2 < a.size(); ++i)
    if (a[i] != b[i]) fail(op, "A and B to have the same batch dimensions");
  if (a.back() != b[b.size() - 2])
    fail(op, "A's last dimension (" + str(a.back()) + ") to equal B's second to last (" + str(b[b.size() - 2]) + ")");
  op.output_shape = a;
  op.output_shape.back() = b.back();
}

void infer_lstm(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  require_rank(op, x, 3, "[B, T, features]");
  require_at_least(op, "hidden", op.attrs.hidden, 1);
  require_at_least(op, "proj", op.attrs.proj, 0);
  if (op.attrs.proj >= op.attrs.hidden)
    fail(op, "proj (" + str(op.attrs.proj) + ") smaller than hidden (" + str(op.attrs.hidden) + ")");
  op.output_shape = {x[0], x[1], op.attrs.proj > 0 ? op.attrs.proj : op.attrs.hidden};
}

void infer_embedding(Op& op) {
  require_inputs(op, 1);
  require_at_least(op, "vocab", op.attrs.vocab, 1);
  require_at_least(op, "embedding_dim", op.attrs.out_features, 1);
  op.output_shape = op.input_shapes[0];
  op.output_shape.push_back(op.attrs.out_features);
}

void infer_norm(Op& op, std::size_t min_rank, const char* layout) {
  require_inputs(op, 1);
  if (op.input_shapes[0].size() < min_rank) fail(op, std::string("an input ") + layout);
  op.output_shape = op.input_shapes[0];
}

void infer_same_shape(Op& op) {
  require_inputs(op, 1);
  op.output_shape = op.input_shapes[0];
}

void infer_elementwise(Op& op) {
  require_min_inputs(op, 2);
  for (const Shape& s : op.input_shapes)
    if (s != op.input_shapes[0]) fail(op, "all inputs to have the same shape");
  op.output_shape = op.input_shapes[0];
}

void infer_concat(Op& op) {
  require_min_inputs(op, 1);
  const Shape& first = op.input_shapes[0];
  const auto rank = static_cast<std::int64_t>(first.size());
  if (op.attrs.axis < -rank || op.attrs.axis >= rank)
    fail(op, "axis in [" + str(-rank) + ", " + str(rank - 1) + "], found " + str(op.attrs.axis));
  if (op.attrs.axis < 0) op.attrs.axis += rank;  // stored normalized so equal models compare equal
  const auto axis = static_cast<std::size_t>(op.attrs.axis);
  op.output_shape = first;
  op.output_shape[axis] = 0;
  for (const Shape& s : op.input_shapes) {
    bool agree = s.size() == first.size();
    for (std::size_t i = 0; agree && i < s.size(); ++i) agree = (i == axis || s[i] == first[i]);
    if (!agree) fail(op, "inputs that agree in every dimension except axis " + str(op.attrs.axis));
    op.output_shape[axis] = add(op.output_shape[axis], s[axis]);
  }
}

void infer_dropout(Op& op) {
  require_inputs(op, 1);
  if (!(op.attrs.p >= 0.0 && op.attrs.p < 1.0)) {
    std::ostringstream ss;
    ss << "dropout probability p in [0, 1), found " << op.attrs.p;
    fail(op, ss.str());
  }
  op.output_shape = op.input_shapes[0];
}

void infer_cross_entropy(Op& op) {
  require_inputs(op, 1);
  if (op.input_shapes[0].empty()) fail(op, "logits [..., classes]");
  op.output_shape = {};  // a scalar loss
}

void infer_sampled_softmax(Op& op) {
  require_inputs(op, 1);
  if (op.input_shapes[0].size() < 2) fail(op, "an input [..., features] of rank >= 2");
  require_at_least(op, "vocab", op.attrs.vocab, 1);
  require_at_least(op, "num_sampled", op.attrs.num_sampled, 1);
  if (op.attrs.num_sampled > op.attrs.vocab)
    fail(op, "num_sampled (" + str(op.attrs.num_sampled) + ") at most vocab (" + str(op.attrs.vocab) + ")");
  op.output_shape = {};
}

void infer_reshape(Op& op) {
  require_inputs(op, 1);
  Shape target = op.output_shape;
  if (target.empty()) fail(op, "a target output_shape with at least one dimension, found []");
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (target[i] < 1) {
      fail(op, "a target shape of positive dimensions and at most one -1, found " + to_string(target));
    } else {
      known = mul(known, target[i]);
    }
  }
  const std::int64_t n = num_elements(op.input_shapes[0]);
  if (inferred >= 0 && n % known == 0) target[static_cast<std::size_t>(inferred)] = n / known;
  if ((inferred >= 0 && n % known != 0) || num_elements(target) != n)
    fail(op, "a target shape with " + str(n) + " elements, found " + to_string(op.output_shape));
  op.output_shape = target;
}

/// Head dimension of a packed [B, T, (heads + 2 kv_heads) * head_dim] q|k|v input (attention with
/// kv_heads = 0 is the classic [B, T, 3 D]); checks that the kv heads group the query heads.
std::int64_t packed_head_dim(const Op& op) {
  const std::int64_t heads = op.attrs.heads;
  const std::int64_t kv = op.attrs.kv_heads;
  const Shape& qkv = op.input_shapes[0];
  if (kv == 0) {
    require_rank(op, qkv, 3, "[B, T, 3 * D] (packed q, k, v)");
    if (qkv[2] % 3 != 0)
      fail(op, "a packed q, k, v input whose last dimension (" + str(qkv[2]) + ") is divisible by 3");
    const std::int64_t d = qkv[2] / 3;
    if (d % heads != 0) fail(op, "model dimension (" + str(d) + ") divisible by heads (" + str(heads) + ")");
    return d / heads;
  }
  require_rank(op, qkv, 3, "[B, T, (heads + 2 kv_heads) * head_dim] (packed q, k, v)");
  if (kv < 1 || kv > heads || heads % kv != 0)
    fail(op, "kv_heads in [1, heads] dividing heads (" + str(heads) + "), found " + str(kv));
  const std::int64_t slots = add(heads, mul(2, kv));
  if (qkv[2] % slots != 0)
    fail(op, "a packed q, k, v input whose last dimension (" + str(qkv[2]) + ") is divisible by heads + 2 kv_heads (" +
                 str(slots) + ")");
  return qkv[2] / slots;
}

void infer_rotary(Op& op) {
  require_inputs(op, 1);
  require_at_least(op, "heads", op.attrs.heads, 1);
  const std::int64_t hd = packed_head_dim(op);
  if (hd % 2 != 0) fail(op, "an even head dimension (rotary rotates pairs of features), found " + str(hd));
  op.output_shape = op.input_shapes[0];
}

void infer_swiglu(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  if (x.empty() || x.back() % 2 != 0)
    fail(op, "a fused gate|up input [..., 2 F] with an even last dimension");
  op.output_shape = x;
  op.output_shape.back() = x.back() / 2;
}

void infer_experts(Op& op) {
  require_inputs(op, 1);
  const OpAttrs& a = op.attrs;
  if (op.input_shapes[0].empty()) fail(op, "an input [..., features]");
  require_at_least(op, "experts", a.experts, 1);
  require_at_least(op, "top_k", a.top_k, 1);
  if (a.top_k > a.experts) fail(op, "top_k (" + str(a.top_k) + ") at most experts (" + str(a.experts) + ")");
  require_at_least(op, "expert width (out_features)", a.out_features, 1);
  if (!(a.capacity_factor >= 0.0 && a.capacity_factor <= 1e6)) fail(op, "capacity_factor >= 0 (0: dropless)");
  if (a.expert_shards < 1 || a.experts % a.expert_shards != 0)
    fail(op, "expert_shards (" + str(a.expert_shards) + ") dividing experts (" + str(a.experts) + ")");
  if (!(a.expert_load >= 1.0 && a.expert_load <= 1e3)) fail(op, "expert_load in [1, 1000]");
  require_at_least(op, "expert_tp", a.expert_tp, 1);
  op.output_shape = op.input_shapes[0];
}

void infer_gather(Op& op) {
  require_inputs(op, 1);
  const Shape& x = op.input_shapes[0];
  require_rank(op, x, 3, "[B, T, D] (gathered along the sequence axis T)");
  if (op.attrs.positions < 1 || op.attrs.positions > x[1])
    fail(op, "positions in [1, " + str(x[1]) + "] (at most the sequence length), found " + str(op.attrs.positions));
  op.output_shape = {x[0], op.attrs.positions, x[2]};
}

void infer_attention(Op& op) {
  require_at_least(op, "heads", op.attrs.heads, 1);
  require_at_least(op, "kv_heads", op.attrs.kv_heads, 0);
  const std::int64_t heads = op.attrs.heads;
  if (op.input_shapes.size() == 1) {
    const Shape& qkv = op.input_shapes[0];
    const std::int64_t hd = packed_head_dim(op);
    op.output_shape = {qkv[0], qkv[1], mul(heads, hd)};
    return;
  }
  if (op.attrs.kv_heads != 0) fail(op, "kv_heads only with one packed q, k, v input");
  if (op.input_shapes.size() != 3)
    fail(op,
         "1 input (packed qkv) or 3 inputs (q, k, v), found " + str(static_cast<std::int64_t>(op.input_shapes.size())));
  const Shape& q = op.input_shapes[0];
  const Shape& k = op.input_shapes[1];
  const Shape& v = op.input_shapes[2];
  if (q.size() != 3 || k.size() != 3 || v.size() != 3) fail(op, "q [B, Tq, D], k [B, Tk, D] and v [B, Tk, Dv]");
  if (q[0] != k[0] || q[0] != v[0] || k[1] != v[1] || q[2] != k[2])
    fail(op, "q [B, Tq, D], k [B, Tk, D] and v [B, Tk, Dv] with matching B, Tk and D");
  if (q[2] % heads != 0 || v[2] % heads != 0)
    fail(op,
         "q and v feature dimensions (" + str(q[2]) + ", " + str(v[2]) + ") divisible by heads (" + str(heads) + ")");
  op.output_shape = {q[0], q[1], v[2]};
}

}  // namespace

void infer_shape(Op& op, const Op* weight_owner) {
  check_weight_owner(op, weight_owner);
  switch (op.kind) {
    case OpKind::Input: infer_input(op); break;
    case OpKind::Conv2d: infer_conv2d(op); break;
    case OpKind::Linear: infer_linear(op); break;
    case OpKind::Matmul: infer_matmul(op); break;
    case OpKind::BatchedMatmul: infer_batched_matmul(op); break;
    case OpKind::Lstm: infer_lstm(op); break;
    case OpKind::Embedding: infer_embedding(op); break;
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: infer_pool2d(op); break;
    case OpKind::AdaptiveAvgPool2d: infer_adaptive_avg_pool2d(op); break;
    case OpKind::BatchNorm: infer_norm(op, 2, "[N, C, ...] of rank >= 2"); break;
    case OpKind::LayerNorm:
    case OpKind::RmsNorm: infer_norm(op, 1, "[..., features]"); break;
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::SquaredRelu:
    case OpKind::Softmax: infer_same_shape(op); break;
    case OpKind::Swiglu: infer_swiglu(op); break;
    case OpKind::Rotary: infer_rotary(op); break;
    case OpKind::Experts: infer_experts(op); break;
    case OpKind::Add:
    case OpKind::Mul: infer_elementwise(op); break;
    case OpKind::Concat: infer_concat(op); break;
    case OpKind::Dropout: infer_dropout(op); break;
    case OpKind::CrossEntropy: infer_cross_entropy(op); break;
    case OpKind::SampledSoftmax: infer_sampled_softmax(op); break;
    case OpKind::Reshape: infer_reshape(op); break;
    case OpKind::Attention: infer_attention(op); break;
    case OpKind::Gather: infer_gather(op); break;
  }
  check_shared_weight_shape(op, weight_owner);
  // Zero-sized tensors are never legal and would make per-sample numbers meaningless.
  for (std::int64_t d : op.output_shape)
    if (d < 1) fail(op, "an output with positive dimensions, found " + to_string(op.output_shape));
}

void infer_op(Op& op, const std::vector<const Op*>& producers, const Op* weight_owner) {
  op.input_shapes.clear();
  for (const Op* p : producers) op.input_shapes.push_back(p->output_shape);
  try {
    for (const Shape& s : op.input_shapes) (void)num_elements(s);
    infer_shape(op, weight_owner);
    compute_costs(op, producers);
  } catch (const ArithmeticOverflow&) {
    throw InputError(describe_op(op) + ": sizes overflow a 64-bit integer");
  } catch (const InputError& e) {
    // num_elements reports bare shapes; say which op they belong to.
    const std::string what = e.what();
    if (what.rfind("shape ", 0) == 0) throw InputError(describe_op(op) + ": " + what);
    throw;
  }
}

}  // namespace parasim::models::detail
