#include "parasim/strategies/step_cache.hpp"

#include <algorithm>

#include "compute_once.hpp"
#include "parasim/common/error.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/expert_parallel.hpp"

namespace parasim::strategies {

std::shared_ptr<const TpPlan> StepCache::tp_plan(const models::Model& base) {
  return compute_once(mu_, plans_, &base, [&] { return std::make_shared<const TpPlan>(plan_tensor_parallel(base)); });
}

std::shared_ptr<const models::Model> StepCache::model(const models::Model& base, std::int64_t batch,
                                                      models::DType dtype, int tp, int ep, double load, int cp,
                                                      int etp) {
  if (cp > 1) {
    // The base at seq / cp tokens, built once; everything else is derived from it as without CP.
    const std::shared_ptr<const models::Model> cp_base = compute_once(mu_, cp_bases_, {&base, cp}, [&] {
      return std::make_shared<const models::Model>(shard_for_context_parallel(base, cp));
    });
    return model(*cp_base, batch, dtype, tp, ep, load, 1, etp);
  }
  const ModelKey key{&base, batch, static_cast<int>(dtype), tp, ep, load, etp};
  return compute_once(mu_, models_, key, [&] {
    std::shared_ptr<const models::Model> built = build_model(base, batch, dtype, tp, ep, load, etp);
    std::lock_guard lock(mu_);
    ++models_built_;
    structure_of_.emplace(built.get(), StructureKey{&base, static_cast<int>(dtype), tp, ep, load, etp});
    return built;
  });
}

std::shared_ptr<const models::Model> StepCache::build_model(const models::Model& base, std::int64_t batch,
                                                            models::DType dtype, int tp, int ep, double load, int etp) {
  if (ep > 1 || load != 1.0 || etp > 1)
    return std::make_shared<const models::Model>(
        shard_for_expert_parallel(*model(base, batch, dtype, tp), ep, load, etp));
  if (tp > 1) {
    // Sharded straight from the base model at the batch: the unsharded model at that batch is
    // only built when something asks for it.
    const auto plan = tp_plan(base);
    return std::make_shared<const models::Model>(shard_for_tensor_parallel(base, *plan, tp, batch, dtype));
  }
  if (batch == base.batch() && dtype == base.dtype()) return std::make_shared<const models::Model>(base);
  return std::make_shared<const models::Model>(models::with_batch(base, batch, dtype));
}

std::shared_ptr<const std::vector<profiler::OpCost>> StepCache::costs(const std::shared_ptr<const models::Model>& model,
                                                                     const std::string& kind, profiler::Optimizer opt,
                                                                     const profiler::CostModel& cost_model) {
  const CostKey key{model.get(), kind, static_cast<int>(opt), &cost_model};
  return compute_once(mu_, costs_, key, [&] {
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
      if (by_signature_.emplace(sig, c).second) ++cost_model_calls_;
    }
    return std::shared_ptr<const std::vector<profiler::OpCost>>(std::move(out));
  });
}

std::shared_ptr<const StepCache::OpLinks> StepCache::op_links(const models::Model& m) {
  StructureKey key{&m, -1, 0, 0, 0.0, 0};
  {
    std::lock_guard lock(mu_);
    if (auto it = structure_of_.find(&m); it != structure_of_.end()) key = it->second;
  }
  return compute_once(mu_, links_, key, [&] {
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
    links->has_fwd.assign(n, 0);
    links->has_bd.assign(n, 0);
    links->has_bw.assign(n, 0);
    links->has_update.assign(n, 0);
    links->is_input.assign(n, 0);
    links->self_attention.assign(n, 0);
    links->params.assign(n, 0);
    for (models::OpId v = 0; v < n; ++v) {
      const models::Op& op = m.op(v);
      links->has_fwd[v] = profiler::op_has_phase(op, profiler::Phase::Forward);
      links->has_bd[v] = profiler::op_has_phase(op, profiler::Phase::BackwardData);
      links->has_bw[v] = profiler::op_has_phase(op, profiler::Phase::BackwardWeight);
      links->has_update[v] = profiler::op_has_phase(op, profiler::Phase::Update);
      links->is_input[v] = op.kind == models::OpKind::Input;
      links->self_attention[v] = op.kind == models::OpKind::Attention && op.input_shapes.size() == 1;
      links->params[v] = op.params;
      if (!op.attrs.shares_weights_with.empty())
        if (auto owner = m.find_op(op.attrs.shares_weights_with)) links->ties.emplace_back(v, *owner);
    }
    return std::shared_ptr<const OpLinks>(std::move(links));
  });
}

std::shared_ptr<const std::vector<int>> StepCache::partition(const PartitionKey& key,
                                                             const std::function<std::vector<int>()>& make) {
  return compute_once(mu_, partitions_, key, [&] { return std::make_shared<const std::vector<int>>(make()); });
}

std::shared_ptr<const std::vector<std::string>> StepCache::device_kinds(const hardware::Cluster& cluster) {
  return compute_once(mu_, kinds_, &cluster,
                      [&] { return std::make_shared<const std::vector<std::string>>(cluster.device_kinds()); });
}

std::int64_t StepCache::models_built() const {
  std::lock_guard lock(mu_);
  return models_built_;
}

std::int64_t StepCache::cost_model_calls() const {
  std::lock_guard lock(mu_);
  return cost_model_calls_;
}

}  // namespace parasim::strategies
