#include "prepare_variants.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "parasim/common/error.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/expert_parallel.hpp"

namespace parasim::strategies::detail {

namespace {

TimeNs ceil_div(TimeNs x, std::int64_t d) { return (x + d - 1) / d; }

/// The attention probabilities [b, heads, s, s] a self-attention op keeps for its backward: the
/// 5as/h term of Korthikanti et al. that selective recomputation drops.
Bytes attention_probs_bytes(const models::Op& op) {
  const models::Shape& x = op.input_shapes[0];
  return x[0] * op.attrs.heads * x[1] * x[1] * models::dtype_size(op.dtype);
}

}  // namespace

double accumulation_passes(const Prepared& p) {
  // Asynchronous schedules (PipeDream, SpecTrain) update the weights after every micro-batch.
  return grad_accumulation_passes_per_micro_batch(p.setup->grad_accumulation, p.dtype, p.async ? 1 : p.micro_batches);
}

Variant make_variant(const Prepared& p, std::int64_t micro) {
  Variant v;
  v.micro = micro;
  v.model = p.cache->model(*p.setup->model, micro, p.dtype, p.tp_ranks, p.ep, p.ep > 1 ? p.s.imbalance : 1.0, p.cp,
                           p.etp ? p.tp_ranks : 1);
  if (p.structure != nullptr && v.model->num_ops() != p.n)
    throw RuntimeError("model " + p.structure->name() + " has a different number of ops at batch " +
                       std::to_string(micro));
  const bool zero = p.s.zero >= 1 && p.grad_ranks() > 1;
  const double passes = accumulation_passes(p);
  const Bytes accumulated_per_param = grad_accumulation_bytes_per_param(p.setup->grad_accumulation, p.dtype);
  v.kept.assign(v.model->num_ops(), 0);
  for (const std::string& kind : p.kinds) {
    const auto costs = p.cache->costs(v.model, kind, p.setup->optimizer, *p.setup->costs);
    // One pass per distinct parameter count: a transformer's layers repeat a handful of them.
    std::vector<std::pair<std::int64_t, TimeNs>> pass_of_params;
    auto accumulation_ns = [&](std::int64_t params) {
      for (const auto& [n, t] : pass_of_params)
        if (n == params) return t;
      const TimeNs pass = p.setup->costs->memory_pass_ns(params * accumulated_per_param, kind);
      const auto t = static_cast<TimeNs>(std::llround(passes * static_cast<double>(pass)));
      pass_of_params.emplace_back(params, t);
      return t;
    };
    std::vector<OpTimes> times(v.model->num_ops());
    for (OpId op = 0; op < v.model->num_ops(); ++op) {
      const profiler::OpCost& c = (*costs)[op];
      v.kept[op] = std::max(v.kept[op], c.saved_bytes >= 0 ? c.saved_bytes : v.model->op(op).activation_bytes);
      OpTimes& t = times[op];
      t = {c.fwd, c.bwd_data, c.bwd_weight, c.update};
      const bool split_experts = p.etp && v.model->op(op).kind == models::OpKind::Experts;
      if (p.sp && p.tp->in_tp_block[op] && p.tp->role[op] == TpRole::Replicated && !split_experts) {
        // Sequence parallelism: LayerNorm, dropout and residual adds run on 1/T of the sequence (an
        // experts op split over the TP ranks runs every token of the group on 1/T of each FFN).
        // Each rank still launches every kernel: the launches are not divided.
        const auto shard = [&](TimeNs time, TimeNs launch) {
          launch = std::clamp<TimeNs>(launch, 0, time);
          return ceil_div(time - launch, p.tp_ranks) + launch;
        };
        t.fwd = shard(t.fwd, c.launch_fwd);
        t.bwd_data = shard(t.bwd_data, c.launch_bwd_data);
        t.bwd_weight = shard(t.bwd_weight, c.launch_bwd_weight);
      }
      // Each DP x CP rank updates its shard; an expert's optimizer state is sharded over the DP x CP
      // ranks holding the same experts, D C / E (the router's small share is counted with them).
      const bool experts = p.ep > 1 && v.model->op(op).kind == models::OpKind::Experts;
      if (zero) t.update = ceil_div(t.update, experts ? p.expert_grad_ranks() : p.grad_ranks());
      // Every rank accumulates the whole gradient of the parameters it holds (sequence parallelism
      // shortens a norm's backward, not its weights). Norms compute their weight gradients in the
      // data-gradient kernel (op_has_phase, not p.has_bw: index_structure() has not run yet).
      const models::Op& o = v.model->op(op);
      if (passes > 0 && o.params > 0)
        (profiler::op_has_phase(o, profiler::Phase::BackwardWeight) ? t.bwd_weight : t.bwd_data) +=
            accumulation_ns(o.params);
    }
    v.times.push_back(std::move(times));
  }
  return v;
}

void fill_variant_transfers(const Prepared& p, Variant& v) {
  const models::Model& m = *v.model;
  const std::size_t n = m.num_ops();
  v.xfer_bytes.assign(n, 0);
  const int dt = models::dtype_size(m.dtype());
  for (OpId op = 0; op < n; ++op) {
    if (p.is_input[op]) continue;
    const Bytes out = models::num_elements(m.op(op).output_shape) * dt;
    const TpRole role = p.tp->role[op];
    const bool sharded_output = role == TpRole::Column || role == TpRole::Split;
    v.xfer_bytes[op] = p.tp_ranks > 1 && !sharded_output ? (out + p.tp_ranks - 1) / p.tp_ranks : out;
  }
}

/// Bytes of `op`'s kept inputs that another op on its device keeps already: a producer that keeps
/// its output (ReLU before the next convolution) or an earlier consumer that keeps the same input
/// (a block's input into two convolutions, one norm's output into separate q, k and v projections).
/// The tensor is stored once and lives until the last of their backwards: the producer's, or the
/// earliest consumer's, which also allocated it first.
Bytes shared_kept_bytes(const Prepared& p, const Variant& v, OpId op) {
  const models::Model& m = *v.model;
  const auto own = [&](OpId x) { return v.kept[x] == m.op(x).activation_bytes; };  // no kernel's override
  if (!own(op) || !models::keeps_its_inputs(m.op(op))) return 0;
  const int slot = p.op_slot[op];
  Bytes shared = 0;
  for (OpId u : p.inputs[op]) {
    if (p.is_input[u] || p.op_slot[u] != slot) continue;  // data, or a copy received from another stage
    bool kept = own(u) && models::keeps_its_output(m.op(u));
    for (OpId w : p.consumers[u])
      kept = kept || (w < op && p.op_slot[w] == slot && own(w) && models::keeps_its_inputs(m.op(w)));
    if (kept) shared += models::num_elements(m.op(u).output_shape) * models::dtype_size(m.dtype());
  }
  return std::min(shared, v.kept[op]);
}

void fill_variant_memory(const Prepared& p, Variant& v) {
  const models::Model& m = *v.model;
  const std::size_t n = m.num_ops();
  v.fwd_alloc.assign(n, 0);
  v.rec_alloc.assign(n, 0);
  v.bwd_free.assign(n, 0);
  v.xfer_bytes.assign(n, 0);
  v.out_full.assign(n, 0);
  v.in_full.assign(n, 0);
  v.a2a_bytes.assign(n, 0);
  v.etp_bytes.assign(n, 0);
  v.ring_bytes.assign(n, 0);
  const int dt = models::dtype_size(m.dtype());
  for (OpId op = 0; op < n; ++op) {
    const models::Op& o = m.op(op);
    v.out_full[op] = p.is_input[op] ? 0 : models::num_elements(o.output_shape) * dt;
    v.in_full[op] = o.input_shapes.empty() ? 0 : models::num_elements(o.input_shapes[0]) * dt;
    const TpRole role = p.tp->role[op];
    if (p.ring[op]) v.ring_bytes[op] = ring_kv_bytes(o);
    const bool split_experts = p.etp && o.kind == models::OpKind::Experts;
    if (p.ep > 1) {
      v.a2a_bytes[op] = all_to_all_bytes(o);
      // Sequence parallelism: each TP rank routes its 1/T of the tokens.
      if (p.sp && p.tp->in_tp_block[op]) v.a2a_bytes[op] = (v.a2a_bytes[op] + p.tp_ranks - 1) / p.tp_ranks;
    }
    // Megatron-Core's token dispatchers gather the TP group's slots after the all-to-all (ep > 1),
    // or its tokens (ep = 1), to every TP rank, and reduce-scatter the experts' output back.
    if (split_experts) v.etp_bytes[op] = p.ep > 1 ? all_to_all_bytes(o) : v.in_full[op];
    const bool sharded_output = role == TpRole::Column || role == TpRole::Split;
    // Megatron's scatter/gather optimisation: each TP rank sends 1/T of a replicated activation.
    v.xfer_bytes[op] =
        p.tp_ranks > 1 && !sharded_output ? (v.out_full[op] + p.tp_ranks - 1) / p.tp_ranks : v.out_full[op];
    // A fused attention kernel keeps no score matrix, so selective recomputation has none to drop.
    const bool fused = v.kept[op] < o.activation_bytes;
    Bytes act = v.kept[op] - shared_kept_bytes(p, v, op);
    // Sequence parallelism: norms, dropouts and residual adds keep 1/T of the sequence, and a
    // column-parallel linear keeps its input before the all-gather (Megatron-LM saves the sharded
    // input and gathers it again for the backward, the all-gather the lowering emits there): every
    // activation of the layer is 1/T, sbh (34/T + 5as/(hT)) (Korthikanti et al. 2022, eq. 4 with SP).
    if (p.sp && p.tp->in_tp_block[op] && (role == TpRole::Replicated || role == TpRole::Column) && !split_experts)
      act = (act + p.tp_ranks - 1) / p.tp_ranks;
    v.bwd_free[op] = act;
    if (p.segment[op] >= 0) {
      v.rec_alloc[op] = act;
    } else if (p.selective[op]) {
      const Bytes probs = fused ? 0 : std::min(act, attention_probs_bytes(o));
      v.fwd_alloc[op] = act - probs;
      v.rec_alloc[op] = probs;
    } else {
      v.fwd_alloc[op] = act;
    }
  }
  // Full recomputation keeps each segment's inputs (its checkpoint) from its first forward to its
  // last backward: charged to the segment's first op (forward) and the last op to run backward.
  for (const auto& seg : p.segments) {
    std::set<OpId> members(seg.begin(), seg.end());
    std::set<OpId> outside;
    for (OpId op : seg)
      for (OpId u : p.inputs[op])
        if (!members.count(u)) outside.insert(u);
    Bytes checkpoint = 0;
    for (OpId u : outside) checkpoint += models::num_elements(m.op(u).output_shape) * dt;
    v.fwd_alloc[seg.front()] += checkpoint;
    OpId last_backward = seg.front();
    for (OpId op : seg)
      if (p.has_bd[op] || p.has_bw[op]) {
        last_backward = op;
        break;
      }
    v.bwd_free[last_backward] += checkpoint;
  }
}

void count_cost_sources(Prepared& p) {
  CostSourceCounts counts;
  std::vector<std::set<int>> slot_kinds(static_cast<std::size_t>(p.stages));
  for (int slot = 0; slot < p.stages; ++slot) {
    if (p.kinds.size() == 1) {  // one kind everywhere: no need to visit every device
      slot_kinds[static_cast<std::size_t>(slot)].insert(0);
      continue;
    }
    for (int r = 0; r < p.replicas; ++r)
      for (int t = 0; t < p.tp_ranks; ++t) slot_kinds[static_cast<std::size_t>(slot)].insert(p.kind_of(r, slot, t));
  }
  for (const auto& [micro, v] : p.variants) {
    std::vector<std::shared_ptr<const std::vector<profiler::OpCost>>> costs;
    for (const std::string& kind : p.kinds)
      costs.push_back(p.cache->costs(v.model, kind, p.setup->optimizer, *p.setup->costs));
    for (OpId op = 0; op < p.n; ++op) {
      if (!p.has_fwd[op]) continue;
      for (int k : slot_kinds[static_cast<std::size_t>(p.op_slot[op])]) {
        const profiler::CostSource s = (*costs[static_cast<std::size_t>(k)])[op].source;
        if (s == profiler::CostSource::MeasuredScaled) ++counts.scaled;
        else if (profiler::is_measured(s)) ++counts.measured;
        else ++counts.roofline;
      }
    }
  }
  p.counts = counts;
  if (counts.measured + counts.scaled == 0) {
    p.cost_source = "roofline";
    return;
  }
  std::string origin = p.setup->costs->describe();
  const std::string fallback_note = ", roofline where it has no entry";  // ProfileCostModel's; the counts say it
  if (origin.size() > fallback_note.size() && origin.ends_with(fallback_note))
    origin.resize(origin.size() - fallback_note.size());
  p.cost_source = origin + ": " + std::to_string(counts.measured) + " of " + std::to_string(counts.total()) +
                  " ops measured";
  if (counts.scaled > 0) p.cost_source += ", " + std::to_string(counts.scaled) + " scaled from another batch";
  p.cost_source += ", " + std::to_string(counts.roofline) + " roofline";
}

}  // namespace parasim::strategies::detail
