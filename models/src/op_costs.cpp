// Per-op costs: MACs (forward, data gradient, weight gradient), bytes moved, parameters and
// the activation bytes kept for backward. docs/models.md lists these formulas as a table.
//
// Conventions: MACs count the multiply-adds of matmul/conv-like ops only (bias, norms and
// elementwise ops have 0 MACs but do move bytes) - the way ptflops/fvcore and torchvision's
// published GFLOPS figures count. Bytes are dtype-sized; a dropout mask is 1 byte per element.
#include <algorithm>
#include <cmath>

#include "checked_math.hpp"
#include "op_inference.hpp"

namespace parasim::models::detail {

namespace {

bool fed_by_data(const Op* producer) { return producer->kind == OpKind::Input; }

bool all_fed_by_data(const std::vector<const Op*>& producers) {
  for (const Op* p : producers)
    if (!fed_by_data(p)) return false;
  return !producers.empty();
}

std::int64_t input_elements(const Op& op) {
  std::int64_t n = 0;
  for (const Shape& s : op.input_shapes) n = add(n, num_elements(s));
  return n;
}

/// What a weighted op owns and reads: weight elements read in forward, parameters owned.
struct Weights {
  std::int64_t read = 0;
  std::int64_t params = 0;
};

Weights weights_of(const Op& op) {
  const OpAttrs& a = op.attrs;
  const bool shared = !a.shares_weights_with.empty();
  switch (op.kind) {
    case OpKind::Conv2d: {
      const std::int64_t w = mul({a.out_features, op.input_shapes[0][1] / a.groups, a.kernel_h, a.kernel_w});
      const std::int64_t n = add(w, a.bias ? a.out_features : 0);
      return {n, n};
    }
    case OpKind::Linear: {
      const std::int64_t w = mul(a.out_features, a.in_features);
      const std::int64_t b = a.bias ? a.out_features : 0;
      return {add(w, b), shared ? b : add(w, b)};
    }
    case OpKind::Lstm: {
      // PyTorch nn.LSTM(in, hidden, proj_size): W_ih [4h, in], W_hh [4h, r], b_ih + b_hh [4h each],
      // W_hr [proj, h]; r = proj if projecting else hidden.
      const std::int64_t in = op.input_shapes[0][2];
      const std::int64_t r = a.proj > 0 ? a.proj : a.hidden;
      const std::int64_t n =
          add({mul({4, a.hidden, add(in, r)}), a.bias ? mul(8, a.hidden) : 0, mul(a.hidden, a.proj)});
      return {n, n};
    }
    case OpKind::Embedding: {
      // Forward gathers one row per token, not the whole table.
      const std::int64_t rows = num_elements(op.input_shapes[0]);
      return {mul(rows, a.out_features), shared ? 0 : mul(a.vocab, a.out_features)};
    }
    case OpKind::BatchNorm: {
      const std::int64_t c = op.input_shapes[0][1];
      return {mul(2, c), mul(2, c)};
    }
    case OpKind::LayerNorm: {
      const std::int64_t c = op.input_shapes[0].back();
      const std::int64_t n = a.norm_bias ? mul(2, c) : c;  // gamma (+ beta)
      return {n, n};
    }
    case OpKind::RmsNorm: {
      const std::int64_t c = op.input_shapes[0].back();  // gamma only
      return {c, c};
    }
    case OpKind::Experts: {
      // Router [E, D] plus E experts of 3 (gated) or 2 matrices [F, D]; no biases (Mixtral, DeepSeek).
      const std::int64_t d = op.input_shapes[0].back();
      // With expert parallelism the rank holds experts / expert_shards of them and the whole router.
      const std::int64_t n =
          add(mul(a.experts, d), mul({a.experts / a.expert_shards, a.gated ? 3 : 2, d, a.out_features}));
      return {n, n};
    }
    case OpKind::SampledSoftmax: {
      // Owns the full softmax weights [vocab, d] + bias; forward touches the true rows and the samples.
      const std::int64_t d = op.input_shapes[0].back();
      const std::int64_t rows = num_elements(op.input_shapes[0]) / d;
      const std::int64_t touched = std::min(a.vocab, add(rows, a.num_sampled));
      return {mul(touched, d + 1), mul(a.vocab, d + 1)};
    }
    case OpKind::Attention: {
      if (!a.additive) return {};
      // Bahdanau (normalized): score vector v [D], normalization bias b [D] and scalar g.
      const std::int64_t d = op.input_shapes.size() == 1 ? op.input_shapes[0][2] / 3 : op.input_shapes[0][2];
      const std::int64_t n = add(mul(2, d), 1);
      return {n, n};
    }
    default: return {};
  }
}

}  // namespace

/// Token slots the experts compute: tokens x top_k when dropless, else E x the per-expert capacity
/// ceil(capacity_factor x tokens x top_k / E) (GShard's and Switch Transformer's padding). Under
/// expert parallelism a rank receives from each of the E ranks of its group the slots of its
/// E-th of the experts - the same count on average - so only the load factor (dropless) changes it;
/// with a capacity the padded count is computed whatever the load (overflow is dropped).
std::int64_t routed_slots(const Op& op) {
  const OpAttrs& a = op.attrs;
  const std::int64_t tokens = num_elements(op.input_shapes[0]) / op.input_shapes[0].back();
  const std::int64_t routed = mul(tokens, a.top_k);
  if (a.capacity_factor <= 0.0) {
    if (a.expert_load == 1.0) return routed;
    const double busiest = std::ceil(a.expert_load * static_cast<double>(routed));
    if (!(busiest < 9e18)) throw ArithmeticOverflow();
    return static_cast<std::int64_t>(busiest);
  }
  const double per_expert = std::ceil(a.capacity_factor * static_cast<double>(routed) / static_cast<double>(a.experts));
  if (!(per_expert < 9e18 / static_cast<double>(a.experts))) throw ArithmeticOverflow();
  return mul(a.experts, static_cast<std::int64_t>(per_expert));
}

namespace {

/// Attention dimensions: batch, heads, query length, key length, q/k features, v features.
struct AttentionDims {
  std::int64_t b, heads, tq, tk, d, dv;
};

AttentionDims attention_dims(const Op& op) {
  if (op.input_shapes.size() == 1) {
    // Packed [B, T, (heads + 2 kv_heads) hd]: grouped-query attention shares each K/V head among
    // heads / kv_heads query heads, so the score and context matmuls are those of full MHA.
    const Shape& x = op.input_shapes[0];
    const std::int64_t kv = op.attrs.kv_heads > 0 ? op.attrs.kv_heads : op.attrs.heads;
    const std::int64_t d = x[2] / (op.attrs.heads + 2 * kv) * op.attrs.heads;
    return {x[0], op.attrs.heads, x[1], x[1], d, d};
  }
  const Shape& q = op.input_shapes[0];
  const Shape& v = op.input_shapes[2];
  return {q[0], op.attrs.heads, q[1], v[1], q[2], v[2]};
}

void compute_macs(Op& op, const std::vector<const Op*>& producers) {
  const OpAttrs& a = op.attrs;
  op.macs_fwd = op.macs_bwd_data = op.macs_bwd_weight = 0;
  switch (op.kind) {
    case OpKind::Conv2d: {
      const Shape& y = op.output_shape;
      op.macs_fwd = mul({y[0], y[1], y[2], y[3], op.input_shapes[0][1] / a.groups, a.kernel_h, a.kernel_w});
      // Frameworks skip the gradient w.r.t. the data batch: nobody consumes it.
      op.macs_bwd_data = fed_by_data(producers[0]) ? 0 : op.macs_fwd;
      op.macs_bwd_weight = op.macs_fwd;
      break;
    }
    case OpKind::Linear: {
      op.macs_fwd = mul(num_elements(op.input_shapes[0]), a.out_features);
      op.macs_bwd_data = fed_by_data(producers[0]) ? 0 : op.macs_fwd;
      op.macs_bwd_weight = op.macs_fwd;
      break;
    }
    case OpKind::Matmul:
    case OpKind::BatchedMatmul: {
      // Both operands are activations: backward computes dA = dC B^T and dB = A^T dC.
      op.macs_fwd = mul(num_elements(op.input_shapes[0]), op.output_shape.back());
      for (const Op* p : producers)
        if (!fed_by_data(p)) op.macs_bwd_data = add(op.macs_bwd_data, op.macs_fwd);
      break;
    }
    case OpKind::Lstm: {
      // Per time step: 4 gates x (in + r) x hidden, plus the projection hidden x proj.
      const Shape& x = op.input_shapes[0];
      const std::int64_t r = a.proj > 0 ? a.proj : a.hidden;
      const std::int64_t per_step = add(mul({4, a.hidden, add(x[2], r)}), mul(a.hidden, a.proj));
      op.macs_fwd = mul({x[0], x[1], per_step});
      op.macs_bwd_data = fed_by_data(producers[0]) ? 0 : op.macs_fwd;
      op.macs_bwd_weight = op.macs_fwd;
      break;
    }
    case OpKind::Experts: {
      // Router logits for every token the rank routes, then each slot through one expert's 2 or 3
      // matrices.
      const std::int64_t d = op.input_shapes[0].back();
      const std::int64_t tokens = expert_router_tokens(op);
      op.macs_fwd = add(mul({tokens, d, a.experts}), mul({routed_slots(op), a.gated ? 3 : 2, d, a.out_features}));
      op.macs_bwd_data = fed_by_data(producers[0]) ? 0 : op.macs_fwd;
      op.macs_bwd_weight = op.macs_fwd;
      break;
    }
    case OpKind::SampledSoftmax: {
      // Logits of the true class and of the shared negative samples for every row.
      const std::int64_t d = op.input_shapes[0].back();
      const std::int64_t rows = num_elements(op.input_shapes[0]) / d;
      op.macs_fwd = mul({rows, add(a.num_sampled, 1), d});
      op.macs_bwd_data = fed_by_data(producers[0]) ? 0 : op.macs_fwd;
      op.macs_bwd_weight = op.macs_fwd;
      break;
    }
    case OpKind::Attention: {
      // Two batched matmuls: scores Q K^T and context P V. Backward: dQ, dK, dP, dV = 2 x forward.
      const AttentionDims d = attention_dims(op);
      const std::int64_t pairs = mul({d.b, d.tq, d.tk});
      op.macs_fwd = mul(pairs, add(d.d, d.dv));
      op.macs_bwd_data = all_fed_by_data(producers) ? 0 : mul(2, op.macs_fwd);
      op.macs_bwd_weight = a.additive ? mul(pairs, d.d) : 0;
      break;
    }
    default: break;  // no multiply-accumulates
  }
}

/// Kinds whose backward reads their inputs as they are: GEMMs, norms, activations that need x
/// (SwiGLU's gate and up), max-pool (cuDNN's backward reads x and y).
bool kind_keeps_inputs(OpKind kind) {
  switch (kind) {
    case OpKind::Conv2d:
    case OpKind::Linear:
    case OpKind::Matmul:
    case OpKind::BatchedMatmul:
    case OpKind::BatchNorm:
    case OpKind::LayerNorm:
    case OpKind::RmsNorm:
    case OpKind::Swiglu:
    case OpKind::SquaredRelu:
    case OpKind::Gelu:
    case OpKind::Mul:
    case OpKind::MaxPool2d: return true;
    default: return false;
  }
}

std::int64_t activation_elements_kept(const Op& op) {
  const OpAttrs& a = op.attrs;
  const std::int64_t in = input_elements(op);
  const std::int64_t out = num_elements(op.output_shape);
  // One list of which ops keep their inputs or output, shared with the lowering's sharing of kept
  // tensors (keeps_its_inputs, keeps_its_output); an embedding keeps its token ids.
  const bool inputs = kind_keeps_inputs(op.kind) || op.kind == OpKind::Embedding;
  const bool output = keeps_its_output(op);
  if (inputs || output) return add(inputs ? in : 0, output ? out : 0);
  switch (op.kind) {
    case OpKind::Lstm: {
      // Input, 4 gates, cell state and tanh(cell), the hidden state, and the output r (the
      // projected state when projecting, which also keeps the unprojected hidden state).
      const Shape& x = op.input_shapes[0];
      const std::int64_t per_step = add({mul(7, a.hidden), a.proj});
      return add(in, mul({x[0], x[1], per_step}));
    }
    case OpKind::Experts: {
      // Input, router probabilities, and per slot the dispatched token and the expert's hidden
      // activations (gate, up and their product; or pre- and post-activation).
      const std::int64_t d = op.input_shapes[0].back();
      const std::int64_t per_slot = add(d, mul(a.gated ? 3 : 2, a.out_features));
      return add({in, mul(in / d, a.experts), mul(routed_slots(op), per_slot)});
    }
    case OpKind::SampledSoftmax: {
      const std::int64_t rows = in / op.input_shapes[0].back();
      return add(in, mul(rows, add(a.num_sampled, 1)));
    }
    case OpKind::Attention: {
      const AttentionDims d = attention_dims(op);
      return add(in, mul({d.b, d.heads, d.tq, d.tk}));  // q, k, v and the attention probabilities
    }
    default: return 0;  // input, pools without indices, add, concat, reshape; dropout is below
  }
}

/// Bytes an FP8 GEMM op keeps for its backward: Transformer Engine saves the FP8 casts its GEMMs
/// read (1 B an element: te.Linear's `inputmat_t`, an MLP's fc2 input), and in bf16 only what
/// other kernels need - the router's input and probabilities, an expert MLP's pre-activations.
std::int64_t fp8_kept_bytes(const Op& op, std::int64_t dt) {
  const std::int64_t in = input_elements(op);
  if (op.kind != OpKind::Experts) return in;
  const OpAttrs& a = op.attrs;
  const std::int64_t d = op.input_shapes[0].back();
  const std::int64_t slots = routed_slots(op);
  const std::int64_t fp8 = mul(slots, add(d, a.out_features));  // dispatched tokens, fc2 inputs
  const std::int64_t bf16 = add({in, mul(in / d, a.experts), mul({slots, a.gated ? 2 : 1, a.out_features})});
  return add(fp8, mul(bf16, dt));
}

}  // namespace

void compute_costs(Op& op, const std::vector<const Op*>& producers) {
  const std::int64_t dt = dtype_size(op.dtype);
  const Weights w = weights_of(op);
  op.params = w.params;
  compute_macs(op, producers);
  if (op.kind == OpKind::Input || op.kind == OpKind::Reshape) {
    // The data batch costs nothing inside the step; a reshape is a view.
    op.bytes_read = op.bytes_written = op.activation_bytes = 0;
    return;
  }
  const std::int64_t out = num_elements(op.output_shape);
  op.bytes_read = mul(add(input_elements(op), w.read), dt);
  op.bytes_written = mul(out, dt);
  op.activation_bytes = fp8_gemm(op) ? fp8_kept_bytes(op, dt) : mul(activation_elements_kept(op), dt);
  if (op.kind == OpKind::Rotary) {
    // Rotates the q and k heads in place (v passes untouched) with a cos|sin table of T x hd
    // values; the backward is the inverse rotation of dq, dk and needs no saved activation.
    const Shape& x = op.input_shapes[0];
    const std::int64_t kv = op.attrs.kv_heads > 0 ? op.attrs.kv_heads : op.attrs.heads;
    const std::int64_t hd = x[2] / (op.attrs.heads + 2 * kv);
    const std::int64_t qk = mul({x[0], x[1], add(op.attrs.heads, kv), hd});
    op.bytes_read = mul(add(qk, mul(x[1], hd)), dt);
    op.bytes_written = mul(qk, dt);
    op.activation_bytes = 0;
  }
  if (op.kind == OpKind::CrossEntropy) {
    // Megatron-LM (logits.float() unless --fp16-lm-cross-entropy) and torch.autocast (cross_entropy
    // is on its fp32 list) form the loss in fp32 from 16-bit logits: the forward holds the logits
    // and their fp32 copy while it keeps the fp32 log-softmax for the backward, which then holds the
    // fp32 gradients of the log-softmax's output and input. Vocabulary-wide, these set the peak.
    // A fused kernel (flash-attn's xentropy, Megatron-Core's fusion) keeps the logits themselves
    // and one fp32 log-sum-exp per row, and writes their gradient in the logits' dtype.
    const std::int64_t logits = input_elements(op);
    if (op.attrs.fused) {
      const std::int64_t rows =
          op.input_shapes.empty() ? 0 : logits / std::max<std::int64_t>(1, op.input_shapes[0].back());
      op.activation_bytes = add(mul(logits, dt), mul(rows, 4));
      op.transient_fwd_bytes = 0;
      op.transient_bwd_bytes = mul(logits, dt);
    } else {
      op.activation_bytes = mul(logits, 4);
      op.transient_fwd_bytes = mul(logits, dt < 4 ? dt + 4 : dt);
      op.transient_bwd_bytes = mul(logits, 8);
    }
  }
  if (op.kind == OpKind::Dropout) {
    op.bytes_written = add(op.bytes_written, out);  // the mask, 1 byte per element
    op.activation_bytes = out;
  }
  if (op.kind == OpKind::Gather) {
    // Reads only the P selected rows of each sample plus the P int64 indices, which the backward
    // keeps to scatter its gradient (its zero-filled [B, T, D] input gradient is priced there).
    op.bytes_read = add(mul(out, dt), mul(kGatherIndexBytes, op.attrs.positions));
    op.activation_bytes = mul(kGatherIndexBytes, op.attrs.positions);
  }
}

}  // namespace parasim::models::detail

namespace parasim::models {

void set_fused_loss(Model& m, bool fused) {
  for (OpId v = 0; v < m.num_ops(); ++v) {
    if (m.op(v).kind != OpKind::CrossEntropy) continue;
    m.op(v).attrs.fused = fused;
    std::vector<const Op*> producers;
    for (OpId u : m.inputs_of(v)) producers.push_back(&m.op(u));
    detail::compute_costs(m.op(v), producers);
  }
}

bool keeps_its_inputs(const Op& op) {
  return detail::kind_keeps_inputs(op.kind) && !fp8_gemm(op);  // an FP8 GEMM keeps its own 1-byte cast
}

bool keeps_its_output(const Op& op) {
  switch (op.kind) {
    case OpKind::Relu:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Softmax:
    case OpKind::MaxPool2d: return true;
    default: return false;
  }
}

std::int64_t expert_slots(const Op& op) {
  return op.kind == OpKind::Experts && !op.input_shapes.empty() ? detail::routed_slots(op) : 0;
}

std::int64_t expert_router_tokens(const Op& op) {
  if (op.kind != OpKind::Experts || op.input_shapes.empty()) return 0;
  const std::int64_t tokens = num_elements(op.input_shapes[0]) / op.input_shapes[0].back();
  return (tokens + op.attrs.expert_tp - 1) / op.attrs.expert_tp;
}

bool fp8_gemm(const Op& op) {
  return op.dtype == DType::FP8 && (op.kind == OpKind::Linear || op.kind == OpKind::Experts) && !op.block.empty();
}

}  // namespace parasim::models
