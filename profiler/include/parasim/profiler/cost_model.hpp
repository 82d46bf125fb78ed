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

#include "parasim/common/phase.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::profiler {

// Phase lives in common/ (the task graph shares it); profiler:: keeps the name. Costs, profiles
// and kernels know only the four phases an op has kernels for: a recompute reruns the forward
// kernel and Other has none (the executor maps them, executor/src/kernel_phase.hpp).
using parasim::Phase;
std::string to_string(Phase) = delete;  // makes to_string(phase) ambiguous here: profiles use phase_key()
/// The four kernel phases in execution order; arrays indexed by phase_index() have this size.
inline constexpr std::array<Phase, 4> kPhases = {Phase::Forward, Phase::BackwardData, Phase::BackwardWeight, Phase::Update};
/// "fwd", "bwd_data", "bwd_weight", "update": the keys of the profile format and the phase names
/// in kernel notes and profile tables (the task graph spells them "forward", ...).
std::string phase_key(Phase p);
/// Inverse of phase_key(); nullopt for anything else, including Recompute and Other.
std::optional<Phase> parse_phase_key(std::string_view s);
/// Throws std::invalid_argument naming `p`: passing Recompute or Other to the profiler or the
/// kernels is a bug in the caller, and an array over kPhases has no slot for them.
[[noreturn]] void throw_not_a_kernel_phase(Phase p);
/// Position of `p` in kPhases; throw_not_a_kernel_phase() for Recompute and Other.
inline std::size_t phase_index(Phase p) {
  const auto i = static_cast<std::size_t>(p);
  if (i >= kPhases.size()) throw_not_a_kernel_phase(p);
  return i;
}

/// Whether `op` does any work in `phase`. The one rule shared by the roofline model, the CPU
/// kernels and the profiler, so that all three agree on which phases exist:
///   - Input and Reshape do nothing in any phase;
///   - Forward: every other op;
///   - BackwardData: ops whose input carries a gradient: not Embedding (its input is token ids);
///     matrix ops (conv, linear, matmul, lstm, attention, sampled softmax) only when
///     macs_bwd_data > 0, so a model can mark a first layer whose input needs no gradient;
///     Add has no kernel (its gradient is passed through unchanged);
///   - BackwardWeight: ops with parameters or a shared (tied) weight, except BatchNorm and
///     LayerNorm, whose one backward kernel (cuDNN, oneDNN) produces the data and parameter
///     gradients together and is charged to BackwardData;
///   - Update: ops with parameters.
/// Throws std::invalid_argument for Recompute and Other (see phase_index()).
bool op_has_phase(const models::Op& op, Phase phase);

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
  TimeNs bwd() const { return bwd_data + bwd_weight; }
  TimeNs total() const { return fwd + bwd_data + bwd_weight + update; }
  TimeNs& at(Phase p);
  TimeNs at(Phase p) const;
};

enum class Optimizer : std::uint8_t { Sgd, Momentum, Adam };
std::string to_string(Optimizer o);
std::optional<Optimizer> parse_optimizer(std::string_view s);  // "sgd", "momentum", "adam"; nullopt otherwise
/// Optimizer state bytes per parameter (fp32 master state): sgd 0, momentum 4, adam 8.
Bytes optimizer_state_bytes_per_param(Optimizer o);
/// Bytes one optimizer step moves per parameter: read the gradient (in the model dtype), read and
/// write the fp32 master weight and every fp32 state slot, and, for fp16/bf16 training, write the
/// low-precision copy of the weight. sgd fp32: 4 + 8 = 12; momentum: 20; adam: 28.
Bytes optimizer_traffic_bytes_per_param(Optimizer o, models::DType dtype);
/// Floating-point operations of one optimizer step per parameter (sgd 2, momentum 4, adam 12).
std::int64_t optimizer_flops_per_param(Optimizer o);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Cost of `op` on a device of kind `device_kind` (canonical hardware::DeviceSpec kind).
  virtual OpCost cost(const models::Op& op, const std::string& device_kind, Optimizer opt) const = 0;
  /// One line for reports: "roofline (V100 peaks x efficiency curve)", "profile traces/h200/resnet50-b32-fp32.json".
  virtual std::string describe() const = 0;
};

}  // namespace parasim::profiler
