#include "parasim/strategies/search_space.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "parasim/common/error.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/expert_parallel.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies {

namespace {

std::string top_level(const std::string& block) { return block.substr(0, block.find('/')); }

/// The units the layer partition cuts between, counted as lowering does (prepare_placement.cpp):
/// a run of ops of one transformer layer is one unit, every other op with a forward one unit.
int count_pipeline_units(const models::Model& model, const TpPlan& plan) {
  int units = 0;
  std::string open;
  for (models::OpId v = 0; v < model.num_ops(); ++v) {
    const models::Op& op = model.op(v);
    if (!profiler::op_has_phase(op, profiler::Phase::Forward)) continue;
    const std::string b = plan.in_tp_block[v] ? top_level(op.block) : std::string();
    if (b.empty() || b != open) ++units;
    open = b;
  }
  return std::max(units, 1);
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> small, large;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

/// The global batch of a dp-way candidate, or 0 when the space's batch rule has none.
std::int64_t batch_for(const SearchSpace& s, int dp) {
  if (s.global_batch > 0) return s.global_batch % dp == 0 ? s.global_batch : 0;
  if (s.per_device_batch > 0) return s.per_device_batch * dp;
  if (s.max_batch >= dp) return (s.max_batch / dp) * dp;
  return 0;
}

/// Axis orders (innermost first); with all_mappings, those that order the split axes differently.
std::vector<std::string> mappings_for(const Strategy& s, bool all) {
  if (!all) return {"tp-mp-dp"};
  static const std::array<std::array<const char*, 3>, 6> kOrders = {{{"tp", "mp", "dp"},
                                                                     {"tp", "dp", "mp"},
                                                                     {"mp", "tp", "dp"},
                                                                     {"mp", "dp", "tp"},
                                                                     {"dp", "tp", "mp"},
                                                                     {"dp", "mp", "tp"}}};
  auto extent = [&](const std::string& axis) { return axis == "tp" ? s.tp : axis == "mp" ? s.mp : s.dp; };
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& order : kOrders) {
    std::string split;  // the order of the axes that are actually split
    for (const char* a : order)
      if (extent(a) > 1) split += std::string(a) + ",";
    if (!seen.insert(split).second) continue;
    out.push_back(std::string(order[0]) + "-" + order[1] + "-" + order[2]);
  }
  return out;
}

struct Emit {
  const SearchSpace& space;
  const ModelFacts& facts;
  std::vector<Candidate>& out;

  void finish(Strategy s, std::int64_t batch) {
    for (int ep : expert_parallel_widths(space, facts, s.dp, s.cp == 1 ? s.tp : 1)) {
      s.ep = ep;
      s.imbalance = ep > 1 ? space.imbalance : 1.0;
      finish_ep(s, batch);
    }
  }

  void finish_ep(Strategy s, std::int64_t batch) {
    for (Recompute r : space.recomputes) {
      if (r == Recompute::Selective && !facts.has_attention) continue;
      s.recompute = r;
      finish_recompute(s, batch, false);
    }
    // Full recomputation of the fewest layers of each chunk that fit, searched when evaluated:
    // enumerated at the most layers short of all, the chunk's layers less one (the largest chunk
    // has at least ceil(L / chunks) of them). Megatron-Core runs it with sequence parallelism.
    const int chunks = s.mp * (s.schedule == Schedule::Interleaved ? s.interleave : 1);
    const int per_chunk = (facts.layers + chunks - 1) / chunks;
    if (space.partial_recompute && facts.min_layer_params > 0 && per_chunk >= 2) {
      s.recompute = Recompute::Full;
      s.recompute_layers = per_chunk - 1;
      if (s.tp > 1) s.sp = SeqParallel::On;
      finish_recompute(s, batch, true);
    }
  }

  void finish_recompute(Strategy s, std::int64_t batch, bool fewest_layers) {
    if (s.expert_groups_fold_tp() && !s.sequence_parallel()) return;  // folding needs sequence parallelism
    for (int z : space.zeros) {
      if (z >= 1 && s.dp * s.cp == 1) continue;  // ZeRO shards over DP x CP
      if (z == 3 && (s.asynchronous() || s.ep > 1)) continue;
      s.zero = z;
      for (const std::string& m : mappings_for(s, space.all_mappings)) {
        s.mapping = m;
        out.push_back({s, batch, fewest_layers});
      }
    }
  }

  void micro_batches(Strategy s, std::int64_t batch) {
    const std::int64_t replica = batch / s.dp;
    const std::int64_t cap = s.pipelined() ? static_cast<std::int64_t>(space.max_micro_per_stage) * s.mp
                                           : static_cast<std::int64_t>(space.max_accumulation);
    for (std::int64_t k : divisors(replica)) {
      if (k > cap) break;
      if (s.schedule == Schedule::Interleaved && k % s.mp != 0) continue;
      s.micro = static_cast<int>(k);
      finish(s, batch);
    }
  }

  void schedules(Strategy s, std::int64_t batch) {
    if (s.mp == 1) {
      s.schedule = Schedule::None;
      micro_batches(s, batch);
      return;
    }
    for (Schedule sched : space.schedules) {
      s.schedule = sched;
      s.placement = Placement::Layers;
      s.interleave = 1;
      if (sched == Schedule::Interleaved) {
        if (facts.layers % s.mp != 0) continue;
        const int per_stage = facts.layers / s.mp;
        for (int v = 2; v <= per_stage; ++v) {
          if (per_stage % v != 0 || static_cast<std::int64_t>(s.mp) * v > facts.pipeline_units) continue;
          s.interleave = v;
          micro_batches(s, batch);
        }
        continue;
      }
      micro_batches(s, batch);
      if (sched == Schedule::None && space.branch_placement && facts.forks) {
        s.placement = Placement::Branches;
        micro_batches(s, batch);
      }
    }
  }
};

}  // namespace

ModelFacts model_facts(const models::Model& model, int devices_per_node) {
  const TpPlan plan = plan_tensor_parallel(model);
  ModelFacts f;
  f.name = model.name();
  f.params = model.total_params();
  f.pipeline_units = count_pipeline_units(model, plan);
  f.layers = plan.any() ? plan.blocks : f.pipeline_units;
  f.tp_heads = plan.any() ? plan.max_heads : 0;
  f.tp_kv_heads = plan.any() ? plan.min_kv_heads : 0;
  f.devices_per_node = std::max(1, devices_per_node);
  std::map<std::string, std::int64_t> layer_params;
  for (models::OpId v = 0; v < model.num_ops(); ++v) {
    const models::Op& op = model.op(v);
    if (op.kind == models::OpKind::Attention) f.has_attention = true;
    if (!plan.any() && op.kind != models::OpKind::Input && model.consumers_of(v).size() >= 2) f.forks = true;
    if (plan.in_tp_block[v]) layer_params[top_level(op.block)] += op.params;
    f.expert_params += expert_params(op);
  }
  f.experts = experts_gcd(model);
  f.seq_len = attention_seq_len(model);
  for (const auto& [block, params] : layer_params)
    f.min_layer_params = f.min_layer_params == 0 ? params : std::min(f.min_layer_params, params);
  return f;
}

std::vector<int> expert_parallel_widths(const SearchSpace& space, const ModelFacts& facts, int dp, int tp) {
  std::vector<int> out{1};
  if (!space.expert_parallel || facts.experts <= 0) return out;
  for (int e = 2; e <= dp; ++e)
    if (dp % e == 0 && facts.experts % e == 0) out.push_back(e);
  if (tp > 1)
    for (int d = 1; d <= dp; ++d) {
      const std::int64_t e = static_cast<std::int64_t>(tp) * d;
      if (dp % d == 0 && dp % e != 0 && facts.experts % e == 0) out.push_back(static_cast<int>(e));
    }
  return out;
}

std::vector<int> context_parallel_widths(const SearchSpace& space, const ModelFacts& facts) {
  std::vector<int> out{1};
  if (facts.seq_len < space.min_cp_seq || facts.tp_heads <= 0) return out;
  for (int c = 2; c <= space.max_cp; c *= 2)
    if (facts.seq_len % (2 * c) == 0 && facts.seq_len / c >= space.min_cp_tokens) out.push_back(c);
  return out;
}

std::vector<int> tensor_parallel_widths(const SearchSpace& space, const ModelFacts& facts) {
  std::vector<int> out{1};
  if (facts.tp_heads <= 0) return out;
  const int cap = std::min(space.max_tp > 0 ? space.max_tp : facts.devices_per_node, facts.devices_per_node);
  for (int t = 2; t <= cap; ++t)
    if (facts.tp_heads % t == 0 && tp_fits_kv_heads(facts.tp_kv_heads, t)) out.push_back(t);
  return out;
}

std::vector<Candidate> enumerate_candidates(const SearchSpace& space, const ModelFacts& facts) {
  if (space.gpus < 1) throw InputError("--gpus: expected at least 1 GPU, found " + std::to_string(space.gpus));
  if (space.global_batch <= 0 && space.per_device_batch <= 0 && space.max_batch <= 0)
    throw InputError("planner: give a global batch, a per-device batch or a maximum batch");
  std::vector<Candidate> out;
  Emit emit{space, facts, out};
  const int max_mp = std::min(space.max_mp > 0 ? space.max_mp : facts.pipeline_units, facts.pipeline_units);
  const std::vector<int> cps = context_parallel_widths(space, facts);
  for (int tp : tensor_parallel_widths(space, facts)) {
    if (tp > space.gpus) break;
    for (int cp : cps) {
      const std::int64_t inner = static_cast<std::int64_t>(tp) * cp;  // a CP rank is a model-parallel split too
      if (inner > space.gpus) break;
      for (int mp = 1; mp <= max_mp && mp * inner <= space.gpus; ++mp) {
        const int width = static_cast<int>(mp * inner);
        if (width < space.min_model_parallel) continue;
        if (space.max_model_parallel > 0 && width > space.max_model_parallel) break;
        if (space.even_stages && facts.layers % mp != 0) continue;
        if (!space.allow_fewer && space.gpus % width != 0) continue;
        const int dp = space.gpus / width;
        const std::int64_t batch = batch_for(space, dp);
        if (batch <= 0) continue;
        Strategy s;
        s.dp = dp;
        s.mp = mp;
        s.tp = tp;
        s.cp = cp;
        emit.schedules(s, batch);
      }
    }
  }
  return out;
}

namespace {

template <class E>
std::vector<E> parse_list(const std::string& text, const std::string& origin, const std::vector<E>& all,
                          std::string (*name)(E), const std::string& also_known = "") {
  if (text == "all") return all;
  std::vector<E> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto it = std::find_if(all.begin(), all.end(), [&](E e) { return name(e) == item; });
    if (it == all.end()) {
      std::string known;
      for (E e : all) known += (known.empty() ? "" : ", ") + name(e);
      if (!also_known.empty()) known += ", " + also_known;
      throw InputError(origin + ": \"" + item + "\": expected all or a comma-separated list of " + known);
    }
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
  }
  if (out.empty()) throw InputError(origin + ": empty list");
  std::sort(out.begin(), out.end());
  return out;
}

std::string schedule_name(Schedule s) { return to_string(s); }
std::string recompute_name(Recompute r) { return to_string(r); }
std::string zero_name(int z) { return std::to_string(z); }

}  // namespace

std::vector<Schedule> parse_schedule_list(const std::string& text, const std::string& origin) {
  return parse_list<Schedule>(text, origin, SearchSpace{}.schedules, schedule_name);
}

std::vector<Recompute> parse_recompute_list(const std::string& text, const std::string& origin) {
  return parse_list<Recompute>(text, origin, SearchSpace{}.recomputes, recompute_name);
}

void parse_recompute_choices(const std::string& text, const std::string& origin, SearchSpace& space) {
  // "partial" is no Recompute value: taken out here, the rest parsed as the other lists are.
  std::string rest;
  bool partial = text == "all";
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (item == "partial") partial = true;
    else rest += (rest.empty() ? "" : ",") + item;
  space.recomputes = rest.empty() && partial
                         ? std::vector<Recompute>{}
                         : parse_list<Recompute>(rest, origin, SearchSpace{}.recomputes, recompute_name, "partial");
  space.partial_recompute = partial;
}

std::vector<int> parse_zero_list(const std::string& text, const std::string& origin) {
  return parse_list<int>(text, origin, {0, 1, 2, 3}, zero_name);
}

}  // namespace parasim::strategies
