// The phase of a training step a piece of work belongs to: one vocabulary for the task graph
// (all seven) and the kernels, cost models and profiles (the four an op has kernels for, see
// parasim/profiler/cost_model.hpp: kPhases, and phase_key() for the profile format's "fwd").
//
// Example:
//   Phase p = parse_phase("backward_data").value();   // Phase::BackwardData
//   std::string_view s = to_string(Phase::Recompute);   // "recompute"
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace parasim {

/// The integer values are the task graph's packed metadata; append new phases at the end.
/// DataLoad: the host loading a replica's samples (a loader resource, not device compute).
enum class Phase : std::uint8_t { Forward, BackwardData, BackwardWeight, Update, Recompute, Other, DataLoad };

/// "forward", "backward_data", "backward_weight", "update", "recompute", "other", "data_load" (the
/// parasim.taskgraph/1 and Chrome trace spelling).
std::string_view to_string(Phase p);
/// Inverse of to_string(Phase); nullopt for anything else.
std::optional<Phase> parse_phase(std::string_view s);

}  // namespace parasim
