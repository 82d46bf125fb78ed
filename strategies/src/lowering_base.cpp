#include "lowering_base.hpp"

#include "parasim/strategies/pipeline_schedule.hpp"

namespace parasim::strategies::detail {

LoweringBase::LoweringBase(const Prepared& p, Emitter& e, LoweredStep& out)
    : p_(p), e_(e), out_(out), sync_(p, e), chunk_params_(static_cast<std::size_t>(p.C), 0) {
  for (OpId v = 0; v < p.n; ++v) chunk_params_[static_cast<std::size_t>(p.op_chunk[v])] += p.params[v];
  if (p.async) {
    microbatch_marker_.resize(static_cast<std::size_t>(p.K_sim));
    out_.microbatch_done.assign(static_cast<std::size_t>(p.K_sim), simulator::kNoTask);
  }
  out_.simulated_microbatches = p.K_sim;
  last_backward_mb_.assign(static_cast<std::size_t>(p.C), p.K_sim - 1);
  if (p.layered())
    for (int slot = 0; slot < p.M; ++slot)
      for (const WorkItem& w : pipeline_order(p.s.schedule, p.M, p.V, p.K_sim, slot))
        if (w.kind == WorkKind::Backward) last_backward_mb_[static_cast<std::size_t>(w.chunk)] = w.microbatch;
}

void LoweringBase::reset_items() {
  items_.assign(static_cast<std::size_t>(p_.K_sim),
                std::vector<std::array<Refs, 2>>(static_cast<std::size_t>(p_.C)));
}

void LoweringBase::predict_weights(int replica, int mb, int chunk) {
  if (p_.s.schedule != Schedule::SpecTrain) return;
  const std::int64_t params = chunk_params_[static_cast<std::size_t>(chunk)];
  const int slot = chunk % p_.M;
  const Ref t = e_.compute(
      replica, slot, [&](int kind) { return weight_prediction_time(p_, kind, params); }, "weight_prediction", -1, mb,
      Phase::Other);
  item(mb, chunk, WorkKind::Forward).push_back(t);
}

void LoweringBase::chain_schedule(int replica) {
  if (!p_.layered()) return;
  for (int slot = 0; slot < p_.M; ++slot) {
    Ref previous;
    for (const WorkItem& w : pipeline_order(p_.s.schedule, p_.M, p_.V, p_.K_sim, slot)) {
      for (const Ref& t : item(w.microbatch, w.chunk, w.kind)) {
        e_.after(t, previous);
        previous = t;
      }
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
