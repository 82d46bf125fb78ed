#include "parasim/kernels/op_phases.hpp"

#include <stdexcept>

namespace parasim::kernels {

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
    case Phase::Other:
    case Phase::DataLoad: throw_not_a_kernel_phase(phase);
  }
  return false;
}

}  // namespace parasim::kernels
