#include "lowering_base.hpp"

#include <algorithm>

#include "parasim/strategies/pipeline_schedule.hpp"

namespace parasim::strategies::detail {

LoweringBase::LoweringBase(const Prepared& p, Emitter& e, LoweredStep& out)
    : p_(p), e_(e), out_(out), sync_(p, e), chunk_params_(static_cast<std::size_t>(p.chunks), 0) {
  for (OpId v = 0; v < p.n; ++v) chunk_params_[static_cast<std::size_t>(p.op_chunk[v])] += p.params[v];
  if (p.async) {
    microbatch_marker_.resize(static_cast<std::size_t>(p.simulated_micro_batches));
    out_.microbatch_done.assign(static_cast<std::size_t>(p.simulated_micro_batches), simulator::kNoTask);
  }
  out_.simulated_microbatches = p.simulated_micro_batches;
  last_backward_mb_.assign(static_cast<std::size_t>(p.chunks), p.simulated_micro_batches - 1);
  if (p.layered())
    for (int slot = 0; slot < p.stages; ++slot)
      for (const WorkItem& w :
           pipeline_order(p.s.schedule, p.stages, p.chunks_per_stage, p.simulated_micro_batches, slot))
        if (w.kind == WorkKind::Backward) last_backward_mb_[static_cast<std::size_t>(w.chunk)] = w.microbatch;
}

void LoweringBase::reset_items() {
  items_.assign(static_cast<std::size_t>(p_.simulated_micro_batches),
                std::vector<std::array<Refs, 2>>(static_cast<std::size_t>(p_.chunks)));
}

void LoweringBase::predict_weights(int replica, int mb, int chunk) {
  if (p_.s.schedule != Schedule::SpecTrain) return;
  const std::int64_t params = chunk_params_[static_cast<std::size_t>(chunk)];
  const int slot = chunk % p_.stages;
  const Ref t = e_.compute(
      replica, slot, [&](int kind) { return weight_prediction_time(p_, kind, params); }, "weight_prediction", -1, mb,
      Phase::Other);
  item(mb, chunk, WorkKind::Forward).push_back(t);
}

void LoweringBase::chain_schedule(int replica) {
  if (!p_.layered()) return;
  for (int slot = 0; slot < p_.stages; ++slot) {
    const std::vector<WorkItem> order =
        pipeline_order(p_.s.schedule, p_.stages, p_.chunks_per_stage, p_.simulated_micro_batches, slot);
    Refs previous;  // the last task of the unit before (two with a merged pair)
    for (std::size_t i = 0; i < order.size(); ++i) {
      const WorkItem& w = order[i];
      // ep_overlap: in the steady state a forward and a backward of different micro-batches next
      // to each other are one merged unit, each chained on its own after the unit before, so
      // that one's all-to-all waits leave the compute stream to the other (Megatron-Core's
      // --overlap-moe-expert-parallel-comm pairs F(i + 1) with B(i) on the last stage, F(i + w)
      // with B(i) before it).
      const bool merged = p_.s.ep_overlap && i + 1 < order.size() && order[i + 1].kind != w.kind &&
                          order[i + 1].microbatch != w.microbatch;
      Refs ends;
      for (std::size_t j = i; j <= (merged ? i + 1 : i); ++j) {
        const WorkItem& u = order[j];
        Refs after = previous;
        for (const Ref& t : item(u.microbatch, u.chunk, u.kind)) {
          e_.after(t, after);
          after = {t};
        }
        for (const Ref& t : after)
          if (std::none_of(ends.begin(), ends.end(), [&](const Ref& e) { return e.id == t.id; })) ends.push_back(t);
      }
      if (merged) ++i;
      previous = ends;
    }
  }
  (void)replica;
}

void LoweringBase::mark_microbatch_done(int mb, const Refs& done) {
  if (!p_.async) return;
  Ref& marker = microbatch_marker_[static_cast<std::size_t>(mb)];
  if (!marker.valid()) {
    marker = e_.marker("microbatch_done");
    out_.microbatch_done[static_cast<std::size_t>(mb)] = marker.id;
  }
  e_.after(marker, done);
}

}  // namespace parasim::strategies::detail
