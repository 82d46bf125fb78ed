#include "parasim/strategies/expert_parallel.hpp"

#include <numeric>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::strategies {

using models::OpKind;

std::int64_t experts_gcd(const models::Model& m) {
  std::int64_t g = 0;
  for (models::OpId v = 0; v < m.num_ops(); ++v)
    if (m.op(v).kind == OpKind::Experts) g = std::gcd(g, m.op(v).attrs.experts);
  return g;
}

models::Model shard_for_expert_parallel(const models::Model& m, int ep, double load, int etp) {
  if (ep == 1 && load == 1.0 && etp == 1) return m;
  models::ModelBuilder b(m.name(), m.batch(), m.dtype());
  b.set_dataset(m.dataset());
  for (models::OpId v = 0; v < m.num_ops(); ++v) {
    const models::Op& src = m.op(v);
    models::Op op = models::op_to_rebuild(src);
    if (src.kind == OpKind::Experts) {
      if (src.attrs.experts % ep != 0)
        throw InputError("ep=" + std::to_string(ep) + ": op " + src.name + " of model " + m.name() + " has " +
                         std::to_string(src.attrs.experts) + " experts, not divisible by " + std::to_string(ep) +
                         " (each rank of an expert-parallel group holds experts / ep of them)");
      if (src.attrs.out_features % etp != 0)
        throw InputError("etp=" + std::to_string(etp) + ": op " + src.name + " of model " + m.name() +
                         " has experts of FFN width " + std::to_string(src.attrs.out_features) + ", not divisible by " +
                         std::to_string(etp) +
                         " (expert tensor parallelism splits each expert's FFN over the TP ranks)");
      op.attrs.expert_shards = src.attrs.expert_shards * ep;
      op.attrs.expert_load = load;
      op.attrs.out_features = src.attrs.out_features / etp;
      op.attrs.expert_tp = src.attrs.expert_tp * etp;
    }
    b.add_op(std::move(op), m.inputs_of(v));
  }
  return b.finish();
}

std::int64_t expert_params(const models::Op& op) {
  if (op.kind != OpKind::Experts || op.input_shapes.empty()) return 0;
  return op.params - op.attrs.experts * op.input_shapes[0].back();  // the router is [E, D]
}

Bytes all_to_all_bytes(const models::Op& op) {
  if (op.kind != OpKind::Experts || op.input_shapes.empty()) return 0;
  return models::expert_slots(op) * op.input_shapes[0].back() * models::dtype_size(op.dtype);
}

}  // namespace parasim::strategies
