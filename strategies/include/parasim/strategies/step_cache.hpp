// What simulate_strategy() would otherwise redo for every configuration: the model rebuilt at a
// micro-batch size (and sharded for tensor parallelism), its per-op costs on a device kind, and
// the layer partition of a pipeline (the same for every dp, ZeRO stage and micro-batch count).
// A planner sweeping thousands of strategies for one model keeps one StepCache and passes it in
// StepSetup::cache; every entry is then computed once. Costs are also shared between ops with
// the same Op::signature() (the 96 identical layers of GPT-3 cost one lookup).
//
// Thread-safe: planner threads may share one cache. Entries are keyed by the *address* of the
// base model, cost model and cluster, so keep those alive (and unchanged) as long as the cache is
// used.
//
// Example:
//   StepCache cache;
//   for (const Strategy& s : candidates) {
//     StepSetup setup{.model = &model, .cluster = &cluster, .strategy = s, .global_batch = 1536,
//                     .costs = &roofline, .cache = &cache};
//     StrategyResult r = simulate_strategy(setup);
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "parasim/hardware/cluster.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies {

class StepCache {
 public:
  /// `base` at `batch` samples in `dtype`, sharded for `tp` tensor-parallel ranks (tp > 1) and for
  /// `ep` expert-parallel ranks with the busiest rank's `load` (expert_parallel.hpp) and for `cp`
  /// context-parallel ranks (seq / cp tokens, context_parallel.hpp); `etp` > 1 splits every
  /// expert's FFN over that many TP ranks (expert tensor parallelism).
  std::shared_ptr<const models::Model> model(const models::Model& base, std::int64_t batch, models::DType dtype, int tp,
                                             int ep = 1, double load = 1.0, int cp = 1, int etp = 1);
  /// The TP plan of `base` (which ops are column/row-parallel).
  std::shared_ptr<const TpPlan> tp_plan(const models::Model& base);
  /// Per-op costs (by op id) of `model` (one this cache built) on `device_kind`.
  std::shared_ptr<const std::vector<profiler::OpCost>> costs(const std::shared_ptr<const models::Model>& model,
                                                            const std::string& device_kind, profiler::Optimizer opt,
                                                            const profiler::CostModel& cost_model);

  /// Each op's distinct inputs (in input order) and its consumers, for a model this cache built
  /// (the lowerings index a structure model once, not per candidate). Variants this cache built
  /// that differ only in their batch share one OpLinks: the batch changes no op, edge, kernel
  /// phase, parameter count or tied weight. RuntimeError when an op is stored before one of its
  /// inputs.
  struct OpLinks {
    std::vector<std::vector<models::OpId>> inputs, consumers;
    // Per op, what prepare_step reads of the op itself, also worked out once per model: its
    // kernel phases (op_has_phase), whether it is an input or a self-attention (one input: what
    // selective recomputation drops), its parameters, and the ops reusing another's weight.
    std::vector<char> has_fwd, has_bd, has_bw, has_update, is_input, self_attention;
    std::vector<std::int64_t> params;
    std::vector<std::pair<models::OpId, models::OpId>> ties;  // (op, the owner of its weight)
  };
  std::shared_ptr<const OpLinks> op_links(const models::Model& model);

  /// The layer partition memo: which chunk each op of `structure` goes to, for one key (the
  /// partition's inputs: see prepare_placement.cpp), worked out by `make` on the key's first use.
  using PartitionKey = std::vector<std::int64_t>;
  std::shared_ptr<const std::vector<int>> partition(const PartitionKey& key,
                                                    const std::function<std::vector<int>()>& make);

  /// cluster.device_kinds(), worked out once per cluster: a step on 5,128 devices of one kind
  /// need not compare every used device's kind (prepare_step, for every candidate).
  std::shared_ptr<const std::vector<std::string>> device_kinds(const hardware::Cluster& cluster);

  std::int64_t models_built() const;
  std::int64_t cost_model_calls() const;  // distinct (signature, kind, optimizer) lookups

 private:
  using ModelKey = std::tuple<const models::Model*, std::int64_t, int, int, int, double, int>;
  using CostKey = std::tuple<const models::Model*, std::string, int, const profiler::CostModel*>;
  // A ModelKey without the batch: (base, dtype, tp, ep, load, etp); (model, -1, 0, 0, 0, 0) for a
  // model this cache did not build.
  using StructureKey = std::tuple<const models::Model*, int, int, int, double, int>;
  // Every entry is a future: the first thread to ask for a key works it out, threads asking for
  // it meanwhile wait for that one instead of building the same model or partition again
  // (compute_once, strategies/src/compute_once.hpp).
  template <class T>
  using Entry = std::shared_future<std::shared_ptr<const T>>;
  std::shared_ptr<const models::Model> build_model(const models::Model& base, std::int64_t batch, models::DType dtype,
                                                   int tp, int ep, double load, int etp);

  mutable std::mutex mu_;
  std::map<ModelKey, Entry<models::Model>> models_;
  std::map<const models::Model*, Entry<TpPlan>> plans_;
  std::map<std::pair<const models::Model*, int>, Entry<models::Model>> cp_bases_;
  std::map<CostKey, Entry<std::vector<profiler::OpCost>>> costs_;
  std::unordered_map<std::string, profiler::OpCost> by_signature_;
  std::map<PartitionKey, Entry<std::vector<int>>> partitions_;
  std::map<StructureKey, Entry<OpLinks>> links_;
  std::map<const models::Model*, StructureKey> structure_of_;  // of the models this cache built
  std::map<const hardware::Cluster*, Entry<std::vector<std::string>>> kinds_;
  std::int64_t cost_model_calls_ = 0;
  std::int64_t models_built_ = 0;
};

}  // namespace parasim::strategies
