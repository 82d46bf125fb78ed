// Per-op costs: what one op's forward, backward and optimizer update take on one device kind.
//
// A CostModel answers for an op *as built* (its shapes already carry the batch size), so the
// strategies layer builds the model at the per-device micro-batch and asks here.
// Every answer says where it came from; nothing is silently guessed.
//
// Example:
//   RooflineCostModel roofline;                                  // parasim/profiler/roofline.hpp
//   OpCost c = roofline.cost(model.op(v), "V100-SXM2-32GB", Optimizer::Adam);
//   TimeNs step_compute = c.fwd + c.bwd_data + c.bwd_weight + c.update;
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "parasim/common/optimizer.hpp"
#include "parasim/common/units.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::profiler {

// The kernel phases and the optimizer are shared with the kernels (kernels/op_phases.hpp,
// common/optimizer.hpp); profiler:: keeps their names.
using kernels::kPhases;
using kernels::op_has_phase;
using kernels::parse_phase_key;
using kernels::Phase;
using kernels::phase_index;
using kernels::phase_key;
using kernels::throw_not_a_kernel_phase;
std::string to_string(Phase) = delete;  // makes to_string(phase) ambiguous here: profiles use phase_key()

enum class CostSource : std::uint8_t {
  MeasuredGpu,     // CUPTI kernel records from a real GPU run
  MeasuredCpu,     // timed on the host with oneDNN
  Imported,        // from a torch.profiler/Kineto trace
  MeasuredScaled,  // measured at another batch size, scaled linearly in the batch
  Roofline,        // analytical: device peaks x efficiency curve
};
/// "measured-gpu", "measured-cpu", "imported", "measured-scaled", "roofline".
std::string to_string(CostSource s);
std::optional<CostSource> parse_cost_source(std::string_view s);
bool is_measured(CostSource s);

struct OpCost {
  TimeNs fwd = 0;
  TimeNs bwd_data = 0;
  TimeNs bwd_weight = 0;
  TimeNs update = 0;  // optimizer step for this op's parameters (0 for parameter-free ops)
  CostSource source = CostSource::Roofline;
  /// Bytes the kernel keeps from forward to backward when that differs from the op's own
  /// activation_bytes (a fused attention kernel keeps no score matrix); -1: the op's own.
  Bytes saved_bytes = -1;
  /// The share of fwd, bwd_data and bwd_weight that is per-kernel launch overhead (the kernel
  /// model's; 0 for measured phases): what does not shrink when sequence parallelism gives a rank
  /// 1/T of a replicated op's tokens, since the rank still launches every kernel.
  TimeNs launch_fwd = 0;
  TimeNs launch_bwd_data = 0;
  TimeNs launch_bwd_weight = 0;
  TimeNs bwd() const { return bwd_data + bwd_weight; }
  TimeNs total() const { return fwd + bwd_data + bwd_weight + update; }
  TimeNs& at(Phase p);
  TimeNs at(Phase p) const;
};

using parasim::Optimizer;
using parasim::parse_optimizer;
/// Optimizer state bytes per parameter (fp32 master state): sgd 0, momentum 4, adam 8.
Bytes optimizer_state_bytes_per_param(Optimizer o);
/// Bytes one optimizer step moves per parameter: read the gradient (in the model dtype), read and
/// write the fp32 master weight and every fp32 state slot, and, for fp16/bf16 training, write the
/// low-precision copy of the weight. sgd fp32: 4 + 8 = 12; momentum: 20; adam: 28.
Bytes optimizer_traffic_bytes_per_param(Optimizer o, models::DType dtype);
using parasim::OptimizerKernels;
using parasim::parse_optimizer_kernels;
/// Bytes torch.optim's foreach implementation moves per parameter, one multi-tensor pass per
/// elementwise step over fp32 parameters, gradients and state, weight decay included (adam is
/// AdamW's decoupled decay): adam 80, momentum 44, sgd 24 (docs/fidelity.md counts the passes).
Bytes foreach_optimizer_traffic_bytes_per_param(Optimizer o);
/// Floating-point operations of one optimizer step per parameter (sgd 2, momentum 4, adam 12).
std::int64_t optimizer_flops_per_param(Optimizer o);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Cost of `op` on a device of kind `device_kind` (canonical hardware::DeviceSpec kind).
  virtual OpCost cost(const models::Op& op, const std::string& device_kind, Optimizer opt) const = 0;
  /// One bandwidth-bound kernel that moves `bytes` (read + written) on `device_kind` and belongs to
  /// no op: the training loop's gradient-accumulation pass (common/grad_accumulation.hpp).
  virtual TimeNs memory_pass_ns(Bytes bytes, const std::string& device_kind) const = 0;
  /// One line for reports: "roofline (V100 peaks x efficiency curve)", "profile traces/h200/resnet50-b32-fp32.json".
  virtual std::string describe() const = 0;
};

}  // namespace parasim::profiler
