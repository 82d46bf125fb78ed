#include "parasim/strategies/step_cache.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/expert_parallel.hpp"

namespace parasim::strategies {

std::shared_ptr<const TpPlan> StepCache::tp_plan(const models::Model& base) {
  {
    std::lock_guard lock(mu_);
    if (auto it = plans_.find(&base); it != plans_.end()) return it->second;
  }
  auto plan = std::make_shared<const TpPlan>(plan_tensor_parallel(base));
  std::lock_guard lock(mu_);
  return plans_.try_emplace(&base, std::move(plan)).first->second;
}

std::shared_ptr<const models::Model> StepCache::model(const models::Model& base, std::int64_t batch,
                                                      models::DType dtype, int tp, int ep, double load, int cp) {
  if (cp > 1) {
    // The base at seq / cp tokens, built once; everything else is derived from it as without CP.
    std::shared_ptr<const models::Model> cp_base;
    {
      std::lock_guard lock(mu_);
      if (auto it = cp_bases_.find({&base, cp}); it != cp_bases_.end()) cp_base = it->second;
    }
    if (!cp_base) {
      auto built = std::make_shared<const models::Model>(shard_for_context_parallel(base, cp));
      std::lock_guard lock(mu_);
      cp_base = cp_bases_.try_emplace({&base, cp}, std::move(built)).first->second;
    }
    return model(*cp_base, batch, dtype, tp, ep, load);
  }
  const ModelKey key{&base, batch, static_cast<int>(dtype), tp, ep, load};
  {
    std::lock_guard lock(mu_);
    if (auto it = models_.find(key); it != models_.end()) return it->second;
  }
  std::shared_ptr<const models::Model> built;
  if (ep > 1 || load != 1.0) {
    built = std::make_shared<const models::Model>(shard_for_expert_parallel(*model(base, batch, dtype, tp), ep, load));
  } else if (tp > 1) {
    // Sharded straight from the base model at the batch: the unsharded model at that batch is
    // only built when something asks for it.
    const auto plan = tp_plan(base);
    built = std::make_shared<const models::Model>(shard_for_tensor_parallel(base, *plan, tp, batch, dtype));
  } else if (batch == base.batch() && dtype == base.dtype()) {
    built = std::make_shared<const models::Model>(base);
  } else {
    built = std::make_shared<const models::Model>(models::with_batch(base, batch, dtype));
  }
  std::lock_guard lock(mu_);
  return models_.try_emplace(key, std::move(built)).first->second;
}

std::shared_ptr<const std::vector<profiler::OpCost>> StepCache::costs(const std::shared_ptr<const models::Model>& model,
                                                                     const std::string& kind, profiler::Optimizer opt,
                                                                     const profiler::CostModel& cost_model) {
  const CostKey key{model.get(), kind, static_cast<int>(opt), &cost_model};
  {
    std::lock_guard lock(mu_);
    if (auto it = costs_.find(key); it != costs_.end()) return it->second;
  }
  const std::string prefix = kind + '\x1f' + std::to_string(static_cast<int>(opt)) + '\x1f' +
                             std::to_string(reinterpret_cast<std::uintptr_t>(&cost_model)) + '\x1f';
  auto out = std::make_shared<std::vector<profiler::OpCost>>(model->num_ops());
  for (models::OpId v = 0; v < model->num_ops(); ++v) {
    const models::Op& op = model->op(v);
    const std::string sig = prefix + op.signature();
    {
      std::lock_guard lock(mu_);
      if (auto it = by_signature_.find(sig); it != by_signature_.end()) {
        (*out)[v] = it->second;
        continue;
      }
    }
    const profiler::OpCost c = cost_model.cost(op, kind, opt);
    (*out)[v] = c;
    std::lock_guard lock(mu_);
    by_signature_.emplace(sig, c);
    ++cost_model_calls_;
  }
  std::lock_guard lock(mu_);
  return costs_.try_emplace(key, std::move(out)).first->second;
}

std::shared_ptr<const StepCache::OpLinks> StepCache::op_links(const models::Model& m) {
  {
    std::lock_guard lock(mu_);
    if (auto it = links_.find(&m); it != links_.end()) return it->second;
  }
  auto links = std::make_shared<OpLinks>();
  const std::size_t n = m.num_ops();
  links->inputs.assign(n, {});
  links->consumers.assign(n, {});
  for (models::OpId v = 0; v < n; ++v) {
    for (models::OpId u : m.inputs_of(v)) {
      if (u >= v)
        throw RuntimeError("model " + m.name() + ": op " + m.op(v).name + " is stored before its input " +
                           m.op(u).name +
                           "; lowering needs ops in topological order (load it through the model loader)");
      auto& in = links->inputs[v];
      if (std::find(in.begin(), in.end(), u) == in.end()) in.push_back(u);
    }
    links->consumers[v] = m.consumers_of(v);
  }
  std::lock_guard lock(mu_);
  return links_.try_emplace(&m, std::move(links)).first->second;
}

std::shared_ptr<const std::vector<int>> StepCache::partition(const PartitionKey& key) const {
  std::lock_guard lock(mu_);
  const auto it = partitions_.find(key);
  return it == partitions_.end() ? nullptr : it->second;
}

std::shared_ptr<const std::vector<int>> StepCache::add_partition(const PartitionKey& key,
                                                                 std::vector<int> chunk_of_op) {
  auto value = std::make_shared<const std::vector<int>>(std::move(chunk_of_op));
  std::lock_guard lock(mu_);
  return partitions_.try_emplace(key, std::move(value)).first->second;
}

std::int64_t StepCache::models_built() const {
  std::lock_guard lock(mu_);
  return static_cast<std::int64_t>(models_.size());
}

std::int64_t StepCache::cost_model_calls() const {
  std::lock_guard lock(mu_);
  return cost_model_calls_;
}

}  // namespace parasim::strategies
