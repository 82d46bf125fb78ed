// What the CPU backend's communication and scheduling cost on this machine, measured through
// the CPU runtime itself (tiny task graphs, the same workers, events and buffers a validated
// step uses), and the "cpu-host" cluster built from it.
//
//   transfer    a: compute on device 0 -> x: transfer of S bytes 0 -> 1 (pipeline stream)
//               -> b: compute on device 1. Measured: b.start - a.end, i.e. what the simulator
//               charges the transfer (route latency + S / bandwidth), including the wake-ups of
//               the transfer's worker and of b's worker. Fitted alpha-beta over S.
//   allreduce   c_d: compute on every device -> ring all-reduce of S bytes (DP stream) -> u_d.
//               Measured: median over devices of u_d.start - max_d c_d.end; fitted alpha-beta.
//   wake-up     a chain of zero-time tasks alternating between two devices' compute streams:
//               the cost of one cross-thread dependency (futex wake + schedule).
//   step start  one zero-time task: from releasing the workers to the first task's start.
//   dispatch    a chain of zero-time tasks on one stream: the runtime's own cost per task
//               (command loop, timestamps, event records), paid by every task of a step but
//               not by the profiler's isolated timings.
//   contention  k = 1..devices threads pinned as the compute workers are, each running the same
//               fixed work (a multiply-add loop over an L2-resident buffer, then a streaming
//               triad over 32 MiB): speed[k-1] = time alone / time with k at once, the fastest of
//               9 alternating rounds each, at most 1. With k free cores it stays near 1; cores that are not
//               really separate (SMT siblings, vCPUs sharing a physical core, other tenants)
//               lower it.
//   contention  the same with the multiply-add loop alone (speed_in_cache): what threads whose
//   in cache    work stays in their cores' caches slow each other by. The streaming triad shares
//               the memory bus and, on a VM, swings with the neighbours' traffic (0.7 to 0.98
//               from one run to the next here); a step whose working set fits in the last-level
//               cache does not see that (tiny_lstm dp=2 measured compute 1.7 ms against 2.0 ms
//               projected with the streaming curve), so validate uses this curve for them.
//
//   rt budget   with SCHED_FIFO workers: /proc/sys/kernel/sched_rt_runtime_us of every
//               sched_rt_period_us (what Linux lets real-time threads run per core; the rest of
//               the period they are stalled), for the projection's throttling stalls.
//
// The cluster: devices "cpu0".."cpuN-1" joined in a star through an endpoint "host-memory"
// (links kind qpi: a memory interconnect; full duplex), each link with half the transfer's
// fitted latency (a route has two hops) and the fitted bandwidth. Devices use a placeholder
// device kind because the hardware table has no CPU entry; HostCostModel (validation/host_cost_model.hpp)
// answers every op cost from the host profile whatever kind it is asked for.
//
// Example:
//   HostCalibration cal = calibrate_cpu_host(2);
//   hardware::Cluster cluster{cpu_host_cluster_spec(2, cal, /*collective_weight=*/0.5)};
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/profiler/alpha_beta.hpp"

namespace parasim::executor {

struct CalibrationPoint {
  Bytes bytes = 0;
  TimeNs time = 0;  // median over repetitions
};

struct HostCalibration {
  int devices = 0;
  std::vector<CalibrationPoint> transfer;    // device 0 -> 1 as described above
  profiler::AlphaBetaSegment transfer_fit;
  std::vector<CalibrationPoint> allreduce;   // over all `devices` (empty for 1 device)
  profiler::AlphaBetaSegment allreduce_fit;
  TimeNs wakeup = 0;       // one cross-thread dependency
  TimeNs step_start = 0;   // releasing the workers until the first task starts
  TimeNs dispatch = 0;     // per task on one stream
  std::vector<double> speed;  // speed[k-1]: per-thread speed with k threads busy (speed[0] = 1)
  std::vector<double> speed_in_cache;  // the same for work that stays in the cores' caches
  int cores = 0;
  bool oversubscribed = false;  // the measured configuration had more workers than cores
  /// Real-time throttling that applies to the workers: with SCHED_FIFO workers, Linux lets
  /// real-time threads run `rt_runtime` of every `rt_period` on each core
  /// (/proc/sys/kernel/sched_rt_runtime_us, sched_rt_period_us; default 950 ms of 1 s) and
  /// stalls them for the rest. 0: no limit (other policies, or sched_rt_runtime_us = -1).
  TimeNs rt_runtime = 0;
  TimeNs rt_period = 0;
};

struct CalibrationOptions {
  std::vector<Bytes> sizes = {4 * KiB, 64 * KiB, 512 * KiB, 2 * MiB, 8 * MiB, 32 * MiB};
  int warmup = 2;
  int repetitions = 7;
  CpuRuntimeOptions::Priority priority = CpuRuntimeOptions::Priority::Default;  // of the measuring runtimes
};

/// Measures the host for `devices` simulated devices (1..64). InputError for a bad count.
HostCalibration calibrate_cpu_host(int devices, const CalibrationOptions& options = {});

/// Per-thread speed with `busy` threads computing at once (fractional: interpolated; beyond the
/// measured range: the last measured total shared fairly).
double concurrent_speed(const HostCalibration& c, double busy);

/// Latency and bandwidth of a device-to-device route of the cpu-host star.
struct RouteFit {
  double alpha_ns = 0;
  double beta_gbps = 0;
};

/// The route that reproduces the measured transfers (collective_weight 0), the measured ring
/// all-reduces through the simulator's ring formula (1), or a mix: one link model cannot match
/// both, because a transfer crosses threads twice and an all-reduce 2(n-1) + 2 times, so
/// validate weights them by what the strategy's graph does.
RouteFit route_fit(const HostCalibration& calibration, double collective_weight);

/// The star cluster described above, links from route_fit(). `memory_per_device` 0: total RAM /
/// devices.
hardware::ClusterSpec cpu_host_cluster_spec(int devices, const HostCalibration& calibration,
                                            double collective_weight = 0, Bytes memory_per_device = 0);

nlohmann::json host_calibration_to_json(const HostCalibration& c);

}  // namespace parasim::executor
