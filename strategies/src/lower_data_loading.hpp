// Internal: the data loader of StepSetup::data_loading in the lowered step (docs/strategies.md,
// "Data loading"). Each simulated replica gets a loader on stream `stream` of its first device:
// compute tasks in Phase::DataLoad, which hold that stream while the device itself stays idle
// (the host loads; the engine counts them as neither compute nor communication).
//   * Synchronous (workers = 0): one task loads the replica's step of samples, and every task
//     that starts the step waits for it: the step pays the whole load.
//   * Prefetching (workers >= 1), synchronous schedules: this step's samples were loaded during
//     the previous step; the loader spends this step on the next one's (one task, no dependants),
//     which the next step's first micro-batch waits for, so the step lasts max(compute, load).
//   * Asynchronous schedules (pipedream, spectrain) never flush: the loader loads micro-batch
//     after micro-batch and each one's first tasks wait for their load; their steady state then
//     pays max(0, load - compute) per micro-batch (simulate_strategy() also bounds the step below
//     by micro x the load, which the finite simulated window can miss). Synchronous loading is not
//     modelled there.
#pragma once

#include "prepared_step.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::strategies::detail {

/// Adds the loader tasks once every other task of the step is in `b`. InputError for synchronous
/// loading with an asynchronous schedule.
void add_data_loading(const Prepared& p, simulator::TaskGraphBuilder& b, int stream);

}  // namespace parasim::strategies::detail
