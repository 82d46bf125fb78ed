#include "parasim/profiler/cost_model.hpp"

#include <stdexcept>

#include "parasim/common/error.hpp"

namespace parasim::profiler {

using models::OpKind;

TimeNs& OpCost::at(Phase p) {
  switch (p) {
    case Phase::Forward: return fwd;
    case Phase::BackwardData: return bwd_data;
    case Phase::BackwardWeight: return bwd_weight;
    case Phase::Update: return update;
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: throw_not_a_kernel_phase(p);
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

// torch/optim/{adam,sgd}.py, _multi_tensor_*: every foreach call reads its operands and writes its
// result once (4 bytes each); a tensor read twice in one call (addcmul_(v, g, g)) is read once.
Bytes foreach_optimizer_traffic_bytes_per_param(Optimizer o) {
  switch (o) {
    // add(g, p, alpha=wd) -> g' (12), add_(p, g', alpha=-lr) (12)
    case Optimizer::Sgd: return 24;
    // add(g, p, alpha=wd) -> g' (12), mul_(buf) (8), add_(buf, g') (12), add_(p, buf) (12)
    case Optimizer::Momentum: return 44;
    // mul_(p, 1 - lr wd) (8), lerp_(m, g) (12), mul_(v) (8), addcmul_(v, g, g) (12),
    // sqrt(v) -> d (8), div_(d) (8), add_(d, eps) (8), addcdiv_(p, m, d) (16)
    case Optimizer::Adam: return 80;
  }
  return 0;
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
