// The CPU backend: the TaskGraph's devices are threads of this process.
//
//   * Every (device, stream) that has tasks is a worker thread pinned (pthread_setaffinity_np)
//     to allowed core `device mod cores` (or `(device + stream * devices) mod cores` with
//     spread_streams), so a device's comm stream runs beside its compute stream as on a GPU.
//   * Compute tasks run the op's real oneDNN kernels: one profiler::make_cpu_kernel_backend(1)
//     per worker, every op's kernels prepared once in setup() on the worker that runs them (its
//     buffers are first touched there), the same kernels the CPU profiler times.
//   * Transfers are memcpy of the task's bytes from the source stream's buffer into a buffer of
//     the destination device; collectives are RingCommunicator collectives among the member
//     streams' threads (one communicator per distinct (device group, stream)).
//   * Events are futex-backed (cpu_sync.hpp); markers are zero-time joins.
//
// With more worker threads than cores the threads time-share cores, so tasks the graph runs in
// parallel partly run one after another; notes() says so, and validate prints it.
//
// Example:
//   auto rt = make_cpu_runtime(model, {.optimizer = profiler::Optimizer::Sgd});
//   ExecutionResult r = run_steps(graph, *rt, {.warmup = 2, .repetitions = 5});
#pragma once

#include <memory>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/executor/stream_runtime.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::executor {

struct CpuRuntimeOptions {
  profiler::Optimizer optimizer = profiler::Optimizer::Sgd;
  bool pin_threads = true;
  /// Pin stream s of device d to core (d + s * devices) mod cores instead of d mod cores.
  bool spread_streams = false;
  /// How long a waiting worker spins before it sleeps; negative: automatic (spin while there
  /// are at least as many cores as workers, never when oversubscribed).
  TimeNs spin_ns = -1;
};

/// The cores this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cores();

/// A CPU runtime running the ops of `model` (which must outlive it). Compute tasks whose op
/// has no kernel (op index -1, an op kind oneDNN cannot run) spin for their graph duration
/// instead, and notes() counts them: those are not measurements.
std::unique_ptr<StreamRuntime> make_cpu_runtime(const models::Model& model, const CpuRuntimeOptions& options = {});
/// A CPU runtime without a model: every compute task spins for its graph duration (for
/// scheduling tests and for measuring the runtime's own overheads).
std::unique_ptr<StreamRuntime> make_cpu_runtime_without_kernels(const CpuRuntimeOptions& options = {});

}  // namespace parasim::executor
