// step_time_lower_bound(): what the event engine's step for a StepSetup can be no shorter than,
// from the compute of the lowering alone - no communication, no calibration overhead - so the
// planner can skip candidates that cannot reach its top rows (docs/projection.md, "Pruning by a
// lower bound").
//
// Why it is a bound (stage granularity, a synchronous schedule): each device runs its compute
// tasks one at a time on its compute stream; it cannot start before the first micro-batch's
// forward has crossed the chunks that feed its own first chunk, and after its last backward task
// (which ends after all of its forward, recompute and backward work) the gradient still has to
// cross the recompute and backward of the chunks below. So for every device d
//   step >= min_c head(c) + (forward + recompute + backward work of d) + min_c tail(c),  c on d,
// head(c) = longest forward chain into chunk c, tail(c) = longest recompute + backward chain out
// of it along the lowering's own dependencies. For 1F1B that is (K + mp - 1) x (f + b) on equal
// stages: the classic bubble.
//
// Example:
//   StepSetup setup{... .granularity = Granularity::Stage, .cache = &cache};
//   if (step_time_lower_bound(setup) > best_so_far) skip();
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/strategies/lowering.hpp"

namespace parasim::strategies {

/// The bound at one micro-batch size as a function of the micro-batch count K: per pipeline slot,
/// fill + K x work + drain; the step is at least the largest over the slots.
struct StepBound {
  std::vector<TimeNs> fill, work, drain;  // per slot: head, one micro-batch's compute, tail
  TimeNs at(std::int64_t micro_batches) const;
};

/// The bound of `setup` continued along K, when all of its micro-batches have one size;
/// nullopt where no bound is worked out (see below) or the split is uneven.
std::optional<StepBound> step_bound_per_micro(const StepSetup& setup);

/// A lower bound on simulate_strategy(setup).step_time; 0 where none is worked out (context or
/// expert parallelism, op granularity, branch placements, asynchronous schedules with micro-batches
/// of several sizes). An asynchronous schedule's is K x the busiest slot's compute per micro-batch
/// (no fill, no drain). Throws the InputError lower_step() would.
TimeNs step_time_lower_bound(const StepSetup& setup);

}  // namespace parasim::strategies
