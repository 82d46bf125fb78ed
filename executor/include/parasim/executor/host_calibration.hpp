// What the CPU backend's communication and scheduling cost on this machine, measured through
// the CPU runtime itself (tiny task graphs, the same workers, events and buffers a validated
// step uses), and the "cpu-host" cluster built from it: alpha-beta fits of transfers and ring
// all-reduces, a cross-thread wake-up, the step start, the runtime's dispatch per task, the
// per-thread speed under contention (streaming and in cache) and the real-time budget. What
// each measures and how the cluster is built: docs/executor.md ("Host calibration").
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
