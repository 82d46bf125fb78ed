// Internal: which kernel phase a compute task of the task graph runs, for both real runtimes
// (cpu_runtime.cpp, cuda_runtime.cpp), so that they cannot disagree. A recompute reruns the
// forward kernel; Other has no kernel (the runtime stands in a timed spin for it).
#pragma once

#include <optional>

#include "parasim/profiler/cost_model.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor::detail {

inline std::optional<profiler::Phase> kernel_phase(simulator::Phase p) {
  switch (p) {
    case simulator::Phase::Forward:
    case simulator::Phase::Recompute: return profiler::Phase::Forward;
    case simulator::Phase::BackwardData: return profiler::Phase::BackwardData;
    case simulator::Phase::BackwardWeight: return profiler::Phase::BackwardWeight;
    case simulator::Phase::Update: return profiler::Phase::Update;
    case simulator::Phase::Other: break;
  }
  return std::nullopt;
}

}  // namespace parasim::executor::detail
