#include "parasim/strategies/context_parallel.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::strategies {

using models::OpKind;

bool is_ring_attention(const models::Op& op) {
  return op.kind == OpKind::Attention && op.input_shapes.size() == 1 && op.input_shapes[0].size() == 3;
}

std::int64_t attention_seq_len(const models::Model& m) {
  for (models::OpId v = 0; v < m.num_ops(); ++v)
    if (is_ring_attention(m.op(v))) return m.op(v).input_shapes[0][1];
  return 0;
}

models::Model shard_for_context_parallel(const models::Model& m, int cp) {
  if (cp == 1) return m;
  const std::int64_t seq = attention_seq_len(m);
  if (seq == 0)
    throw InputError("cp=" + std::to_string(cp) + ": model " + m.name() +
                     " has no self-attention; context parallelism (cp > 1) splits the sequence of transformer "
                     "layers");
  if (seq % (2 * static_cast<std::int64_t>(cp)) != 0)
    throw InputError("cp=" + std::to_string(cp) + ": the sequence of model " + m.name() + " (--seq-len " +
                     std::to_string(seq) + ") does not split into 2 x cp = " + std::to_string(2 * cp) +
                     " equal chunks (load-balanced causal ring attention); expected a cp with 2 x cp dividing " +
                     std::to_string(seq));
  models::ModelBuilder b(m.name(), m.batch(), m.dtype());
  b.set_dataset(m.dataset());
  for (models::OpId v = 0; v < m.num_ops(); ++v) {
    models::Op op = models::op_to_rebuild(m.op(v));
    // [batch, seq, ...] inputs and reshapes: token and position ids, and views that keep the sequence axis.
    if (op.output_shape.size() >= 2 && op.output_shape[1] == seq) op.output_shape[1] = seq / cp;
    if (op.kind == OpKind::Linear) op.attrs.in_features = 0;  // re-inferred
    // A gather along the sequence (BERT's masked positions) keeps the busiest rank's share of them.
    if (op.kind == OpKind::Gather) op.attrs.positions = std::min(seq / cp, (op.attrs.positions + cp - 1) / cp);
    b.add_op(std::move(op), m.inputs_of(v));
  }
  models::Model out = b.finish();
  if (attention_seq_len(out) != seq / cp)
    throw InputError("cp=" + std::to_string(cp) + ": model " + m.name() +
                     " does not carry its sequence on axis 1 of its inputs; context parallelism cannot split it");
  return out;
}

Bytes ring_kv_bytes(const models::Op& op) {
  if (!is_ring_attention(op)) return 0;
  const models::Shape& x = op.input_shapes[0];
  const std::int64_t kv = op.attrs.kv_heads > 0 ? op.attrs.kv_heads : op.attrs.heads;
  const std::int64_t head_dim = x[2] / (op.attrs.heads + 2 * kv);
  return x[0] * x[1] * 2 * kv * head_dim * models::dtype_size(op.dtype);
}

}  // namespace parasim::strategies
