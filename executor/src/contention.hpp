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

namespace parasim::executor::detail {

/// Time-averaged number of busy threads over [start, end) of every compute task (the task
/// itself included): a compute task or a transfer keeps one thread busy, a collective one per
/// member. Tasks with no duration get 1.
std::vector<double> busy_threads_during_compute(const simulator::TaskGraph& graph,
                                                const std::vector<simulator::TaskTiming>& timeline);

/// Per op name (op_name(task)): the duration-weighted mean of 1 / concurrent_speed(busy) over
/// the op's compute tasks.
std::map<std::string, double> contention_slowdown(const simulator::TaskGraph& graph,
                                                  const std::vector<simulator::TaskTiming>& timeline,
                                                  const HostCalibration& calibration,
                                                  const std::function<std::string(simulator::TaskId)>& op_name);

}  // namespace parasim::executor::detail
