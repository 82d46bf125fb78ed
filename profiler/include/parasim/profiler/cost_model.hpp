// Per-op costs: what one op's forward, backward and optimizer update take on one device kind.
//
// A CostModel answers for an op *as built* (its shapes already carry the batch size), so the
// strategies layer builds the model at the per-device micro-batch and asks here.
// Every answer says where it came from; nothing is silently guessed.
//
// Example:
//   RooflineCostModel roofline;
//   OpCost c = roofline.cost(model.op(v), "V100-SXM2-32GB");
//   TimeNs step_compute = c.fwd + c.bwd_data + c.bwd_weight + c.update;
#pragma once

#include <cstdint>
#include <string>

#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::profiler {

enum class Phase : std::uint8_t { Forward, BackwardData, BackwardWeight, Update };
std::string to_string(Phase p);

enum class CostSource : std::uint8_t {
  MeasuredGpu,     // CUPTI kernel records from a real GPU run
  MeasuredCpu,     // timed on the host with oneDNN
  Imported,        // from a torch.profiler/Kineto trace
  MeasuredScaled,  // measured at another batch size, scaled linearly in the batch
  Roofline,        // analytical: device peaks x efficiency curve
};
std::string to_string(CostSource s);
bool is_measured(CostSource s);

struct OpCost {
  TimeNs fwd = 0;
  TimeNs bwd_data = 0;
  TimeNs bwd_weight = 0;
  TimeNs update = 0;  // optimizer step for this op's parameters (0 for parameter-free ops)
  CostSource source = CostSource::Roofline;
  TimeNs bwd() const { return bwd_data + bwd_weight; }
  TimeNs total() const { return fwd + bwd_data + bwd_weight + update; }
};

enum class Optimizer : std::uint8_t { Sgd, Momentum, Adam };
std::string to_string(Optimizer o);
Optimizer parse_optimizer(const std::string& s);  // InputError on unknown
/// Optimizer state bytes per parameter (fp32 master state): sgd 0, momentum 4, adam 8.
Bytes optimizer_state_bytes_per_param(Optimizer o);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Cost of `op` on a device of kind `device_kind` (canonical hardware::DeviceSpec kind).
  virtual OpCost cost(const models::Op& op, const std::string& device_kind, Optimizer opt) const = 0;
  /// One line for reports: "roofline (V100 peaks x efficiency curve)", "profile traces/h200/resnet50-b32-fp32.json".
  virtual std::string describe() const = 0;
};

}  // namespace parasim::profiler
