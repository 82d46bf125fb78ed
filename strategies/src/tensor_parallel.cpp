#include "parasim/strategies/tensor_parallel.hpp"

#include <algorithm>
#include <map>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/model_json.hpp"

namespace parasim::strategies {

namespace {

using models::Model;
using models::Op;
using models::OpId;
using models::OpKind;

std::string top_level(const std::string& block) { return block.substr(0, block.find('/')); }

bool is_self_attention(const Op& op) { return op.kind == OpKind::Attention && op.input_shapes.size() == 1; }

bool may_be_split(const Op& op) {
  switch (op.kind) {
    case OpKind::Gelu:
    case OpKind::Relu:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Dropout:
    case OpKind::Softmax:
    case OpKind::Swiglu:       // gate and up halves are split alike (Megatron interleaves them per rank)
    case OpKind::SquaredRelu:
    case OpKind::Rotary: return true;
    case OpKind::Attention: return is_self_attention(op);
    default: return false;
  }
}

/// Roles of one block's ops (in order), or an empty vector when the block cannot be split.
std::vector<TpRole> block_roles(const Model& m, const std::vector<OpId>& ops) {
  std::vector<TpRole> roles;
  std::map<OpId, TpRole> role_of;
  bool open = false;
  auto fed_by_region = [&](OpId v) {
    for (OpId u : m.inputs_of(v)) {
      const auto it = role_of.find(u);
      if (it == role_of.end() || (it->second != TpRole::Column && it->second != TpRole::Split)) return false;
    }
    return true;
  };
  for (OpId v : ops) {
    const Op& op = m.op(v);
    TpRole r = TpRole::Replicated;
    if (op.kind == OpKind::Linear && op.attrs.shares_weights_with.empty()) {
      if (open && !fed_by_region(v)) return {};
      r = open ? TpRole::Row : TpRole::Column;
      open = !open;
    } else if (open) {
      if (!may_be_split(op) || !fed_by_region(v)) return {};
      r = TpRole::Split;
    }
    roles.push_back(r);
    role_of[v] = r;
  }
  if (open) return {};
  return roles;
}

/// The grouped-query op (rotary or attention) a column-parallel q|k|v projection feeds, if any.
const Op* grouped_query_consumer(const Model& m, OpId v) {
  for (OpId w : m.consumers_of(v)) {
    const Op& c = m.op(w);
    if ((c.kind == OpKind::Rotary || is_self_attention(c)) && c.attrs.kv_heads > 0) return &c;
  }
  return nullptr;
}

}  // namespace

bool tp_fits_kv_heads(std::int64_t kv_heads, std::int64_t tp) {
  return kv_heads <= 0 || kv_heads % tp == 0 || tp % kv_heads == 0;
}

std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp, const std::string& op_name) {
  if (!tp_fits_kv_heads(kv_heads, tp))
    throw InputError("tp=" + std::to_string(tp) + ": op " + op_name + " has " + std::to_string(kv_heads) +
                     " key/value heads; expected a tp that divides them or that they divide (replicated K/V heads)");
  return kv_heads % tp == 0 ? kv_heads / tp : 1;
}

std::string to_string(TpRole r) {
  switch (r) {
    case TpRole::Replicated: return "replicated";
    case TpRole::Column: return "column";
    case TpRole::Split: return "split";
    case TpRole::Row: return "row";
    case TpRole::VocabEmbedding: return "vocab-embedding";
  }
  return "?";
}

TpPlan plan_tensor_parallel(const Model& m) {
  const std::size_t n = m.num_ops();
  TpPlan plan;
  plan.role.assign(n, TpRole::Replicated);
  plan.in_tp_block.assign(n, 0);
  // Blocks in order of first appearance.
  std::vector<std::string> names;
  std::map<std::string, std::vector<OpId>> members;
  for (OpId v = 0; v < n; ++v) {
    const std::string b = top_level(m.op(v).block);
    if (b.empty()) continue;
    auto [it, fresh] = members.try_emplace(b);
    if (fresh) names.push_back(b);
    it->second.push_back(v);
  }
  for (const std::string& b : names) {
    const std::vector<OpId>& ops = members[b];
    const bool has_attention =
        std::any_of(ops.begin(), ops.end(), [&](OpId v) { return is_self_attention(m.op(v)); });
    if (!has_attention) continue;
    const std::vector<TpRole> roles = block_roles(m, ops);
    if (roles.empty()) continue;
    ++plan.blocks;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      plan.role[ops[i]] = roles[i];
      plan.in_tp_block[ops[i]] = 1;
      if (is_self_attention(m.op(ops[i]))) {
        const models::OpAttrs& a = m.op(ops[i]).attrs;
        plan.max_heads = std::max(plan.max_heads, static_cast<int>(a.heads));
        if (a.kv_heads > 0 && a.kv_heads < a.heads)
          plan.min_kv_heads = plan.min_kv_heads == 0 ? static_cast<int>(a.kv_heads)
                                                     : std::min(plan.min_kv_heads, static_cast<int>(a.kv_heads));
      }
    }
  }
  if (!plan.any()) return plan;
  // The LM head: a Linear feeding the loss. The token embedding becomes vocabulary-parallel,
  // tied to the head or not: Megatron-LM's VocabParallelEmbedding splits the table whatever the
  // tying (an untied table is its own vocab x hidden weight on every rank otherwise). Position and
  // token-type tables stay whole.
  for (OpId v = 0; v < n; ++v) {
    const Op& op = m.op(v);
    if (op.kind != OpKind::Linear || plan.in_tp_block[v]) continue;
    bool feeds_loss = false;
    for (OpId w : m.consumers_of(v)) feeds_loss = feeds_loss || m.op(w).kind == OpKind::CrossEntropy;
    if (!feeds_loss) continue;
    plan.role[v] = TpRole::Column;
    if (!op.attrs.shares_weights_with.empty()) {
      if (auto owner = m.find_op(op.attrs.shares_weights_with); owner && m.op(*owner).kind == OpKind::Embedding)
        plan.role[*owner] = TpRole::VocabEmbedding;
      continue;
    }
    for (OpId e = 0; e < n; ++e)
      if (m.op(e).kind == OpKind::Embedding && m.op(e).attrs.vocab == op.attrs.out_features)
        plan.role[e] = TpRole::VocabEmbedding;
  }
  return plan;
}

Model shard_for_tensor_parallel(const Model& m, const TpPlan& plan, int tp) {
  if (tp == 1) return m;
  return shard_for_tensor_parallel(m, plan, tp, m.batch(), m.dtype());
}

Model shard_for_tensor_parallel(const Model& m, const TpPlan& plan, int tp, std::int64_t batch, models::DType dtype) {
  if (tp == 1) return models::with_batch(m, batch, dtype);
  auto ceil_div = [&](std::int64_t x) { return (x + tp - 1) / tp; };
  models::ModelBuilder b(m.name(), batch, dtype);
  b.set_dataset(m.dataset());
  for (OpId v = 0; v < m.num_ops(); ++v) {
    const Op& src = m.op(v);
    Op op = models::op_to_rebuild(src);
    // Inputs and reshapes: the batch override of models::with_batch().
    if (!op.output_shape.empty() && op.output_shape[0] == m.batch()) op.output_shape[0] = batch;
    if (op.kind == OpKind::Linear) op.attrs.in_features = 0;  // re-inferred from the (maybe split) input
    const Op* gqa = plan.role[v] == TpRole::Column ? grouped_query_consumer(m, v) : nullptr;
    switch (plan.role[v]) {
      case TpRole::Column:
        if (gqa != nullptr) {
          // q|k|v projection of grouped-query attention: heads / T query heads and the rank's K/V heads.
          const std::int64_t hd = src.attrs.out_features / (gqa->attrs.heads + 2 * gqa->attrs.kv_heads);
          op.attrs.out_features =
              (gqa->attrs.heads / tp + 2 * kv_heads_per_rank(gqa->attrs.kv_heads, tp, gqa->name)) * hd;
        } else {
          op.attrs.out_features = ceil_div(src.attrs.out_features);
        }
        break;
      case TpRole::VocabEmbedding: op.attrs.vocab = ceil_div(src.attrs.vocab); break;
      case TpRole::Split:
        if (op.kind == OpKind::Attention || op.kind == OpKind::Rotary) {
          if (src.attrs.heads % tp != 0)
            throw InputError("tp=" + std::to_string(tp) + ": op " + src.name + " of model " + m.name() + " has " +
                             std::to_string(src.attrs.heads) + " attention heads, not divisible by " +
                             std::to_string(tp) + " (Megatron splits whole heads across the TP ranks)");
          op.attrs.heads = src.attrs.heads / tp;
          if (src.attrs.kv_heads > 0) {
            op.attrs.kv_heads = kv_heads_per_rank(src.attrs.kv_heads, tp, src.name);
            // One query head per rank and one replicated K/V head: keep the layout grouped-query.
            op.attrs.kv_heads = std::min(op.attrs.kv_heads, op.attrs.heads);
          }
        }
        break;
      default: break;
    }
    if (plan.role[v] == TpRole::Column && gqa == nullptr && src.attrs.shares_weights_with.empty() &&
        src.attrs.out_features % tp != 0 && plan.in_tp_block[v])
      throw InputError("tp=" + std::to_string(tp) + ": linear " + src.name + " has " +
                       std::to_string(src.attrs.out_features) + " output features, not divisible by " +
                       std::to_string(tp));
    b.add_op(std::move(op), m.inputs_of(v));
  }
  return b.finish();
}

}  // namespace parasim::strategies
