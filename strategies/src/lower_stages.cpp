// Stage granularity: per micro-batch, each pipeline chunk's forward is ONE compute task with the
// summed op times (and its backward one task, its recompute one task), pipeline transfers carry
// the summed bytes crossing between two chunks, and a chunk's TP collectives of one phase are
// one collective of the summed bytes (this undercounts latency by (layers - 1) x the collective's
// alpha terms). The backward of the last micro-batch is split at the chunk's gradient buckets,
// so DP reduction still overlaps the rest of the backward.
#include <algorithm>
#include <map>
#include <set>

#include "lowering_base.hpp"
#include "parasim/common/interrupt.hpp"

namespace parasim::strategies::detail {

namespace {

void append(Refs& to, const Refs& from) { to.insert(to.end(), from.begin(), from.end()); }

/// What one chunk does for one micro-batch size.
struct ChunkWork {
  std::vector<TimeNs> fwd, rec, bwd;               // per kind
  std::vector<std::vector<TimeNs>> piece;          // [bucket][kind]: backward up to the bucket's close
  std::vector<std::vector<TimeNs>> update;         // [bucket][kind]
  Bytes fwd_alloc = 0, rec_alloc = 0;
  Bytes fwd_transient = 0, bwd_transient = 0;      // the most any one op holds while it runs (the loss)
  Bytes fwd_gather = 0, fwd_reduce = 0;            // TP bytes: before column linears / after row linears
  Bytes rec_gather = 0, rec_reduce = 0;
  Bytes bwd_gather = 0, bwd_reduce = 0;
  Bytes fwd_a2a = 0, rec_a2a = 0, bwd_a2a = 0;  // expert parallelism: dispatch + combine of its MoE layers
  // Context parallelism: one ring step of all the chunk's attention ops (kept out of fwd, rec, bwd
  // and the pieces) and the K/V bytes of all of them; ring_rec: those recomputed.
  std::vector<TimeNs> ring_fwd, ring_rec, ring_bwd;  // per kind
  Bytes ring_bytes = 0, ring_rec_bytes = 0;
  // Activation bytes from earlier chunks into this one (forward) and from later chunks back
  // (gradients), non-zero only, by ascending chunk: what forward()/backward() loop over.
  std::vector<std::pair<int, Bytes>> from_earlier, from_later;
};

class StageLowering : LoweringBase {
 public:
  StageLowering(const Prepared& p, Emitter& e, LoweredStep& out) : LoweringBase(p, e, out) {
    for (int c = 0; c < p.chunks; ++c)
      names_.push_back("stage" + std::to_string(c % p.stages) + ".chunk" + std::to_string(c));
    for (OpId u = 0; u < p.n; ++u) {
      if (p.is_input[u]) continue;
      std::set<int> to;
      for (OpId w : p.consumers[u])
        if (p.op_chunk[w] != p.op_chunk[u]) to.insert(p.op_chunk[w]);
      for (int c : to) crossing_[{p.op_chunk[u], c}].push_back(u);
    }
  }

  void run() {
    for (int r : p_.sim_replicas) {
      reset_items();
      pieces_.assign(static_cast<std::size_t>(p_.chunks), {});
      backward_all_.assign(static_cast<std::size_t>(p_.chunks), {});
      for (int mb = 0; mb < p_.simulated_micro_batches; ++mb) {
        throw_if_interrupted();  // Ctrl-C during a large lowering
        if (p_.async) {
          pieces_.assign(static_cast<std::size_t>(p_.chunks), {});
          backward_all_.assign(static_cast<std::size_t>(p_.chunks), {});
        }
        forward(r, mb);
        backward(r, mb);
        if (final_microbatch(mb)) mark_microbatch_done(mb, reduce_and_update(r, mb));
      }
      chain_schedule(r);
    }
  }

 private:
  CollectiveOp reduction() const { return p_.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce; }
  int slot(int chunk) const { return chunk % p_.stages; }
  /// GradientSync's id of a chunk's bucket.
  static int bucket_id(int chunk, std::size_t bucket) { return chunk * 64 + static_cast<int>(bucket); }

  const std::vector<ChunkWork>& work_of(std::int64_t micro) {
    auto [it, fresh] = work_.try_emplace(micro);
    if (!fresh) return it->second;
    const Variant& var = p_.variants.at(micro);
    const std::size_t kinds = p_.kinds.size();
    for (int c = 0; c < p_.chunks; ++c) {
      ChunkWork w;
      w.fwd.assign(kinds, 0);
      w.rec.assign(kinds, 0);
      w.bwd.assign(kinds, 0);
      w.ring_fwd.assign(kinds, 0);
      w.ring_rec.assign(kinds, 0);
      w.ring_bwd.assign(kinds, 0);
      std::map<int, Bytes> segment_bytes;
      for (OpId v : p_.chunk_ops[static_cast<std::size_t>(c)]) {
        const bool recomputed = p_.segment[v] >= 0;
        const bool ring = p_.ring[v];
        for (std::size_t k = 0; k < kinds; ++k) {
          const OpTimes& t = var.times[k][v];
          (ring ? w.ring_fwd : w.fwd)[k] += t.fwd;
          (ring ? w.ring_bwd : w.bwd)[k] += t.bwd();
          if (recomputed || p_.selective[v]) (ring ? w.ring_rec : w.rec)[k] += t.fwd;
        }
        if (ring) {
          w.ring_bytes += var.ring_bytes[v];
          if (recomputed || p_.selective[v]) w.ring_rec_bytes += var.ring_bytes[v];
        }
        w.fwd_alloc += var.fwd_alloc[v];
        w.fwd_transient = std::max<Bytes>(w.fwd_transient, var.model->op(v).transient_fwd_bytes);
        if (p_.has_bd[v]) w.bwd_transient = std::max<Bytes>(w.bwd_transient, var.model->op(v).transient_bwd_bytes);
        if (recomputed) segment_bytes[p_.segment[v]] += var.rec_alloc[v];
        else w.rec_alloc += var.rec_alloc[v];
        if (p_.ep > 1) {
          w.fwd_a2a += 2 * var.a2a_bytes[v];
          if (recomputed) w.rec_a2a += 2 * var.a2a_bytes[v];
          w.bwd_a2a += 2 * var.a2a_bytes[v];
        }
        if (p_.tp_ranks == 1) continue;
        const TpRole role = p_.tp->role[v];
        // Expert tensor parallelism: an all-gather before the experts and a reduce-scatter after,
        // each way (counted with the layers' own).
        const Bytes gather = (p_.sp && role == TpRole::Column ? var.in_full[v] : 0) + var.etp_bytes[v];
        const Bytes reduce =
            (role == TpRole::Row || role == TpRole::VocabEmbedding ? var.out_full[v] : 0) + var.etp_bytes[v];
        w.fwd_gather += gather;
        w.fwd_reduce += reduce;
        if (recomputed) {
          w.rec_gather += gather;
          w.rec_reduce += reduce;
        }
        if (p_.sp && role == TpRole::Row) w.bwd_gather += var.out_full[v];
        if (role == TpRole::Column && p_.has_bd[v]) w.bwd_reduce += var.in_full[v];
        w.bwd_gather += var.etp_bytes[v];
        if (p_.has_bd[v]) w.bwd_reduce += var.etp_bytes[v];
      }
      // Segments are recomputed one at a time: the largest one is live at once.
      Bytes largest = 0;
      for (const auto& [seg, bytes] : segment_bytes) largest = std::max(largest, bytes);
      w.rec_alloc += largest;
      for (const Bucket& b : p_.chunk_buckets[static_cast<std::size_t>(c)]) {
        std::vector<TimeNs> piece(kinds, 0), update(kinds, 0);
        for (std::size_t k = 0; k < kinds; ++k) {
          for (OpId v : b.piece)
            if (!p_.ring[v]) piece[k] += var.times[k][v].bwd();
          for (OpId v : b.ops) update[k] += var.times[k][v].update;
        }
        w.piece.push_back(std::move(piece));
        w.update.push_back(std::move(update));
      }
      it->second.push_back(std::move(w));
    }
    // Ascending (from, to): each list comes out by ascending chunk.
    for (const auto& [edge, tensors] : crossing_) {
      const auto [from, to] = edge;
      if (!(from < to)) continue;
      Bytes b = 0;
      for (OpId u : tensors) b += var.xfer_bytes[u];
      if (b == 0) continue;
      it->second[static_cast<std::size_t>(to)].from_earlier.emplace_back(from, b);
      it->second[static_cast<std::size_t>(from)].from_later.emplace_back(to, b);
    }
    return it->second;
  }

  Refs tp_phase(int r, int c, int mb, Phase phase, Bytes gather, const Refs& deps) {
    if (gather == 0) return deps;
    const Ref g = e_.tp_collective(r, slot(c), CollectiveOp::AllGather, gather, "tp_allgather", -1, mb, phase);
    e_.after(g, deps);
    return {g};
  }

  Ref tp_reduce(int r, int c, int mb, Phase phase, Bytes bytes, Ref after) {
    if (bytes == 0) return after;
    const Ref x = e_.tp_collective(r, slot(c), reduction(), bytes, p_.sp ? "tp_reduce_scatter" : "tp_allreduce", -1,
                                   mb, phase);
    e_.after(x, after);
    return x;
  }

  /// Expert parallelism: the chunk's MoE all-to-alls of one phase as one collective of the summed
  /// bytes (which: 0 forward, 1 recompute, 2 backward), after `after`.
  Ref all_to_all(int r, int c, int mb, Phase phase, Bytes bytes, int which, Ref after) {
    if (bytes == 0) return after;
    const Ref x =
        e_.ep_all_to_all(r, slot(c), bytes, "ep_all_to_all", -1, mb, phase, static_cast<std::int64_t>(c) * 8 + which);
    e_.after(x, after);
    return x;
  }

  /// Context parallelism: the C ring steps of the chunk's attention ops after `deps` (forward and
  /// recompute: K/V chunks on all but the last step; backward: K/V and dK/dV, then dK/dV home).
  /// Returns what ends them, or `deps` when the chunk has no attention.
  Refs ring(int r, int c, int mb, Phase phase, const std::vector<TimeNs>& step, Bytes kv, Refs& work, const Refs& deps,
            Ref* last = nullptr) {
    if (p_.cp == 1 || kv == 0) return deps;
    const int final_step = p_.cp - 1;
    const bool backward = phase == Phase::BackwardData;
    const auto pass = e_.ring_pass(
        r, slot(c), [&step](int k) { return step[static_cast<std::size_t>(k)]; },
        [kv, final_step, backward](int j) {
          return backward ? (j < final_step ? 2 * kv : kv) : j < final_step ? kv : 0;
        },
        backward, names_[static_cast<std::size_t>(c)], -1, mb, phase, deps, work);
    if (last != nullptr) *last = pass.last;
    return pass.done;
  }

  /// ZeRO-3 at chunk granularity: the chunk's parameters are gathered layer by layer, each layer's
  /// all-gather overlapping the previous layer's compute. As two collectives on the DP stream: the
  /// first layer's (1/L of the chunk's bytes), which the compute waits for, then the other layers'
  /// (which the chunk's result waits for), so the phase lasts about first + max(compute, rest).
  /// Returns {first, rest}; invalid refs without ZeRO-3.
  std::pair<Ref, Ref> gather_chunk(int c, int mb, Phase phase, const Refs& deps) {
    const int layers = p_.chunk_layers[static_cast<std::size_t>(c)];
    if (!p_.zero3() || layers == 0) return {};
    const Bytes total = chunk_params_[static_cast<std::size_t>(c)] * models::dtype_size(p_.dtype);
    const Bytes first_bytes = total / layers;
    const Ref first = e_.dp_collective(slot(c), CollectiveOp::AllGather, first_bytes, "zero3_gather", -1, mb, phase);
    e_.after(first, deps);
    if (layers == 1) return {first, Ref{}};
    const Ref rest =
        e_.dp_collective(slot(c), CollectiveOp::AllGather, total - first_bytes, "zero3_gather", -1, mb, phase);
    e_.after(rest, first);
    return {first, rest};
  }

  /// What ends a phase: `done`, joined with the rest of a ZeRO-3 gather when there is one.
  Ref joined(Ref done, Ref rest) {
    if (!rest.valid()) return done;
    const Ref m = e_.marker("zero3_gathered");
    e_.after(m, done);
    e_.after(m, rest);
    return m;
  }

  void forward(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    const auto& work = work_of(var.micro);
    fwd_ready_.assign(static_cast<std::size_t>(p_.chunks), {});
    fwd_task_.assign(static_cast<std::size_t>(p_.chunks), {});
    for (int c = 0; c < p_.chunks; ++c) {
      const ChunkWork& w = work[static_cast<std::size_t>(c)];
      Refs deps;
      for (const auto& [src, bytes] : w.from_earlier) {
        if (slot(src) == slot(c)) {
          deps.push_back(fwd_ready_[static_cast<std::size_t>(src)]);
          continue;
        }
        const Ref x = e_.transfer(r, slot(src), slot(c), bytes, "activations", -1, mb, Phase::Forward);
        e_.after(x, fwd_ready_[static_cast<std::size_t>(src)]);
        deps.push_back(x);
      }
      predict_weights(r, mb, c);
      deps = tp_phase(r, c, mb, Phase::Forward, w.fwd_gather, deps);
      const auto [first, rest] = gather_chunk(c, mb, Phase::Forward, deps);
      if (first.valid()) deps.push_back(first);
      const Ref f = e_.compute(
          r, slot(c), [&](int k) { return w.fwd[static_cast<std::size_t>(k)]; }, names_[static_cast<std::size_t>(c)],
          -1, mb, Phase::Forward);
      e_.after(f, deps);
      e_.memory(f, w.fwd_alloc + w.fwd_transient, w.fwd_transient);
      item(mb, c, WorkKind::Forward).push_back(f);
      Ref done = f;
      ring(r, c, mb, Phase::Forward, w.ring_fwd, w.ring_bytes, item(mb, c, WorkKind::Forward), {f}, &done);
      fwd_task_[static_cast<std::size_t>(c)] = done;
      fwd_ready_[static_cast<std::size_t>(c)] = joined(
          tp_reduce(r, c, mb, Phase::Forward, w.fwd_reduce, all_to_all(r, c, mb, Phase::Forward, w.fwd_a2a, 0, done)),
          rest);
    }
  }

  void backward(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    const auto& work = work_of(var.micro);
    grad_ready_.assign(static_cast<std::size_t>(p_.chunks), {});
    for (int c = p_.chunks; c-- > 0;) {
      const ChunkWork& w = work[static_cast<std::size_t>(c)];
      Refs& items = item(mb, c, WorkKind::Backward);
      Refs deps{fwd_task_[static_cast<std::size_t>(c)]};
      for (const auto& [dst, bytes] : w.from_later) {
        if (slot(dst) == slot(c)) {
          deps.push_back(grad_ready_[static_cast<std::size_t>(dst)]);
          continue;
        }
        const Ref x = e_.transfer(r, slot(dst), slot(c), bytes, "activation_grads", -1, mb, Phase::BackwardData);
        e_.after(x, grad_ready_[static_cast<std::size_t>(dst)]);
        deps.push_back(x);
      }
      const auto positive = [](TimeNs t) { return t > 0; };
      const bool recompute = w.rec_alloc > 0 || std::any_of(w.rec.begin(), w.rec.end(), positive) ||
                             std::any_of(w.ring_rec.begin(), w.ring_rec.end(), positive);
      // ZeRO-3: a full recomputation gathers the parameters again and its backward reuses them.
      const bool regather = recompute && p_.s.recompute == Recompute::Full;
      Ref rest_gather;
      if (recompute) {
        deps = tp_phase(r, c, mb, Phase::Recompute, w.rec_gather, deps);
        if (regather) {
          const auto [first, rest] = gather_chunk(c, mb, Phase::Recompute, deps);
          if (first.valid()) deps.push_back(first);
          rest_gather = rest;
        }
        const Ref again = e_.compute(
            r, slot(c), [&](int k) { return w.rec[static_cast<std::size_t>(k)]; }, names_[static_cast<std::size_t>(c)],
            -1, mb, Phase::Recompute);
        e_.after(again, deps);
        e_.memory(again, w.rec_alloc, 0);
        items.push_back(again);
        Ref recomputed = again;
        ring(r, c, mb, Phase::Recompute, w.ring_rec, w.ring_rec_bytes, items, {again}, &recomputed);
        deps = {tp_reduce(r, c, mb, Phase::Recompute, w.rec_reduce,
                          all_to_all(r, c, mb, Phase::Recompute, w.rec_a2a, 1, recomputed))};
      }
      deps = tp_phase(r, c, mb, Phase::BackwardData, w.bwd_gather, deps);
      deps = ring(r, c, mb, Phase::BackwardData, w.ring_bwd, w.ring_bytes, items, deps);
      if (!regather) {
        const auto [first, rest] = gather_chunk(c, mb, Phase::BackwardData, deps);
        if (first.valid()) deps.push_back(first);
        rest_gather = rest;
      }
      Ref first_backward, last;
      auto add_backward = [&](const DurationFn& duration) {
        const Ref b =
            e_.compute(r, slot(c), duration, names_[static_cast<std::size_t>(c)], -1, mb, Phase::BackwardData);
        if (last.valid()) e_.after(b, last);
        else e_.after(b, deps);
        items.push_back(b);
        if (!first_backward.valid()) first_backward = b;
        last = b;
      };
      if (completes_gradients(mb, c)) {
        for (const auto& piece : w.piece) {
          add_backward([&piece](int k) { return piece[static_cast<std::size_t>(k)]; });
          pieces_[static_cast<std::size_t>(c)].push_back(last);
        }
      } else {
        add_backward([&w](int k) { return w.bwd[static_cast<std::size_t>(k)]; });
        backward_all_[static_cast<std::size_t>(c)].push_back(last);
        if (p_.zero2_accumulates()) {
          // ZeRO-2 with gradient accumulation: this micro-batch's gradients into the rank's shard.
          const auto& buckets = p_.chunk_buckets[static_cast<std::size_t>(c)];
          for (std::size_t b = 0; b < buckets.size(); ++b)
            append(backward_all_[static_cast<std::size_t>(c)],
                   sync_.reduce(r, slot(c), bucket_id(c, b), mb, {last}, buckets[b].bytes, buckets[b].expert_bytes));
        }
      }
      // The chunk's largest backward working set (the loss's) from its first backward task to its last.
      const Bytes held_by_last = first_backward.id == last.id ? w.bwd_transient : 0;
      if (held_by_last == 0 && w.bwd_transient > 0) e_.memory(first_backward, w.bwd_transient, 0);
      e_.memory(last, held_by_last, w.fwd_alloc + w.rec_alloc + w.bwd_transient);
      if (p_.zero3() && p_.chunk_layers[static_cast<std::size_t>(c)] > 0) {
        // ZeRO-3: the micro-batch's gradients are reduce-scattered into the rank's shard.
        const Ref rs = e_.dp_collective(slot(c), CollectiveOp::ReduceScatter,
                                        chunk_params_[static_cast<std::size_t>(c)] * p_.grad_bytes_per_param(),
                                        "zero3_reduce_scatter", -1, mb, Phase::BackwardWeight);
        e_.after(rs, joined(last, rest_gather));
        backward_all_[static_cast<std::size_t>(c)].push_back(rs);
        if (rest_gather.valid()) last = joined(last, rest_gather);
      }
      grad_ready_[static_cast<std::size_t>(c)] = tp_reduce(
          r, c, mb, Phase::BackwardData, w.bwd_reduce, all_to_all(r, c, mb, Phase::BackwardData, w.bwd_a2a, 2, last));
    }
  }

  Refs reduce_and_update(int r, int mb) {
    const Variant& var = p_.variant(r, mb);
    const auto& work = work_of(var.micro);
    const Bytes per_param = models::dtype_size(p_.dtype);
    const Bytes grad_per_param = p_.grad_bytes_per_param();
    Refs done_all;
    for (int c = 0; c < p_.chunks; ++c) {
      const auto& buckets = p_.chunk_buckets[static_cast<std::size_t>(c)];
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        Refs ready = backward_all_[static_cast<std::size_t>(c)];
        ready.push_back(pieces_[static_cast<std::size_t>(c)][b]);
        std::vector<Tie> remote_ties;
        for (const Tie& tie : p_.ties) {
          if (std::find(buckets[b].ops.begin(), buckets[b].ops.end(), tie.owner) == buckets[b].ops.end()) continue;
          const int from = p_.op_chunk[tie.op];
          Refs tied_done = backward_all_[static_cast<std::size_t>(from)];
          tied_done.push_back(pieces_[static_cast<std::size_t>(from)].back());
          if (slot(from) == slot(c)) {
            append(ready, tied_done);
            continue;
          }
          const Ref x = e_.transfer(r, slot(from), slot(c), p_.params[tie.owner] * grad_per_param, "tied_weight_grads",
                                    static_cast<int>(tie.owner), mb, Phase::BackwardWeight);
          e_.after(x, tied_done);
          ready.push_back(x);
          remote_ties.push_back(tie);
        }
        const auto& update = work[static_cast<std::size_t>(c)].update[b];
        std::vector<GradientSync::Update> updates;
        updates.push_back({-1, names_[static_cast<std::size_t>(c)],
                           [&update](int k) { return update[static_cast<std::size_t>(k)]; }});
        Refs done =
            sync_.sync(r, slot(c), bucket_id(c, b), mb, ready, buckets[b].bytes, updates, buckets[b].expert_bytes);
        for (const Tie& tie : remote_ties) {
          const Ref back = e_.transfer(r, slot(c), slot(p_.op_chunk[tie.op]), p_.params[tie.owner] * per_param,
                                       "tied_weights", static_cast<int>(tie.owner), mb, Phase::Update);
          e_.after(back, done);
          done.push_back(back);
        }
        append(done_all, done);
      }
    }
    return done_all;
  }

  std::vector<std::string> names_;
  std::map<std::pair<int, int>, std::vector<OpId>> crossing_;  // (from chunk, to chunk) -> tensors
  std::map<std::int64_t, std::vector<ChunkWork>> work_;
  std::vector<Ref> fwd_ready_, fwd_task_, grad_ready_;
  std::vector<std::vector<Ref>> pieces_;        // per chunk: the backward pieces that complete each bucket
  std::vector<Refs> backward_all_;              // per chunk: the other micro-batches' backward tasks
};

}  // namespace

void lower_stages(const Prepared& p, Emitter& e, LoweredStep& out) { StageLowering(p, e, out).run(); }

}  // namespace parasim::strategies::detail
