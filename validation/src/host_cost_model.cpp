// Host profile costs for any device kind, plus the runtime's per-task dispatch cost.
#include "parasim/validation/host_cost_model.hpp"

#include <cmath>

namespace parasim::validation {

HostCostModel::HostCostModel(const profiler::CostModel& inner, std::string host_kind, TimeNs per_task_ns,
                             std::map<std::string, double> slowdown)
    : inner_(inner), host_kind_(std::move(host_kind)), per_task_ns_(per_task_ns), slowdown_(std::move(slowdown)) {}

profiler::OpCost HostCostModel::cost(const models::Op& op, const std::string&, profiler::Optimizer opt) const {
  profiler::OpCost c = inner_.cost(op, host_kind_, opt);
  auto it = slowdown_.find(op.name);
  const double f = it == slowdown_.end() ? 1.0 : it->second;
  for (profiler::Phase p : profiler::kPhases)
    if (profiler::op_has_phase(op, p))
      c.at(p) = static_cast<TimeNs>(std::llround(static_cast<double>(c.at(p) + per_task_ns_) * f));
  return c;
}

TimeNs HostCostModel::memory_pass_ns(Bytes, const std::string&) const { return 0; }

std::string HostCostModel::describe() const {
  std::string d = inner_.describe() + " + " + std::to_string(per_task_ns_) + " ns CPU-executor dispatch per task";
  if (!slowdown_.empty()) d += ", contention slowdown on " + std::to_string(slowdown_.size()) + " ops";
  return d;
}

}  // namespace parasim::validation
