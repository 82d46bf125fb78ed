// The CPU backend: the TaskGraph's devices are threads of this process.
//
//   * Every (device, stream) that has tasks is a worker thread pinned (pthread_setaffinity_np)
//     to allowed core `device mod cores` (or `(device + stream * devices) mod cores` with
//     spread_streams), so a device's comm stream runs beside its compute stream as on a GPU.
//   * Compute tasks run the op's real oneDNN kernels: one kernels::make_cpu_kernel_backend(1)
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

#include <cstdint>
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
  /// How the workers compete with other processes. Boosted: nice -20 (CFS gives them ~99% of a
  /// contended core, and CFS wake-ups stay fast); Fifo: SCHED_FIFO (compute streams at
  /// kComputePriority, communication streams one above, so a copy preempts the computation that
  /// shares its core). Best effort: without CAP_SYS_NICE the workers stay as they are and
  /// notes() says so. docs/executor.md has the measurements behind the default.
  enum class Priority : std::uint8_t { Default, Boosted, Fifo };
  Priority priority = Priority::Default;
};

inline constexpr int kComputePriority = 10;

/// Applies `priority` to the calling thread (communication: one FIFO level above compute);
/// false when the system refused.
bool apply_thread_priority(CpuRuntimeOptions::Priority priority, bool communication = false);

/// Gives the calling thread `priority` for its lifetime and restores what it had afterwards
/// (validate profiles under it, so profile and execution see the same scheduling).
class PriorityScope {
 public:
  explicit PriorityScope(CpuRuntimeOptions::Priority priority);
  ~PriorityScope();
  PriorityScope(const PriorityScope&) = delete;
  PriorityScope& operator=(const PriorityScope&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
  int old_policy_ = 0;
  int old_priority_ = 0;
  int old_nice_ = 0;
};

/// The cores this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cores();

/// A CPU runtime running, for every compute task, the kernels of the op `ops` names. Compute
/// tasks without an op or whose op has no kernel (an op kind oneDNN cannot run, phase Other)
/// spin for their graph duration instead, and notes() counts them: those are not measurements.
std::unique_ptr<StreamRuntime> make_cpu_runtime(OpResolver ops, const CpuRuntimeOptions& options = {});
/// make_cpu_runtime(ops_of_model(model)): the op index names an op of `model` (kept alive by
/// the caller).
std::unique_ptr<StreamRuntime> make_cpu_runtime(const models::Model& model, const CpuRuntimeOptions& options = {});
/// A CPU runtime without a model: every compute task spins for its graph duration (for
/// scheduling tests and for measuring the runtime's own overheads).
std::unique_ptr<StreamRuntime> make_cpu_runtime_without_kernels(const CpuRuntimeOptions& options = {});

}  // namespace parasim::executor
