// The kinds of collective: one vocabulary for the task graph (strategies emit them, the
// simulator prices them, the executor runs them) and the link probe (NCCL curves, bus-bandwidth
// factors), which spells them as nccl-tests does at its own format boundary.
//
// Example:
//   CollectiveOp op = parse_collective_op("reduce_scatter").value();   // CollectiveOp::ReduceScatter
//   std::string_view s = to_string(CollectiveOp::AllToAll);            // "all_to_all"
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace parasim {

/// The integer values are the task graph's packed metadata; append new kinds at the end.
enum class CollectiveOp : std::uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, AllToAll };

/// "allreduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all" (the
/// parasim.taskgraph/1 spelling).
std::string_view to_string(CollectiveOp op);
/// Inverse of to_string(CollectiveOp); nullopt for anything else.
std::optional<CollectiveOp> parse_collective_op(std::string_view s);

}  // namespace parasim
