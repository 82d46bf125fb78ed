#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "parasim/common/error.hpp"
#include "parasim/strategies/batch_split.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/expert_parallel.hpp"
#include "prepare_placement.hpp"
#include "prepare_variants.hpp"
#include "prepared_step.hpp"

namespace parasim::strategies::detail {

namespace {

void check_setup(const StepSetup& s) {
  if (s.model == nullptr || s.cluster == nullptr || s.costs == nullptr)
    throw InputError("simulate: a model, a cluster and a cost model are required");
  if (s.global_batch < 1)
    throw InputError("--batch: expected a positive global batch size, found " + std::to_string(s.global_batch));
  const Strategy& st = s.strategy;
  if (st.pipelined() && st.placement != Placement::Layers)
    throw InputError(to_string(st) + ": schedule=" + to_string(st.schedule) +
                     " pipelines contiguous layer chunks; it needs placement=layers (branch and file placements run "
                     "with schedule=none)");
}

void index_structure(Prepared& p) {
  const models::Model& m = *p.structure;
  p.n = m.num_ops();
  p.links = p.cache->op_links(m);
  p.inputs = OpLists(&p.links->inputs);
  p.consumers = OpLists(&p.links->consumers);
  p.has_fwd = p.links->has_fwd;
  p.has_bd = p.links->has_bd;
  p.has_bw = p.links->has_bw;
  p.has_update = p.links->has_update;
  p.is_input = p.links->is_input;
  p.params = p.links->params;
  for (const auto& [op, owner] : p.links->ties) p.ties.push_back({op, owner});
  p.expert_params.assign(p.n, 0);
  if (p.s.recompute == Recompute::Selective) p.selective = p.links->self_attention;
  else p.selective.assign(p.n, 0);
  p.ring.assign(p.n, 0);
  if (p.ep > 1 || p.cp > 1)
    for (OpId v = 0; v < p.n; ++v) {
      const models::Op& op = m.op(v);
      if (p.ep > 1) p.expert_params[v] = expert_params(op);
      p.ring[v] = p.cp > 1 && is_ring_attention(op);
    }
}

void resolve_kinds(Prepared& p) {
  p.kind_index.assign(static_cast<std::size_t>(p.mapping->devices_used()), 0);
  // A cluster of one kind: every used device has it (no need to look at thousands of them).
  if (const auto all = p.cache->device_kinds(*p.cluster); all->size() == 1) {
    p.kinds = *all;
    return;
  }
  for (int r = 0; r < p.replicas; ++r)
    for (int slot = 0; slot < p.stages; ++slot)
      for (int t = 0; t < p.tp_ranks * p.cp; ++t) {  // t: the mapping's tp axis, TP x CP
        const hardware::DeviceId d = p.device(r, slot, t);
        const std::string& kind = p.cluster->device(d).kind;
        if (!p.kinds.empty() && p.kinds.front() == kind) continue;  // kind_index[d] is 0 already
        auto it = std::find(p.kinds.begin(), p.kinds.end(), kind);
        if (it == p.kinds.end()) {
          p.kinds.push_back(kind);
          it = p.kinds.end() - 1;
        }
        p.kind_index[static_cast<std::size_t>(d)] = static_cast<int>(it - p.kinds.begin());
      }
}

/// Samples per replica and per micro-batch. `micro0` is the micro-batch size of an even split.
void split_batch(Prepared& p, const Variant& v0) {
  const std::int64_t b = p.setup->global_batch;
  if (p.s.split == BatchSplit::Even) {
    // As torch.nn.DataParallel scatters it (torch.chunk): 128 over 3 replicas is 43/43/42.
    p.replica_batch = split_like_torch_chunk(b, p.replicas);
    if (p.replica_batch.back() == 0)
      throw InputError("global batch " + std::to_string(b) + " over dp=" + std::to_string(p.replicas) +
                       ": split like torch.chunk (chunks of " + std::to_string((b + p.replicas - 1) / p.replicas) +
                       "), the last replica gets no sample; use a multiple of " + std::to_string(p.replicas) +
                       " or split=speed");
  } else {
    // Each replica's speed: samples per ns of its own devices on this model (forward + backward).
    std::vector<double> speed;
    for (int r = 0; r < p.replicas; ++r) {
      double t = 0;
      for (OpId v = 0; v < p.n; ++v) {
        if (!p.has_fwd[v]) continue;
        const OpTimes& ot = v0.times[static_cast<std::size_t>(p.kind_of(r, p.op_slot[v], 0))][v];
        t += static_cast<double>(ot.fwd + ot.bwd());
      }
      speed.push_back(static_cast<double>(v0.micro) / std::max(t, 1.0));
    }
    p.replica_batch = split_proportional(b, speed);
  }
  for (int r = 0; r < p.replicas; ++r) {
    const std::int64_t rb = p.replica_batch[static_cast<std::size_t>(r)];
    if (rb < p.micro_batches)
      throw InputError(to_string(p.s) + " with global batch " + std::to_string(b) + ": replica " + std::to_string(r) +
                       " gets " + std::to_string(rb) + " samples, fewer than micro=" + std::to_string(p.micro_batches) +
                       " micro-batches");
    if (p.s.split == BatchSplit::Even && rb % p.micro_batches != 0)
      throw InputError(to_string(p.s) + ": the per-replica batch " + std::to_string(rb) +
                       " is not divisible by micro=" + std::to_string(p.micro_batches) +
                       "; choose micro dividing it or split=speed");
    p.micro.push_back(split_near_equal(rb, p.micro_batches));
  }
}

void choose_symmetry(Prepared& p) {
  const bool homogeneous = p.kinds.size() == 1 &&
                           std::all_of(p.micro.begin(), p.micro.end(), [&](const auto& m) { return m == p.micro[0]; });
  const Symmetry wanted = p.setup->symmetry;
  p.symmetry = homogeneous ? wanted : Symmetry::None;
  p.sim_replicas.clear();
  if (p.symmetry == Symmetry::None) {
    p.sim_replicas.resize(static_cast<std::size_t>(p.replicas));
    std::iota(p.sim_replicas.begin(), p.sim_replicas.end(), 0);
  } else {
    p.sim_replicas = {0};
  }
  p.sim_tp = p.symmetry == Symmetry::DataAndTensor ? 1 : p.tp_ranks;
}

/// DDP-style buckets: gradients in the order backward produces them (reverse op order), a
/// bucket closes once it holds >= the cap (PyTorch's rule); overlap=off means one bucket. Bytes are
/// the gradient buffer's (4 a parameter from an fp32 buffer), which is what DDP reduces.
std::vector<Bucket> make_buckets(const Prepared& p, const std::vector<OpId>& ops_in_order, Bytes cap) {
  std::vector<Bucket> out;
  Bucket open;
  const Bytes per_param = p.grad_bytes_per_param();
  for (auto it = ops_in_order.rbegin(); it != ops_in_order.rend(); ++it) {
    const OpId v = *it;
    open.piece.push_back(v);
    if (p.params[v] == 0) continue;
    open.ops.push_back(v);
    open.bytes += (p.params[v] - p.expert_params[v]) * per_param;
    open.expert_bytes += p.expert_params[v] * per_param;
    if (p.s.overlap && open.bytes + open.expert_bytes >= cap) {
      out.push_back(std::move(open));
      open = Bucket{};
    }
  }
  if (!open.ops.empty()) {
    out.push_back(std::move(open));
  } else if (!open.piece.empty()) {
    if (out.empty()) out.push_back(std::move(open));
    else out.back().piece.insert(out.back().piece.end(), open.piece.begin(), open.piece.end());
  }
  return out;
}

void form_buckets(Prepared& p) {
  const Bytes cap = static_cast<Bytes>(p.s.bucket_mb * static_cast<double>(MiB));
  const Bytes per_param = models::dtype_size(p.dtype);
  if (p.setup->granularity == Granularity::Op || !p.layered()) {
    p.slot_buckets.assign(static_cast<std::size_t>(p.stages), {});
    for (int slot = 0; slot < p.stages; ++slot) {
      std::vector<OpId> ops;
      for (OpId v = 0; v < p.n; ++v)
        if (p.has_fwd[v] && p.op_slot[v] == slot) ops.push_back(v);
      p.slot_buckets[static_cast<std::size_t>(slot)] = make_buckets(p, ops, cap);
    }
  } else {
    // Stage granularity: at most kMaxStageBuckets per chunk (the bucket grows), so that a 530B
    // chunk holding gigabytes of gradients stays a handful of tasks.
    constexpr std::int64_t kMaxStageBuckets = 4;
    p.chunk_buckets.assign(static_cast<std::size_t>(p.chunks), {});
    for (int c = 0; c < p.chunks; ++c) {
      const auto& ops = p.chunk_ops[static_cast<std::size_t>(c)];
      Bytes total = 0;
      for (OpId v : ops) total += p.params[v];
      total *= p.grad_bytes_per_param();
      p.chunk_buckets[static_cast<std::size_t>(c)] =
          make_buckets(p, ops, std::max(cap, (total + kMaxStageBuckets - 1) / kMaxStageBuckets));
    }
  }
  p.slot_params.assign(static_cast<std::size_t>(p.stages), 0);
  p.slot_expert_params.assign(static_cast<std::size_t>(p.stages), 0);
  for (OpId v = 0; v < p.n; ++v) {
    p.slot_params[static_cast<std::size_t>(p.op_slot[v])] += p.params[v];
    p.slot_expert_params[static_cast<std::size_t>(p.op_slot[v])] += p.expert_params[v];
  }
  // ZeRO-3 gathers layer by layer (a layer: a top-level block, or an op outside blocks); the
  // layer being computed and the next one (prefetched) are whole at once: the two largest count.
  p.slot_gathered.assign(static_cast<std::size_t>(p.stages), 0);
  p.chunk_layers.assign(static_cast<std::size_t>(p.chunks), 0);
  if (p.zero3()) {
    std::vector<std::map<std::string, Bytes>> layers(static_cast<std::size_t>(p.stages));
    std::vector<std::set<std::string>> chunk_units(static_cast<std::size_t>(p.chunks));
    // The op-granularity lowering numbers the same units per slot, in op order.
    const bool op_lowering = p.setup->granularity == Granularity::Op || !p.layered();
    std::map<std::pair<int, std::string>, int> unit_index;
    if (op_lowering) p.op_unit.assign(static_cast<std::size_t>(p.n), -1);
    for (OpId v = 0; v < p.n; ++v) {
      if (p.params[v] == 0) continue;
      const std::string& block = p.structure->op(v).block;
      const std::string unit = block.empty() ? "\x1f" + p.structure->op(v).name : block.substr(0, block.find('/'));
      layers[static_cast<std::size_t>(p.op_slot[v])][unit] += p.params[v] * per_param;
      chunk_units[static_cast<std::size_t>(p.op_chunk[v])].insert(unit);
      if (!op_lowering) continue;
      const auto [it, fresh] = unit_index.try_emplace({p.op_slot[v], unit}, static_cast<int>(p.unit_bytes.size()));
      if (fresh) {
        p.unit_bytes.push_back(0);
        p.unit_last_backward.push_back(v);  // the lowest id: the backward reaches it last
      }
      p.op_unit[v] = it->second;
      p.unit_bytes[static_cast<std::size_t>(it->second)] += p.params[v] * per_param;
    }
    for (int slot = 0; slot < p.stages; ++slot) {
      Bytes first = 0, second = 0;
      for (const auto& [unit, bytes] : layers[static_cast<std::size_t>(slot)]) {
        if (bytes > first) {
          second = first;
          first = bytes;
        } else if (bytes > second) {
          second = bytes;
        }
      }
      p.slot_gathered[static_cast<std::size_t>(slot)] = first + second;
    }
    for (int c = 0; c < p.chunks; ++c)
      p.chunk_layers[static_cast<std::size_t>(c)] = static_cast<int>(chunk_units[static_cast<std::size_t>(c)].size());
  }
  // A tied op on another device keeps its own copy of the shared weight (Megatron's embedding copy
  // on the last stage).
  for (const Tie& tie : p.ties)
    if (p.op_slot[tie.op] != p.op_slot[tie.owner])
      p.slot_params[static_cast<std::size_t>(p.op_slot[tie.op])] += p.params[tie.owner];
}

}  // namespace

std::unique_ptr<Prepared> prepare_step(const StepSetup& setup, PrepareFor use) {
  check_setup(setup);
  auto pp = std::make_unique<Prepared>();
  Prepared& p = *pp;
  p.setup = &setup;
  p.cluster = setup.cluster;
  p.s = setup.strategy;
  p.replicas = p.s.dp;
  p.stages = p.s.mp;
  p.tp_ranks = p.s.tp;
  p.chunks_per_stage = p.s.schedule == Schedule::Interleaved ? p.s.interleave : 1;
  p.chunks = p.stages * p.chunks_per_stage;
  p.micro_batches = p.s.micro;
  p.async = p.s.asynchronous();
  // Asynchronous schedules: a pipeline's fill (stages micro-batches), the K measured in steady state,
  // and as many again behind them, so that the measured ones never run in the drain (simulate_strategy).
  p.simulated_micro_batches = p.async ? p.micro_batches + 2 * p.stages : p.micro_batches;
  p.dtype = setup.dtype.value_or(setup.model->dtype());
  p.mapping = std::make_unique<DeviceMapping>(p.s, *p.cluster);
  if (setup.cache == nullptr) p.own_cache = std::make_unique<StepCache>();
  p.cache = setup.cache != nullptr ? setup.cache : p.own_cache.get();
  p.tp = p.cache->tp_plan(*setup.model);
  if (p.tp_ranks > 1 && !p.tp->any())
    throw InputError(to_string(p.s) + ": model " + setup.model->name() +
                     " has no transformer layers to split; tensor parallelism (tp > 1) applies to blocks with "
                     "self-attention");
  p.sp = p.tp_ranks > 1 && p.s.sequence_parallel();
  p.ep = p.s.ep;
  p.ep_replicas = p.s.expert_group_replicas();
  p.cp = p.s.cp;
  // CP rank 0 stands for every CP rank (load-balanced ring attention gives each the same work).
  if (p.cp > 1 && setup.symmetry == Symmetry::None)
    throw InputError(to_string(p.s) +
                     ": context parallelism (cp > 1) is simulated on context-parallel rank 0 "
                     "only; every device's tasks (--all-devices, validate) are not built for it");
  const bool has_experts = experts_gcd(*setup.model) > 0;
  if (p.ep > 1 && !has_experts)
    throw InputError(to_string(p.s) + ": model " + setup.model->name() +
                     " has no mixture-of-experts layers (experts ops); expert parallelism (ep > 1) shards their "
                     "experts");
  if (p.s.etp != 0 && p.tp_ranks > 1 && !has_experts)
    throw InputError(to_string(p.s) + ": model " + setup.model->name() +
                     " has no mixture-of-experts layers (experts ops); etp says how their experts are split over "
                     "the TP ranks");
  p.etp = has_experts && p.s.experts_split_over_tp();  // implies sequence parallelism (strategy.cpp)
  resolve_kinds(p);
  if (p.cp > 1 && p.kinds.size() > 1)
    throw InputError(to_string(p.s) + ": context parallelism (cp > 1) needs one device kind; the cluster mixes " +
                     p.kinds.front() + " and " + p.kinds.back());

  // The micro-batch of an even split drives placement and the speed split.
  const std::int64_t micro0 =
      std::max<std::int64_t>(1, setup.global_batch / (static_cast<std::int64_t>(p.replicas) * p.micro_batches));
  Variant v0 = make_variant(p, micro0);
  p.structure = v0.model.get();
  index_structure(p);
  p.segment.assign(p.n, -1);
  fill_variant_transfers(p, v0);  // for the partition (the memory numbers come below)
  place_ops(p, v0);
  find_recompute_segments(p);
  split_batch(p, v0);
  for (const auto& per_replica : p.micro)
    for (std::int64_t m : per_replica) {
      if (p.variants.count(m)) continue;
      if (m == micro0 && use == PrepareFor::Bound) {  // the bound reads its times and transfer sizes only
        p.variants.emplace(m, std::move(v0));
        continue;
      }
      Variant v = m == micro0 ? v0 : make_variant(p, m);
      if (use == PrepareFor::Bound) fill_variant_transfers(p, v);
      else fill_variant_memory(p, v);
      p.variants.emplace(m, std::move(v));
    }
  choose_symmetry(p);
  if (use == PrepareFor::Lowering) {  // the bound reads no bucket or memory number
    form_buckets(p);
    count_cost_sources(p);
  }
  return pp;
}

}  // namespace parasim::strategies::detail
