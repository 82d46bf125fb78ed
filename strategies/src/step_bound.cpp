// step_time_lower_bound(): compute-only bound on a lowered step (step_bound.hpp says why it
// holds). It reads the same Prepared step as lower_stages.cpp and sums the same op times into
// the same chunk tasks, but emits nothing: no task graph, no simulation.
#include "parasim/strategies/step_bound.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "prepared_step.hpp"

namespace parasim::strategies {

namespace {

using detail::OpId;
using detail::Prepared;
using detail::Variant;

/// One micro-batch size on the simulated replica's rank-0 devices: per chunk the forward,
/// recompute and backward task durations (lower_stages.cpp, ChunkWork; the last micro-batch's
/// backward is cut into its gradient buckets' pieces, which hold every op of the chunk once, so
/// they sum to the same), and which chunk pairs (from < to) pass a tensor of non-zero bytes - the
/// dependencies of the chunk tasks.
struct ChunkTimes {
  std::vector<TimeNs> fwd, rec, bwd;
  std::vector<char> edge;  // [from * chunks + to]
};

ChunkTimes chunk_times(const Prepared& p, const Variant& var, int replica) {
  const auto chunks = static_cast<std::size_t>(p.chunks);
  ChunkTimes t;
  t.fwd.assign(chunks, 0);
  t.rec = t.fwd;
  t.bwd = t.fwd;
  t.edge.assign(chunks * chunks, 0);
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto k =
        static_cast<std::size_t>(p.kind_of(replica, static_cast<int>(c % static_cast<std::size_t>(p.stages)), 0));
    const std::vector<detail::OpTimes>& times = var.times[k];
    for (OpId v : p.chunk_ops[c]) {
      const detail::OpTimes& o = times[v];
      t.fwd[c] += o.fwd;
      t.bwd[c] += o.bwd();
      if (p.segment[v] >= 0 || p.selective[v]) t.rec[c] += o.fwd;
    }
  }
  for (OpId u = 0; u < p.n; ++u) {
    if (p.is_input[u] || var.xfer_bytes[u] == 0) continue;
    const auto from = static_cast<std::size_t>(p.op_chunk[u]);
    for (OpId w : p.consumers[u])
      if (static_cast<std::size_t>(p.op_chunk[w]) > from)
        t.edge[from * chunks + static_cast<std::size_t>(p.op_chunk[w])] = 1;
  }
  return t;
}

/// Per slot: the least head and tail over the micro-batch sizes, and the compute of all the
/// micro-batches (`per_micro`: of one, when every micro-batch has the same size).
std::optional<StepBound> bound_of(const StepSetup& setup, bool per_micro) {
  if (setup.granularity != Granularity::Stage) return std::nullopt;
  const std::unique_ptr<Prepared> pp = detail::prepare_step(setup, detail::PrepareFor::Bound);
  const Prepared& p = *pp;
  if (!p.layered() || p.cp > 1 || p.ep > 1 || p.sim_replicas.size() != 1) return std::nullopt;
  const int r = p.sim_replicas.front();
  const auto chunks = static_cast<std::size_t>(p.chunks);
  const auto stages = static_cast<std::size_t>(p.stages);
  std::map<std::int64_t, std::int64_t> count;  // micro-batches of each size
  for (std::int64_t size : p.micro[static_cast<std::size_t>(r)]) ++count[size];
  // Asynchronous schedules (equal micro-batches): the step is at least K x a slot's compute per
  // micro-batch, its compute stream's share in steady state (simulate_strategy); no fill or drain.
  if ((per_micro || p.async) && count.size() != 1) return std::nullopt;

  constexpr TimeNs kNone = std::numeric_limits<TimeNs>::max();
  StepBound out;
  out.fill.assign(stages, kNone);
  out.drain.assign(stages, kNone);
  out.work.assign(stages, 0);
  for (const auto& [size, n] : count) {
    const ChunkTimes t = chunk_times(p, p.variants.at(size), r);
    const std::int64_t times = per_micro ? 1 : n;
    for (std::size_t c = 0; c < chunks; ++c) out.work[c % stages] += times * (t.fwd[c] + t.rec[c] + t.bwd[c]);
    // head: the longest forward chain into a chunk (from < to: a chunk's head is final before it
    // feeds a later one); tail: the longest recompute + backward chain after its backward.
    std::vector<TimeNs> head(chunks, 0), tail(chunks, 0);
    for (std::size_t to = 0; to < chunks; ++to)
      for (std::size_t from = 0; from < to; ++from)
        if (t.edge[from * chunks + to] != 0) {
          head[to] = std::max(head[to], head[from] + t.fwd[from]);
          tail[to] = std::max(tail[to], tail[from] + t.rec[from] + t.bwd[from]);
        }
    for (std::size_t c = 0; c < chunks; ++c) {
      out.fill[c % stages] = std::min(out.fill[c % stages], head[c]);
      out.drain[c % stages] = std::min(out.drain[c % stages], tail[c]);
    }
  }
  for (std::size_t s = 0; s < stages; ++s)
    if (out.fill[s] == kNone || out.drain[s] == kNone) out.fill[s] = out.drain[s] = out.work[s] = 0;  // no chunk
  if (p.async) {  // no fill or drain: a steady state
    std::fill(out.fill.begin(), out.fill.end(), 0);
    std::fill(out.drain.begin(), out.drain.end(), 0);
  }
  return out;
}

}  // namespace

TimeNs StepBound::at(std::int64_t micro_batches) const {
  TimeNs best = 0;
  for (std::size_t s = 0; s < work.size(); ++s) best = std::max(best, fill[s] + micro_batches * work[s] + drain[s]);
  return best;
}

std::optional<StepBound> step_bound_per_micro(const StepSetup& setup) { return bound_of(setup, true); }

TimeNs step_time_lower_bound(const StepSetup& setup) {
  const std::optional<StepBound> b = bound_of(setup, false);
  return b ? b->at(1) : 0;
}

}  // namespace parasim::strategies
