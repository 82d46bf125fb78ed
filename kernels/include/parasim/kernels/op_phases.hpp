// Which of the four kernel phases an op has, and their profile-format keys: the one rule the
// kernels, the roofline model and the profiler share (profiler:: names them by using-declarations).
//
// Example:
//   for (Phase p : kPhases)
//     if (op_has_phase(op, p)) kernel->run(p);   // "fwd", "bwd_data", ... = phase_key(p)
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "parasim/common/phase.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::kernels {

// Phase lives in common/ (the task graph shares it). Costs, profiles and kernels know only the
// four phases an op has kernels for: a recompute reruns the forward kernel and Other has none
// (kernel_phase() below maps a task's phase for every runtime).
using parasim::Phase;
std::string to_string(Phase) = delete;  // makes to_string(phase) ambiguous here: profiles use phase_key()
/// The four kernel phases in execution order; arrays indexed by phase_index() have this size.
inline constexpr std::array<Phase, 4> kPhases = {Phase::Forward, Phase::BackwardData, Phase::BackwardWeight,
                                                 Phase::Update};
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

/// The kernel phase a compute task in `task_phase` runs, for every runtime (CPU, CUDA, MPI ranks),
/// so that they cannot disagree: a recompute reruns the forward kernel; Other and DataLoad have no kernel (the
/// runtime stands in a timed spin for it).
inline std::optional<Phase> kernel_phase(Phase task_phase) {
  switch (task_phase) {
    case Phase::Forward:
    case Phase::Recompute: return Phase::Forward;
    case Phase::BackwardData: return Phase::BackwardData;
    case Phase::BackwardWeight: return Phase::BackwardWeight;
    case Phase::Update: return Phase::Update;
    case Phase::Other:
    case Phase::DataLoad: break;
  }
  return std::nullopt;
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

}  // namespace parasim::kernels
