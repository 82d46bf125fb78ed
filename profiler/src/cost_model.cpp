#include "parasim/profiler/cost_model.hpp"

#include <stdexcept>

#include "parasim/common/error.hpp"

namespace parasim::profiler {

using models::OpKind;

namespace {

// The profile format's spelling of kPhases, index for index.
constexpr std::array<std::string_view, 4> kPhaseKeys{"fwd", "bwd_data", "bwd_weight", "update"};

}  // namespace

void throw_not_a_kernel_phase(Phase p) {
  throw std::invalid_argument("phase " + std::string(parasim::to_string(p)) +
                              " has no kernels of its own (kernel phases: fwd, bwd_data, bwd_weight, update)");
}

std::string phase_key(Phase p) { return std::string(kPhaseKeys[phase_index(p)]); }

std::optional<Phase> parse_phase_key(std::string_view s) {
  for (Phase p : kPhases)
    if (kPhaseKeys[phase_index(p)] == s) return p;
  return std::nullopt;
}

namespace {

/// Ops whose backward-data is a matrix product that a model may skip (first layer).
bool is_matrix_op(OpKind k) {
  switch (k) {
    case OpKind::Conv2d:
    case OpKind::Linear:
    case OpKind::Matmul:
    case OpKind::BatchedMatmul:
    case OpKind::Lstm:
    case OpKind::Attention:
    case OpKind::Experts:
    case OpKind::SampledSoftmax: return true;
    default: return false;
  }
}

}  // namespace

bool op_has_phase(const models::Op& op, Phase phase) {
  if (op.kind == OpKind::Input || op.kind == OpKind::Reshape) return false;
  switch (phase) {
    case Phase::Forward: return true;
    case Phase::BackwardData:
      if (op.kind == OpKind::Embedding || op.kind == OpKind::Add) return false;
      if (is_matrix_op(op.kind)) return op.macs_bwd_data > 0;
      return true;
    case Phase::BackwardWeight:
      if (op.kind == OpKind::BatchNorm || op.kind == OpKind::LayerNorm || op.kind == OpKind::RmsNorm) return false;
      // A tied op (LM head sharing the embedding) owns no weight but computes its gradient.
      return op.params > 0 || !op.attrs.shares_weights_with.empty();
    case Phase::Update: return op.params > 0;
    case Phase::Recompute:
    case Phase::Other: throw_not_a_kernel_phase(phase);
  }
  return false;
}

TimeNs& OpCost::at(Phase p) {
  switch (p) {
    case Phase::Forward: return fwd;
    case Phase::BackwardData: return bwd_data;
    case Phase::BackwardWeight: return bwd_weight;
    case Phase::Update: return update;
    case Phase::Recompute:
    case Phase::Other: throw_not_a_kernel_phase(p);
  }
  return fwd;
}

TimeNs OpCost::at(Phase p) const { return const_cast<OpCost*>(this)->at(p); }

std::string to_string(CostSource s) {
  switch (s) {
    case CostSource::MeasuredGpu: return "measured-gpu";
    case CostSource::MeasuredCpu: return "measured-cpu";
    case CostSource::Imported: return "imported";
    case CostSource::MeasuredScaled: return "measured-scaled";
    case CostSource::Roofline: return "roofline";
  }
  return "?";
}

std::optional<CostSource> parse_cost_source(std::string_view s) {
  for (CostSource c : {CostSource::MeasuredGpu, CostSource::MeasuredCpu, CostSource::Imported,
                       CostSource::MeasuredScaled, CostSource::Roofline})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

bool is_measured(CostSource s) { return s != CostSource::Roofline; }

std::string to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Momentum: return "momentum";
    case Optimizer::Adam: return "adam";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(std::string_view s) {
  for (Optimizer o : {Optimizer::Sgd, Optimizer::Momentum, Optimizer::Adam})
    if (to_string(o) == s) return o;
  return std::nullopt;
}

Bytes optimizer_state_bytes_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return 0;
    case Optimizer::Momentum: return 4;  // velocity
    case Optimizer::Adam: return 8;      // first and second moments
  }
  return 0;
}

Bytes optimizer_traffic_bytes_per_param(Optimizer o, models::DType dtype) {
  const Bytes grad_read = models::dtype_size(dtype);
  const Bytes master_rw = 8;                                       // fp32 weight read + write
  const Bytes state_rw = 2 * optimizer_state_bytes_per_param(o);  // each state slot read + write
  const Bytes low_precision_copy = dtype == models::DType::F32 ? 0 : models::dtype_size(dtype);
  return grad_read + master_rw + state_rw + low_precision_copy;
}

std::int64_t optimizer_flops_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return 2;       // w -= lr * g
    case Optimizer::Momentum: return 4;  // v = mu v + g; w -= lr v
    case Optimizer::Adam: return 12;     // two moment updates, bias corrections, sqrt, divide
  }
  return 0;
}

}  // namespace parasim::profiler
