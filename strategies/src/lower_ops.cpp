// Op granularity: every op phase of every micro-batch is a task.
//
// Forward: an op waits for its producers (through a transfer when the producer runs on another
// device; one transfer per (tensor, destination device)). Backward, in reverse op order: an op's
// output gradient is ready when every consumer's data gradient is (gradients from another
// device are summed there and sent once). Ops without a backward kernel (residual adds,
// reshapes) pass the gradient through. Full recomputation reruns a segment's forward (with its
// TP collectives) right before the segment's backward; selective recomputation reruns the
// attention core before its backward.
#include <map>
#include <set>

#include "lowering_base.hpp"
#include "parasim/common/interrupt.hpp"

namespace parasim::strategies::detail {

namespace {

void append(Refs& to, const Refs& from) { to.insert(to.end(), from.begin(), from.end()); }

class OpLowering : LoweringBase {
 public:
  OpLowering(const Prepared& p, Emitter& e, LoweredStep& out) : LoweringBase(p, e, out) {}

  void run() {
    for (int r : p_.sim_replicas) {
      reset_items();
      barrier_ = Ref{};
      grad_all_.assign(p_.n, {});
      for (int mb = 0; mb < p_.simulated_micro_batches; ++mb) {
        throw_if_interrupted();  // Ctrl-C during a large lowering
        reset_state();
        if (p_.async) grad_all_.assign(p_.n, {});
        forward(r, mb);
        backward(r, mb);
        if (final_microbatch(mb)) mark_microbatch_done(mb, reduce_and_update(r, mb));
        else if (p_.zero2_accumulates()) reduce_microbatch(r, mb);
        if (!p_.layered() && !p_.async) {
          // Gradient accumulation without pipelining: the next micro-batch starts after this one.
          barrier_ = e_.marker("microbatch_end");
          for (OpId v = 0; v < p_.n; ++v) e_.after(barrier_, grad_done_[v]);
        }
      }
      chain_schedule(r);
    }
  }

 private:
  std::string_view name(OpId v) const { return p_.structure->op(v).name; }
  TpRole role(OpId v) const { return p_.tp->role[v]; }
  CollectiveOp reduction() const { return p_.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce; }
  /// Expert parallelism: op v is an MoE layer whose token slots travel by all-to-all.
  bool moe(const Variant& var, OpId v) const { return p_.ep > 1 && var.a2a_bytes[v] > 0; }
  /// Expert tensor parallelism: op v is an experts op split over the TP ranks.
  bool split_experts(const Variant& var, OpId v) const { return var.etp_bytes[v] > 0; }
  /// Its all-gather of the TP group's slots (or, as the phase's last step, the reduce-scatter back).
  Ref etp_collective(int r, int mb, OpId v, CollectiveOp op, Phase phase, const Refs& deps) {
    const Variant& var = p_.variant(r, mb);
    const Ref x = e_.tp_collective(r, p_.op_slot[v], op, var.etp_bytes[v],
                                   op == CollectiveOp::AllGather ? "etp_allgather" : "etp_reduce_scatter",
                                   static_cast<int>(v), mb, phase);
    e_.after(x, deps);
    return x;
  }
  /// One of the all-to-alls of op v (0/1 forward dispatch/combine, 2/3 recompute, 4/5 backward).
  Ref all_to_all(int r, int mb, OpId v, int which, std::string_view what, Phase phase, const Refs& deps) {
    const Variant& var = p_.variant(r, mb);
    const Ref x = e_.ep_all_to_all(r, p_.op_slot[v], var.a2a_bytes[v], what, static_cast<int>(v), mb, phase,
                                   static_cast<std::int64_t>(v) * 8 + which);
    e_.after(x, deps);
    return x;
  }

  void reset_state() {
    fwd_ready_.assign(p_.n, {});
    fwd_task_.assign(p_.n, {});
    grad_in_.assign(p_.n, {});
    grad_done_.assign(p_.n, {});
    rec_task_.assign(p_.n, {});
    rec_ready_.assign(p_.n, {});
    seg_done_.assign(p_.segments.size(), 0);
  }

  /// One forward (or recompute) of op v with its TP collectives; returns {compute task, output ready}.
  std::pair<Ref, Ref> op_forward(int r, int mb, OpId v, Phase phase, const Refs& deps, Bytes alloc, Bytes free,
                                 Refs& work) {
    const Variant& var = p_.variant(r, mb);
    const int slot = p_.op_slot[v];
    Refs d = deps;
    if (p_.tp_ranks > 1 && p_.sp && role(v) == TpRole::Column) {
      const Ref gather = e_.tp_collective(r, slot, CollectiveOp::AllGather, var.in_full[v], "tp_allgather",
                                          static_cast<int>(v), mb, phase);
      e_.after(gather, d);
      d = {gather};
    }
    const int a2a = phase == Phase::Recompute ? 2 : 0;
    if (moe(var, v)) d = {all_to_all(r, mb, v, a2a, "ep_dispatch", phase, d)};
    if (split_experts(var, v)) d = {etp_collective(r, mb, v, CollectiveOp::AllGather, phase, d)};
    Ref task;
    if (p_.ring[v]) {
      task = ring_forward(r, mb, v, phase, d, alloc, free, work);
    } else {
      task = e_.compute(
          r, slot, [&](int k) { return var.times[static_cast<std::size_t>(k)][v].fwd; }, name(v), static_cast<int>(v),
          mb, phase);
      e_.after(task, d);
      e_.memory(task, alloc, free);
      work.push_back(task);
    }
    Ref ready = task;
    if (p_.tp_ranks > 1 && (role(v) == TpRole::Row || role(v) == TpRole::VocabEmbedding)) {
      ready = e_.tp_collective(r, slot, reduction(), var.out_full[v], p_.sp ? "tp_reduce_scatter" : "tp_allreduce",
                               static_cast<int>(v), mb, phase);
      e_.after(ready, task);
    }
    if (split_experts(var, v)) ready = etp_collective(r, mb, v, CollectiveOp::ReduceScatter, phase, {task});
    if (moe(var, v)) ready = all_to_all(r, mb, v, a2a + 1, "ep_combine", phase, {ready});
    return {task, ready};
  }

  /// Context parallelism: the forward (or a recompute) of attention op v as C ring steps, each
  /// passing the K/V chunk on while it computes (all but the last); returns the last step.
  Ref ring_forward(int r, int mb, OpId v, Phase phase, const Refs& deps, Bytes alloc, Bytes free, Refs& work) {
    const Variant& var = p_.variant(r, mb);
    const Bytes kv = var.ring_bytes[v];
    const int last = p_.cp - 1;
    const auto ring = e_.ring_pass(
        r, p_.op_slot[v], [&](int k) { return var.times[static_cast<std::size_t>(k)][v].fwd; },
        [kv, last](int j) { return j < last ? kv : Bytes{0}; }, false, name(v), static_cast<int>(v), mb, phase, deps,
        work);
    e_.memory(ring.first, alloc, 0);
    e_.memory(ring.last, 0, free);
    return ring.last;
  }

  /// ZeRO-3: the all-gather of the parameters of op v's unit (its block) over the DP group, after `deps`.
  Ref gather(int mb, OpId v, Phase phase, const Refs& deps) {
    const Bytes bytes = p_.unit_bytes[static_cast<std::size_t>(p_.op_unit[v])];
    const Ref g =
        e_.dp_collective(p_.op_slot[v], CollectiveOp::AllGather, bytes, "zero3_gather", static_cast<int>(v), mb, phase);
    e_.after(g, deps);
    return g;
  }

  /// One pass's ZeRO-3 gathers: each unit once, when its first op comes. The gather of the i-th
  /// unit of a slot (in the pass's order) waits for the (i-2)-th unit's last op, so it overlaps the
  /// (i-1)-th (FSDP's one-block prefetch, DeepSpeed's prefetch bucket); the first two wait for the
  /// first op's inputs.
  struct UnitGathers {
    std::vector<Ref> gather;              // per unit
    std::vector<Ref> last;                // per unit: its latest op this pass
    std::vector<std::vector<int>> order;  // per slot: units in the pass's order
    std::vector<Refs> start;              // per slot
    explicit UnitGathers(const Prepared& p)
        : gather(p.unit_bytes.size()),
          last(p.unit_bytes.size()),
          order(static_cast<std::size_t>(p.stages)),
          start(static_cast<std::size_t>(p.stages)) {}
  };
  Ref unit_gather(UnitGathers& g, int mb, OpId v, Phase phase, const Refs& deps) {
    const auto u = static_cast<std::size_t>(p_.op_unit[v]);
    if (g.gather[u].valid()) return g.gather[u];
    const auto slot = static_cast<std::size_t>(p_.op_slot[v]);
    auto& order = g.order[slot];
    if (order.empty()) g.start[slot] = deps;
    const Refs after =
        order.size() < 2 ? g.start[slot] : Refs{g.last[static_cast<std::size_t>(order[order.size() - 2])]};
    order.push_back(static_cast<int>(u));
    g.gather[u] = gather(mb, v, phase, after);
    return g.gather[u];
  }

  void forward(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    std::map<std::pair<OpId, int>, Ref> sent;  // (tensor, destination slot) -> transfer
    UnitGathers units(p_);
    for (OpId v = 0; v < p_.n; ++v) {
      if (!p_.has_fwd[v]) {
        for (OpId u : p_.inputs[v]) append(fwd_ready_[v], fwd_ready_[u]);
        continue;
      }
      const int slot = p_.op_slot[v];
      Refs deps;
      for (OpId u : p_.inputs[v]) {
        if (p_.is_input[u]) continue;
        if (p_.op_slot[u] == slot) {
          append(deps, fwd_ready_[u]);
          continue;
        }
        auto [it, fresh] = sent.try_emplace({u, slot});
        if (fresh) {
          it->second = e_.transfer(r, p_.op_slot[u], slot, var.xfer_bytes[u], name(u), static_cast<int>(u), mb,
                                   Phase::Forward);
          e_.after(it->second, fwd_ready_[u]);
        }
        deps.push_back(it->second);
      }
      if (deps.empty()) deps.push_back(barrier_);
      const int chunk = p_.op_chunk[v];
      Refs& work = item(mb, chunk, WorkKind::Forward);
      if (work.empty()) predict_weights(r, mb, chunk);
      const bool no_backward = !p_.has_bd[v] && !p_.has_bw[v];
      const Bytes alloc = var.fwd_alloc[v];
      const Bytes transient = var.model->op(v).transient_fwd_bytes;  // held while the forward runs
      const bool gathered = p_.zero3() && p_.params[v] > 0;
      if (gathered) deps.push_back(unit_gather(units, mb, v, Phase::Forward, deps));
      auto [task, ready] =
          op_forward(r, mb, v, Phase::Forward, deps, alloc + transient, (no_backward ? alloc : 0) + transient, work);
      if (gathered) units.last[static_cast<std::size_t>(p_.op_unit[v])] = task;
      fwd_task_[v] = task;
      fwd_ready_[v] = {ready};
    }
  }

  /// Reruns segment `seg`'s forward once the gradients from outside the segment have arrived.
  void recompute_segment(int r, int mb, int seg, Refs& work, UnitGathers& units) {
    const Variant& var = p_.variant(r, mb);
    const auto& ops = p_.segments[static_cast<std::size_t>(seg)];
    const std::set<OpId> members(ops.begin(), ops.end());
    Refs trigger;
    for (OpId x : ops)
      for (OpId w : p_.consumers[x])
        if (!members.count(w)) append(trigger, grad_in_[w]);
    for (OpId x : ops) {
      Refs deps = trigger;
      for (OpId u : p_.inputs[x])
        if (members.count(u)) append(deps, rec_ready_[u]);
      // ZeRO-3: the backward's gather of the unit (prefetched as any other) comes before its
      // recomputed forward; the unit's backward reuses it.
      if (p_.zero3() && p_.params[x] > 0) deps.push_back(unit_gather(units, mb, x, Phase::Recompute, trigger));
      const bool no_backward = !p_.has_bd[x] && !p_.has_bw[x];
      auto [task, ready] = op_forward(r, mb, x, Phase::Recompute, deps, var.rec_alloc[x],
                                      no_backward ? var.rec_alloc[x] : 0, work);
      if (p_.zero3() && p_.params[x] > 0) units.last[static_cast<std::size_t>(p_.op_unit[x])] = task;
      rec_task_[x] = task;
      rec_ready_[x] = {ready};
    }
    seg_done_[static_cast<std::size_t>(seg)] = 1;
  }

  void backward(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    UnitGathers units(p_);
    std::vector<Refs> unit_done(p_.unit_bytes.size());  // ZeRO-3: per unit, its ops' last tasks
    std::vector<std::vector<OpId>> unit_ops(p_.unit_bytes.size());
    for (OpId v = p_.n; v-- > 0;) {
      if (p_.is_input[v]) continue;
      const int slot = p_.op_slot[v];
      Refs grad_out;
      std::map<int, Refs> remote;  // gradients computed on other devices, by device slot
      for (OpId w : p_.consumers[v]) append(p_.op_slot[w] == slot ? grad_out : remote[p_.op_slot[w]], grad_in_[w]);
      for (const auto& [src, refs] : remote) {
        const Ref x =
            e_.transfer(r, src, slot, var.xfer_bytes[v], name(v), static_cast<int>(v), mb, Phase::BackwardData);
        e_.after(x, refs);
        grad_out.push_back(x);
      }
      const bool bd = p_.has_bd[v];
      const bool bw = p_.has_bw[v];
      if (!bd && !bw) {
        grad_in_[v] = grad_out.empty() ? fwd_ready_[v] : grad_out;
        continue;
      }
      Refs& work = item(mb, p_.op_chunk[v], WorkKind::Backward);
      Refs deps = grad_out;
      deps.push_back(fwd_task_[v]);
      const int seg = p_.segment[v];
      if (seg >= 0) {
        if (!seg_done_[static_cast<std::size_t>(seg)]) recompute_segment(r, mb, seg, work, units);
        deps.push_back(rec_task_[v]);
      }
      if (p_.selective[v]) {
        Ref again;
        if (p_.ring[v]) {
          again = ring_forward(r, mb, v, Phase::Recompute, deps, var.rec_alloc[v], 0, work);
        } else {
          again = e_.compute(
              r, slot, [&](int k) { return var.times[static_cast<std::size_t>(k)][v].fwd; }, name(v),
              static_cast<int>(v), mb, Phase::Recompute);
          e_.after(again, deps);
          e_.memory(again, var.rec_alloc[v], 0);
          work.push_back(again);
        }
        deps = {again};
      }
      if (p_.tp_ranks > 1 && p_.sp && role(v) == TpRole::Row) {
        const Ref gather = e_.tp_collective(r, slot, CollectiveOp::AllGather, var.out_full[v], "tp_allgather",
                                            static_cast<int>(v), mb, Phase::BackwardData);
        e_.after(gather, deps);
        deps = {gather};
      }
      const bool gathered = p_.zero3() && p_.params[v] > 0;
      if (gathered && seg < 0) deps.push_back(unit_gather(units, mb, v, Phase::BackwardData, deps));
      // Expert parallelism: the output gradients go back to the experts' ranks first.
      if (moe(var, v)) deps = {all_to_all(r, mb, v, 4, "ep_combine_grad", Phase::BackwardData, deps)};
      // ... and every TP rank gathers the group's output gradients (the reduce-scatter's backward).
      if (split_experts(var, v)) deps = {etp_collective(r, mb, v, CollectiveOp::AllGather, Phase::BackwardData, deps)};
      Ref data, weight;
      Refs ring_done;  // context parallelism: the attention backward's last step and its dK/dV back home
      if (bd && p_.ring[v]) {
        // C steps; each sends the K/V chunk on (all but the last) and the dK/dV accumulated for it.
        const Bytes kv = var.ring_bytes[v];
        const int last_step = p_.cp - 1;
        const auto ring = e_.ring_pass(
            r, slot, [&](int k) { return var.times[static_cast<std::size_t>(k)][v].bwd_data; },
            [kv, last_step](int j) { return j < last_step ? 2 * kv : kv; }, true, name(v), static_cast<int>(v), mb,
            Phase::BackwardData, deps, work);
        data = ring.last;
        ring_done = ring.done;
      } else if (bd) {
        data = e_.compute(
            r, slot, [&](int k) { return var.times[static_cast<std::size_t>(k)][v].bwd_data; }, name(v),
            static_cast<int>(v), mb, Phase::BackwardData);
        e_.after(data, deps);
        work.push_back(data);
      }
      if (bw) {
        weight = e_.compute(
            r, slot, [&](int k) { return var.times[static_cast<std::size_t>(k)][v].bwd_weight; }, name(v),
            static_cast<int>(v), mb, Phase::BackwardWeight);
        if (bd) e_.after(weight, data);
        else e_.after(weight, deps);
        work.push_back(weight);
      }
      const Ref last = bw ? weight : data;
      // The loss's working set is held while its data-gradient kernel runs (it has no weights).
      const Bytes transient = bd ? var.model->op(v).transient_bwd_bytes : 0;
      const Bytes held_by_last = data.id == last.id ? transient : 0;
      if (held_by_last == 0) e_.memory(data, transient, transient);
      e_.memory(last, held_by_last, var.bwd_free[v] + held_by_last);
      grad_done_[v] = last;
      if (gathered) {
        const auto u = static_cast<std::size_t>(p_.op_unit[v]);
        units.last[u] = last;
        unit_done[u].push_back(last);
        unit_ops[u].push_back(v);
        // ZeRO-3: each micro-batch's gradients of a unit are reduce-scattered into the rank's shard
        // once its last op's backward is done.
        if (v == p_.unit_last_backward[u]) {
          // unit_bytes counts the unit's weights; its gradients are reduced at the buffer's width.
          const Bytes rs_bytes = p_.unit_bytes[u] / models::dtype_size(p_.dtype) * p_.grad_bytes_per_param();
          const Ref rs = e_.dp_collective(slot, CollectiveOp::ReduceScatter, rs_bytes, "zero3_reduce_scatter",
                                          static_cast<int>(v), mb, Phase::BackwardWeight);
          e_.after(rs, unit_done[u]);
          for (OpId w : unit_ops[u]) grad_all_[w].push_back(rs);
        }
      } else {
        grad_all_[v].push_back(last);
      }
      if (bd && p_.tp_ranks > 1 && role(v) == TpRole::Column) {
        const Ref reduce = e_.tp_collective(r, slot, reduction(), var.in_full[v],
                                            p_.sp ? "tp_reduce_scatter" : "tp_allreduce", static_cast<int>(v), mb,
                                            Phase::BackwardData);
        // tp_overlap: it overlaps the weight-gradient GEMM; off, it waits for both GEMMs.
        e_.after(reduce, p_.s.tp_overlap ? data : last);
        grad_in_[v] = {reduce};
      } else if (bd && (moe(var, v) || split_experts(var, v))) {
        // ... and the input gradients of the routed slots (reduce-scattered over the TP ranks when
        // the experts are split) come back to the tokens' ranks.
        Ref back = data;
        if (split_experts(var, v))
          back = etp_collective(r, mb, v, CollectiveOp::ReduceScatter, Phase::BackwardData, {data});
        if (moe(var, v)) back = all_to_all(r, mb, v, 5, "ep_dispatch_grad", Phase::BackwardData, {back});
        grad_in_[v] = {back};
      } else if (!ring_done.empty()) {
        grad_in_[v] = ring_done;
      } else {
        grad_in_[v] = bd ? Refs{data} : grad_out;
      }
    }
  }

  /// ZeRO-2 with gradient accumulation: micro-batch mb's gradients, bucket by bucket, once its
  /// backward has produced them (a tied weight's share from another stage joins at the step's end).
  void reduce_microbatch(int r, int mb) {
    for (int slot = 0; slot < p_.stages; ++slot) {
      const auto& buckets = p_.slot_buckets[static_cast<std::size_t>(slot)];
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        Refs ready;
        for (OpId v : buckets[b].ops) {
          if (grad_done_[v].valid()) ready.push_back(grad_done_[v]);
          for (const Tie& tie : p_.ties)
            if (tie.owner == v && p_.op_slot[tie.op] == slot && grad_done_[tie.op].valid())
              ready.push_back(grad_done_[tie.op]);
        }
        const Refs rs =
            sync_.reduce(r, slot, static_cast<int>(b), mb, ready, buckets[b].bytes, buckets[b].expert_bytes);
        for (OpId v : buckets[b].ops) append(grad_all_[v], rs);
      }
    }
  }

  Refs reduce_and_update(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    const Bytes per_param = models::dtype_size(p_.dtype);
    const Bytes grad_per_param = p_.grad_bytes_per_param();
    Refs done_all;
    for (int slot = 0; slot < p_.stages; ++slot) {
      const auto& buckets = p_.slot_buckets[static_cast<std::size_t>(slot)];
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        Refs ready;
        std::vector<GradientSync::Update> updates;
        std::vector<Tie> remote_ties;
        for (OpId v : buckets[b].ops) {
          append(ready, grad_all_[v]);
          if (p_.has_update[v])
            updates.push_back({static_cast<int>(v), name(v),
                               [&var, v](int k) { return var.times[static_cast<std::size_t>(k)][v].update; }});
          for (const Tie& tie : p_.ties) {
            if (tie.owner != v) continue;
            if (p_.op_slot[tie.op] == slot) {
              append(ready, grad_all_[tie.op]);
              continue;
            }
            // The tied op's contribution to the shared weight's gradient comes over.
            const Ref x = e_.transfer(r, p_.op_slot[tie.op], slot, p_.params[v] * grad_per_param, "tied_weight_grads",
                                      static_cast<int>(v), mb, Phase::BackwardWeight);
            e_.after(x, grad_all_[tie.op]);
            ready.push_back(x);
            remote_ties.push_back(tie);
          }
        }
        Refs done =
            sync_.sync(r, slot, static_cast<int>(b), mb, ready, buckets[b].bytes, updates, buckets[b].expert_bytes);
        for (const Tie& tie : remote_ties) {
          const Ref back = e_.transfer(r, slot, p_.op_slot[tie.op], p_.params[tie.owner] * per_param,
                                       "tied_weights", static_cast<int>(tie.owner), mb, Phase::Update);
          e_.after(back, done);
          done.push_back(back);
        }
        append(done_all, done);
      }
    }
    return done_all;
  }

  Ref barrier_;
  std::vector<Refs> fwd_ready_, grad_in_, rec_ready_;
  std::vector<Refs> grad_all_;  // per op: the backward tasks producing its gradient, over the micro-batches
  std::vector<Ref> fwd_task_, grad_done_, rec_task_;
  std::vector<char> seg_done_;
};

}  // namespace

void lower_ops(const Prepared& p, Emitter& e, LoweredStep& out) { OpLowering(p, e, out).run(); }

}  // namespace parasim::strategies::detail
