#include "prepare_placement.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "parasim/common/error.hpp"
#include "parasim/strategies/branch_placement.hpp"
#include "parasim/strategies/partition.hpp"
#include "parasim/strategies/placement_file.hpp"
#include "prepare_variants.hpp"

namespace parasim::strategies::detail {

namespace {

/// The top-level block of a block path ("h.3/attn" -> "h.3"), a view into the model's op: no
/// string per op (every candidate shape reads every op's block).
std::string_view top_level(const std::string& block) { return std::string_view(block).substr(0, block.find('/')); }

/// Forward + backward (+ recompute) time of op v on device kind `k`: what a micro-batch costs.
TimeNs work(const Prepared& p, const Variant& v0, int k, OpId v) {
  const OpTimes& t = v0.times[static_cast<std::size_t>(k)][v];
  TimeNs w = t.fwd + t.bwd();
  if (p.s.recompute != Recompute::None && p.tp->in_tp_block[v]) w += t.fwd;  // upper bound for the partition
  return w;
}

/// Units the layer partition may not split: each TP block (transformer layer) is one unit, every
/// other op its own; ops without work join the next unit (trailing ones the last).
std::vector<int> partition_units(const Prepared& p, int& units) {
  std::vector<int> unit(p.n, -1);
  int next = 0;
  std::string_view open_block;
  for (OpId v = 0; v < p.n; ++v) {
    if (!p.has_fwd[v]) continue;
    const std::string_view b = p.tp->in_tp_block[v] ? top_level(p.structure->op(v).block) : std::string_view();
    if (b.empty() || b != open_block) ++next;
    open_block = b;
    unit[v] = next - 1;
  }
  units = next;
  int following = std::max(0, units - 1);
  for (std::size_t i = p.n; i-- > 0;) {
    if (unit[i] >= 0) following = unit[i];
    else unit[i] = following;
  }
  return unit;
}

/// The optimal contiguous partition of the model's units into the C chunks (chunk per op).
std::vector<int> partition_layers(const Prepared& p, const Variant& v0) {
  int units = 0;
  const std::vector<int> unit = partition_units(p, units);
  if (units < p.chunks)
    throw InputError(to_string(p.s) + " cuts model " + p.structure->name() + " into " + std::to_string(p.chunks) +
                     " pipeline chunks, but it has only " + std::to_string(units) +
                     " units to place (ops, or whole transformer layers); use fewer stages");
  // Bytes crossing the cut before unit i (forward activations; gradients cross back the same amount).
  std::vector<Bytes> crossing(static_cast<std::size_t>(units) + 1, 0);
  for (OpId u = 0; u < p.n; ++u) {
    if (p.is_input[u]) continue;
    int last = unit[u];
    for (OpId w : p.consumers[u]) last = std::max(last, unit[w]);
    for (int i = unit[u] + 1; i <= last; ++i) crossing[static_cast<std::size_t>(i)] += v0.xfer_bytes[u];
  }
  // Prefix sums of the units' work per device kind (slots of one kind share them).
  std::vector<std::vector<TimeNs>> prefix_of_kind(p.kinds.size());
  std::vector<const std::vector<TimeNs>*> prefix(static_cast<std::size_t>(p.stages));
  for (int slot = 0; slot < p.stages; ++slot) {
    const int k = p.kind_of(0, slot, 0);
    auto& pre = prefix_of_kind[static_cast<std::size_t>(k)];
    if (pre.empty()) {
      pre.assign(static_cast<std::size_t>(units) + 1, 0);
      for (OpId v = 0; v < p.n; ++v)
        if (p.has_fwd[v]) pre[static_cast<std::size_t>(unit[v]) + 1] += work(p, v0, k, v);
      for (std::size_t i = 1; i < pre.size(); ++i) pre[i] += pre[i - 1];
    }
    prefix[static_cast<std::size_t>(slot)] = &pre;
  }
  // The routes between the devices of consecutive chunks (slot s -> s + 1 and back), looked up
  // once: route queries are not free on clusters of thousands of devices.
  struct Hop {
    hardware::RouteSummary forward, backward;
  };
  std::vector<Hop> hops(static_cast<std::size_t>(p.stages));
  for (int a = 0; a < p.stages && p.stages > 1; ++a) {
    const int b = (a + 1) % p.stages;
    hops[static_cast<std::size_t>(a)] = {p.cluster->route_summary(p.device(0, a, 0), p.device(0, b, 0)),
                                         p.cluster->route_summary(p.device(0, b, 0), p.device(0, a, 0))};
  }
  // Time to move the cut's tensors forward and their gradients back between chunk `part` and the next.
  auto cut_time = [&](int part, int at) -> TimeNs {
    const Bytes bytes = crossing[static_cast<std::size_t>(at)];
    if (bytes <= 0 || p.stages == 1) return 0;
    const Hop& h = hops[static_cast<std::size_t>(part % p.stages)];
    return transfer_time(h.forward.latency, bytes, h.forward.bottleneck) +
           transfer_time(h.backward.latency, bytes, h.backward.bottleneck);
  };
  // cut_time() memoised per (slot, cut position): the partition asks for each many times. The
  // program's inner loop looks chunks up in tables, not by `chunk % stages` (a division each).
  const auto row = static_cast<std::size_t>(units) + 1;
  std::vector<TimeNs> cut_memo(static_cast<std::size_t>(p.stages) * row, -1);
  std::vector<std::size_t> memo_row(static_cast<std::size_t>(p.chunks));
  std::vector<const TimeNs*> prefix_of_chunk(static_cast<std::size_t>(p.chunks));
  for (int c = 0; c < p.chunks; ++c) {
    memo_row[static_cast<std::size_t>(c)] = static_cast<std::size_t>(c % p.stages) * row;
    prefix_of_chunk[static_cast<std::size_t>(c)] = prefix[static_cast<std::size_t>(c % p.stages)]->data();
  }
  auto cut_time_of = [&](int part, int at) {
    TimeNs& t = cut_memo[memo_row[static_cast<std::size_t>(part)] + static_cast<std::size_t>(at)];
    if (t < 0) t = cut_time(part, at);
    return t;
  };
  auto compute = [&](int c, int begin, int end) {
    const TimeNs* pre = prefix_of_chunk[static_cast<std::size_t>(c)];
    return pre[end] - pre[begin];
  };
  const Partition part = partition_contiguous_inline(
      units, p.chunks,
      [&](int c, int begin, int end) {
        TimeNs t = compute(c, begin, end);
        if (begin > 0) t += cut_time_of(c - 1, begin);
        if (end < units) t += cut_time_of(c, end);
        return t;
      },
      compute);  // the chunk's compute alone bounds its cost from below and grows with the chunk
  std::vector<int> chunk_of_unit(static_cast<std::size_t>(units));
  for (int c = 0; c < p.chunks; ++c)
    for (int i = part.bounds[static_cast<std::size_t>(c)]; i < part.bounds[static_cast<std::size_t>(c) + 1]; ++i)
      chunk_of_unit[static_cast<std::size_t>(i)] = c;
  std::vector<int> chunk_of_op(p.n);
  for (OpId v = 0; v < p.n; ++v) chunk_of_op[v] = chunk_of_unit[static_cast<std::size_t>(unit[v])];
  return chunk_of_op;
}

/// What the partition depends on: the model variant it was costed on (its micro-batch size and
/// TP sharding), the chunks and slots, whether recomputation is charged and sequence parallelism
/// shortens the replicated ops (make_variant), and the devices and
/// device kinds of replica 0's slots (the cut times between them). Planners ask for the same
/// partition for every dp, ZeRO stage and micro-batch count of one pipeline.
StepCache::PartitionKey partition_key(const Prepared& p, const Variant& v0) {
  StepCache::PartitionKey key{reinterpret_cast<std::intptr_t>(v0.model.get()),
                              reinterpret_cast<std::intptr_t>(p.cluster),
                              reinterpret_cast<std::intptr_t>(p.setup->costs),
                              p.chunks,
                              p.stages,
                              p.s.recompute != Recompute::None,
                              p.sp};
  // The gradient-accumulation pass lengthens each op's backward by a share that depends on the
  // micro-batch count (in-place skips the first micro-batch).
  key.push_back(grad_accumulation_bytes_per_param(p.setup->grad_accumulation, p.dtype));
  key.push_back(std::llround(accumulation_passes(p) * 1e9));
  for (int slot = 0; slot < p.stages; ++slot) {
    key.push_back(p.device(0, slot, 0));
    key.push_back(p.kind_of(0, slot, 0));
  }
  return key;
}

void place_layers(Prepared& p, const Variant& v0) {
  const StepCache::PartitionKey key = partition_key(p, v0);
  const std::shared_ptr<const std::vector<int>> chunk_of_op =
      p.cache->partition(key, [&] { return partition_layers(p, v0); });
  for (OpId v = 0; v < p.n; ++v) {
    p.op_chunk[v] = (*chunk_of_op)[v];
    p.op_slot[v] = p.op_chunk[v] % p.stages;
  }
}

/// Ops without work follow the data: an input goes with its first consumer, a reshape with its producer.
void place_passive_ops(Prepared& p) {
  for (std::size_t i = p.n; i-- > 0;) {
    if (p.op_slot[i] >= 0) continue;
    const auto& c = p.consumers[i];
    p.op_slot[i] = c.empty() ? 0 : p.op_slot[c.front()];
    p.op_chunk[i] = c.empty() ? 0 : p.op_chunk[c.front()];
  }
  for (OpId v = 0; v < p.n; ++v) {
    if (p.structure->op(v).kind != models::OpKind::Reshape || p.inputs[v].empty()) continue;
    const OpId u = p.inputs[v].front();
    if (p.is_input[u]) continue;
    p.op_slot[v] = p.op_slot[u];
    p.op_chunk[v] = p.op_chunk[u];
  }
}

}  // namespace

void place_ops(Prepared& p, const Variant& v0) {
  p.op_chunk.assign(p.n, -1);
  p.op_slot.assign(p.n, -1);
  if (p.stages == 1 && p.chunks_per_stage == 1) {
    std::fill(p.op_chunk.begin(), p.op_chunk.end(), 0);
    std::fill(p.op_slot.begin(), p.op_slot.end(), 0);
  } else if (p.s.placement == Placement::Layers) {
    place_layers(p, v0);
  } else {
    std::vector<int> slot;
    if (p.s.placement == Placement::Branches) {
      std::vector<std::vector<TimeNs>> cost(static_cast<std::size_t>(p.stages), std::vector<TimeNs>(p.n, 0));
      for (int d = 0; d < p.stages; ++d)
        for (OpId v = 0; v < p.n; ++v) cost[static_cast<std::size_t>(d)][v] = work(p, v0, p.kind_of(0, d, 0), v);
      slot = place_branches(*p.structure, cost, p.stages);
    } else {
      slot = load_placement_file(p.s.placement_file, *p.structure, p.stages);
    }
    for (OpId v = 0; v < p.n; ++v) {
      const bool passive = !p.has_fwd[v];
      p.op_slot[v] = passive && p.s.placement == Placement::File ? -1 : slot[v];
      p.op_chunk[v] = p.op_slot[v];
    }
  }
  place_passive_ops(p);
  p.chunk_ops.assign(static_cast<std::size_t>(p.chunks), {});
  for (OpId v = 0; v < p.n; ++v)
    if (p.has_fwd[v]) p.chunk_ops[static_cast<std::size_t>(p.op_chunk[v])].push_back(v);
  for (int c = 0; c < p.chunks; ++c)
    if (p.chunk_ops[static_cast<std::size_t>(c)].empty())
      throw InputError(to_string(p.s) + ": " + (p.layered() ? "pipeline chunk " : "device ") + std::to_string(c) +
                       " of model " + p.structure->name() + " gets no ops; use fewer devices");
}

void find_recompute_segments(Prepared& p) {
  p.segment.assign(p.n, -1);
  p.segments.clear();
  if (p.s.recompute != Recompute::Full) return;
  // Frameworks checkpoint transformer layers only (Megatron-LM's TransformerBlock, DeepSpeed's,
  // FSDP's and torchtitan's per-block wrappers): a model with them keeps its embeddings' and
  // head's activations and does not rerun them. Other models recompute every top-level block.
  const bool transformer = p.tp->blocks > 0;
  int most_layers = 0;
  for (const auto& ops : p.chunk_ops) {
    std::string_view open;
    int layers = 0;  // recomputable blocks of this chunk so far
    bool recomputing = false;
    for (OpId v : ops) {
      const std::string_view b = top_level(p.structure->op(v).block);
      if (b.empty() || (transformer && !p.tp->in_tp_block[v])) {
        open = {};
        continue;
      }
      if (b != open) {
        open = b;
        // recompute_layers=N (Megatron-LM's --recompute-method block): the first N of each chunk.
        recomputing = p.s.recompute_layers == 0 || layers < p.s.recompute_layers;
        ++layers;
        if (recomputing) p.segments.emplace_back();
      }
      if (!recomputing) continue;
      p.segment[v] = static_cast<int>(p.segments.size()) - 1;
      p.segments.back().push_back(v);
    }
    most_layers = std::max(most_layers, layers);
  }
  if (p.s.recompute_layers > most_layers)
    throw InputError(to_string(p.s) + ": the " + (p.chunks > 1 ? "largest pipeline chunk" : "model") + " has " +
                     std::to_string(most_layers) + (transformer ? " transformer layers" : " blocks") +
                     " to recompute, fewer than recompute_layers=" + std::to_string(p.s.recompute_layers));
}

}  // namespace parasim::strategies::detail
