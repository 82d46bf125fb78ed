// The cost model of the "cpu-host" cluster: every op cost comes from the host's measured
// profile, whatever device kind the lowering asks for (the cluster's devices carry a placeholder
// kind; see host_calibration.hpp), plus the CPU runtime's own per-task dispatch cost, which an
// isolated profile timing never pays but every task of an executed step does, times a per-op
// slowdown for contention: the profile ran alone, but inside a step other devices' threads
// compute at the same time on cores that do not give each of them full speed (validate derives
// the factors from the simulated overlap and the measured concurrent speeds, see validate.cpp).
//
// Example:
//   profiler::ProfileCostModel profile{profile_model_on_cpu(model, {})};
//   HostCostModel costs{profile, profile.profile().device.kind, calibration.dispatch};
//   OpCost c = costs.cost(model.op(v), "whatever", profiler::Optimizer::Sgd);
#pragma once

#include <map>
#include <string>

#include "parasim/profiler/cost_model.hpp"

namespace parasim::validation {

class HostCostModel final : public profiler::CostModel {
 public:
  /// `inner` must outlive this model; `host_kind` is the kind the host profile was made for;
  /// `slowdown` by op name (missing: 1).
  HostCostModel(const profiler::CostModel& inner, std::string host_kind, TimeNs per_task_ns,
                std::map<std::string, double> slowdown = {});

  profiler::OpCost cost(const models::Op& op, const std::string& device_kind, profiler::Optimizer opt) const override;
  /// 0: the CPU executor's kernels write each micro-batch's gradients and run no pass of their own,
  /// so a projection of what it measures has none either.
  TimeNs memory_pass_ns(Bytes bytes, const std::string& device_kind) const override;
  std::string describe() const override;

 private:
  const profiler::CostModel& inner_;
  std::string host_kind_;
  TimeNs per_task_ns_;
  std::map<std::string, double> slowdown_;
};

}  // namespace parasim::validation
