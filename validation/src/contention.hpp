// Contention slowdowns for the cpu-host projection (validate.cpp): in a simulated timeline, how
// many worker threads are busy while each compute task runs, and what that costs at the
// measured concurrent speeds (HostCalibration::speed).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parasim/executor/host_calibration.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::validation::detail {

/// Time-averaged number of busy threads over [start, end) of every compute task (the task
/// itself included): a compute task or a transfer keeps one thread busy, a collective one per
/// member. Tasks with no duration get 1.
std::vector<double> busy_threads_during_compute(const simulator::TaskGraph& graph,
                                                const std::vector<simulator::TaskTiming>& timeline);

/// Per op name (op_name(task)): the duration-weighted mean of 1 / concurrent_speed(busy) over
/// the op's compute tasks.
std::map<std::string, double> contention_slowdown(const simulator::TaskGraph& graph,
                                                  const std::vector<simulator::TaskTiming>& timeline,
                                                  const executor::HostCalibration& calibration,
                                                  const std::function<std::string(simulator::TaskId)>& op_name);

/// Real-time throttling in the median step. Linux lets SCHED_FIFO threads run `runtime` of every
/// `period` on a core and stalls them for the rest of the period. A core whose workers are busy
/// `busy` of every step of length `step` (steps back to back) exceeds that budget when
/// busy / step > runtime / period; it then stalls every time it has used `runtime` since the
/// period began, busy / runtime times per step on average, each stall lasting period -
/// runtime x step / busy. Which steps contain a stall depends on where the period boundaries
/// fall, so the median step contains round(busy / runtime) stalls (a 0.83 s step busy all the
/// time with the default 950 ms / 1 s: 1 stall of 50 ms, in 87% of steps; a 3 ms step: none,
/// one step in ~300 has it). Returns the largest sum of stalls over `core_busy`; 0 when
/// runtime or period is 0.
TimeNs rt_throttle_stall(TimeNs step, const std::vector<TimeNs>& core_busy, TimeNs runtime, TimeNs period);

}  // namespace parasim::validation::detail
