// Measuring the CPU backend's own costs through the CPU runtime (see host_calibration.hpp).
#include "parasim/executor/host_calibration.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/common/median.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/executor.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor {

using namespace parasim::simulator;

namespace {

TimeNs now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The lowering's stream numbers (strategies/lowering.hpp): measure with the same workers.
constexpr int kDataParallelStream = 1;
constexpr int kPipelineStream = 2;
constexpr int kStreams = 4;
// A first task long enough for every worker to be awake and waiting when the measured part
// starts, as in a real step where communication follows compute.
constexpr TimeNs kLeadIn = 200'000;

ExecutionResult run(const TaskGraph& g, const CalibrationOptions& o) {
  CpuRuntimeOptions ro;
  ro.priority = o.priority;
  auto rt = make_cpu_runtime_without_kernels(ro);
  return run_steps(g, *rt, {.warmup = o.warmup, .repetitions = o.repetitions, .keep_timelines = true});
}

TimeNs measure_transfer(Bytes bytes, const CalibrationOptions& o) {
  TaskGraphBuilder b(2, kStreams);
  const TaskId a = b.add_compute({.device = 0, .duration = kLeadIn, .name = "a"});
  const TaskId x = b.add_transfer({.src = 0, .dst = 1, .bytes = bytes, .stream = kPipelineStream, .name = "x"});
  const TaskId c = b.add_compute({.device = 1, .duration = 0, .name = "b"});
  b.add_dependency(x, a);
  b.add_dependency(c, x);
  const TaskGraph g = std::move(b).build();
  const ExecutionResult r = run(g, o);
  std::vector<TimeNs> v;
  for (const auto& tl : r.timelines) v.push_back(tl[ix(c)].start - tl[ix(a)].end);
  return lower_median_ns(v);
}

TimeNs measure_allreduce(int devices, Bytes bytes, const CalibrationOptions& o) {
  TaskGraphBuilder b(devices, kStreams);
  std::vector<DeviceId> all;
  for (DeviceId d = 0; d < devices; ++d) all.push_back(d);
  const GroupId g = b.add_group(all);
  const TaskId ar = b.add_collective(
      {.op = CollectiveOp::AllReduce, .group = g, .bytes = bytes, .stream = kDataParallelStream, .name = "ar"});
  std::vector<TaskId> before, after;
  for (DeviceId d = 0; d < devices; ++d) {
    before.push_back(b.add_compute({.device = d, .duration = kLeadIn, .name = "c"}));
    after.push_back(b.add_compute({.device = d, .duration = 0, .name = "u"}));
    b.add_dependency(ar, before.back());
    b.add_dependency(after.back(), ar);
  }
  const TaskGraph graph = std::move(b).build();
  const ExecutionResult r = run(graph, o);
  std::vector<TimeNs> v;
  for (const auto& tl : r.timelines) {
    TimeNs ready = 0;
    for (TaskId t : before) ready = std::max(ready, tl[ix(t)].end);
    std::vector<TimeNs> starts;
    for (TaskId t : after) starts.push_back(tl[ix(t)].start - ready);
    v.push_back(lower_median_ns(starts));
  }
  return lower_median_ns(v);
}

TimeNs measure_wakeup(const CalibrationOptions& o) {
  constexpr int kHops = 64;
  TaskGraphBuilder b(2, kStreams);
  TaskId prev = b.add_compute({.device = 0, .duration = kLeadIn, .name = "lead"});
  const TaskId first = prev;
  for (int i = 0; i < kHops; ++i) {
    const TaskId t = b.add_compute({.device = (i + 1) % 2, .duration = 0, .name = "hop"});
    b.add_dependency(t, prev);
    prev = t;
  }
  const TaskGraph g = std::move(b).build();
  const ExecutionResult r = run(g, o);
  std::vector<TimeNs> v;
  for (const auto& tl : r.timelines) v.push_back((tl[ix(prev)].start - tl[ix(first)].end) / kHops);
  return lower_median_ns(v);
}

TimeNs measure_dispatch(const CalibrationOptions& o) {
  constexpr int kTasks = 256;
  TaskGraphBuilder b(1, kStreams);
  const TaskId lead = b.add_compute({.device = 0, .duration = kLeadIn, .name = "lead"});
  TaskId prev = lead;
  for (int i = 0; i < kTasks; ++i) {
    const TaskId t = b.add_compute({.device = 0, .duration = 0, .name = "task"});
    b.add_dependency(t, prev);
    prev = t;
  }
  const TaskGraph g = std::move(b).build();
  const ExecutionResult r = run(g, o);
  std::vector<TimeNs> v;
  for (const auto& tl : r.timelines) v.push_back((tl[ix(prev)].end - tl[ix(lead)].end) / kTasks);
  return lower_median_ns(v);
}

TimeNs measure_step_start(const CalibrationOptions& o) {
  TaskGraphBuilder b(1, kStreams);
  b.add_compute({.device = 0, .duration = 0, .name = "only"});
  const TaskGraph g = std::move(b).build();
  return run(g, o).launch_latency_median;
}

// Fixed work: FMA chains over a buffer that stays in L2 plus, when `streaming`, a triad over one
// that does not (the mix of a convolution's inner loop and an elementwise op).
double fixed_work(bool streaming) {
  static constexpr std::size_t kSmall = 16 * 1024, kLarge = 4 * 1024 * 1024;
  std::vector<float> small(kSmall, 1.0f), a(streaming ? kLarge : 1, 1.0f), b(streaming ? kLarge : 1, 2.0f);
  const TimeNs t0 = now_ns();
  for (int r = 0; r < 400; ++r)
    for (std::size_t i = 0; i < kSmall; ++i) small[i] = small[i] * 0.999f + 0.001f;
  for (int r = 0; streaming && r < 4; ++r)
    for (std::size_t i = 0; i < kLarge; ++i) a[i] += 0.5f * b[i];
  const TimeNs t1 = now_ns();
  volatile float sink = small[7] + a.back();  // a has one element when not streaming
  (void)sink;
  return static_cast<double>(t1 - t0);
}

std::vector<double> measure_contention(int threads, bool streaming, const CalibrationOptions& o) {
  const std::vector<int> cores = allowed_cores();
  std::vector<double> speed;
  auto run_k = [&](int k) {
    std::vector<double> times(static_cast<std::size_t>(k), 0.0);
    std::vector<std::thread> pool;
    std::atomic<int> ready{0};
    for (int t = 0; t < k; ++t)
      pool.emplace_back([&, t] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cores[static_cast<std::size_t>(t) % cores.size()], &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        apply_thread_priority(o.priority);
        ready.fetch_add(1);
        while (ready.load() < k) std::this_thread::yield();
        times[static_cast<std::size_t>(t)] = fixed_work(streaming);
      });
    for (auto& th : pool) th.join();
    double sum = 0;
    for (double t : times) sum += t;
    return sum / k;
  };
  // Other tenants and the hypervisor slow a run down from one moment to the next, never speed it
  // up: alternate alone and together, and compare the least disturbed run of each (the median
  // ratio swung between 0.69 and 1.0 for in-cache work on this VM from one calibration to the
  // next, while the steps it was meant for ran at the same speed).
  speed.push_back(1.0);
  for (int k = 2; k <= threads; ++k) {
    double alone = std::numeric_limits<double>::max(), together = std::numeric_limits<double>::max();
    for (int r = 0; r < 9; ++r) {
      alone = std::min(alone, run_k(1));
      together = std::min(together, run_k(k));
    }
    // More than alone is noise (the alone runs were all disturbed): a core shared with nothing else.
    speed.push_back(std::min(alone / std::max(together, 1.0), 1.0));
  }
  return speed;
}

/// A number from a /proc file; -1 when it cannot be read.
long read_proc_long(const char* path) {
  std::ifstream in(path);
  long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

profiler::AlphaBetaSegment fit(const std::vector<CalibrationPoint>& pts) {
  std::vector<profiler::SizeTime> st;
  for (const auto& p : pts) st.push_back({p.bytes, static_cast<double>(std::max<TimeNs>(p.time, 1))});
  return profiler::fit_alpha_beta(st);
}

}  // namespace

HostCalibration calibrate_cpu_host(int devices, const CalibrationOptions& options) {
  if (devices < 1 || devices > 64)
    throw InputError("cpu host: devices must be in [1, 64], found " + std::to_string(devices));
  if (options.sizes.empty()) throw InputError("cpu host calibration: no message sizes");
  HostCalibration c;
  c.devices = devices;
  c.cores = static_cast<int>(allowed_cores().size());
  // A pipelined or data-parallel step keeps a compute and a communication worker per device.
  c.oversubscribed = 2 * devices > c.cores;
  for (Bytes s : options.sizes) c.transfer.push_back({s, measure_transfer(s, options)});
  c.transfer_fit = fit(c.transfer);
  if (devices > 1) {
    for (Bytes s : options.sizes) c.allreduce.push_back({s, measure_allreduce(devices, s, options)});
    c.allreduce_fit = fit(c.allreduce);
  }
  c.wakeup = measure_wakeup(options);
  c.step_start = measure_step_start(options);
  c.dispatch = measure_dispatch(options);
  // Compute threads of different devices are what runs concurrently for long; busier counts
  // (communication threads too) are extrapolated as fair shares (concurrent_speed).
  c.speed = measure_contention(std::min(devices, 8), true, options);
  c.speed_in_cache = measure_contention(std::min(devices, 8), false, options);
  if (options.priority == CpuRuntimeOptions::Priority::Fifo) {
    const PriorityScope fifo(options.priority);
    const long runtime_us = read_proc_long("/proc/sys/kernel/sched_rt_runtime_us");
    const long period_us = read_proc_long("/proc/sys/kernel/sched_rt_period_us");
    if (fifo.ok() && runtime_us > 0 && period_us > 0 && runtime_us < period_us) {
      c.rt_runtime = static_cast<TimeNs>(runtime_us) * 1000;
      c.rt_period = static_cast<TimeNs>(period_us) * 1000;
    }
  }
  return c;
}

double concurrent_speed(const HostCalibration& c, double busy) {
  if (c.speed.empty() || busy <= 1.0) return 1.0;
  const auto n = static_cast<double>(c.speed.size());
  if (busy >= n) return c.speed.back() * n / busy;
  const auto lo = static_cast<std::size_t>(busy);  // busy in (1, n): between speed[lo-1] and speed[lo]
  const double frac = busy - static_cast<double>(lo);
  return c.speed[lo - 1] * (1.0 - frac) + c.speed[lo] * frac;
}

RouteFit route_fit(const HostCalibration& cal, double collective_weight) {
  RouteFit transfer{cal.transfer_fit.alpha_ns, cal.transfer_fit.beta_gbps};
  if (cal.allreduce.empty() || cal.devices < 2 || collective_weight <= 0) return transfer;
  // The simulator's ring all-reduce over n ranks on this star: 2(n-1) x (route latency +
  // (S/n) / bandwidth), so the route that reproduces the measured all-reduce line is:
  const double n = cal.devices, steps = 2 * (n - 1);
  const RouteFit ring{cal.allreduce_fit.alpha_ns / steps, cal.allreduce_fit.beta_gbps * steps / n};
  const double w = std::min(collective_weight, 1.0);
  // Latencies mix linearly, bandwidths as time per byte.
  return {(1 - w) * transfer.alpha_ns + w * ring.alpha_ns,
          1.0 / ((1 - w) / transfer.beta_gbps + w / ring.beta_gbps)};
}

hardware::ClusterSpec cpu_host_cluster_spec(int devices, const HostCalibration& cal, double collective_weight,
                                            Bytes memory_per_device) {
  if (devices < 1) throw InputError("cpu host: devices must be >= 1");
  if (memory_per_device <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    memory_per_device = std::max<Bytes>(static_cast<Bytes>(pages) * page / devices, 1 * GiB);
  }
  hardware::ClusterSpec s;
  s.name = "cpu-host";
  s.description = std::to_string(devices) + " CPU worker threads of this host (parasim CPU executor), links measured";
  s.intra_node_fabric = "memcpy between threads' buffers";
  s.inter_node_fabric = "none";
  // Placeholder kind: the hardware table has no CPU entry; HostCostModel ignores the kind.
  const std::string kind = hardware::device_specs().front().kind;
  for (int d = 0; d < devices; ++d) s.devices.push_back({"cpu" + std::to_string(d), kind, 0, memory_per_device});
  s.endpoints.push_back({"host-memory", hardware::EndpointKind::Cpu, 0});
  const RouteFit route = route_fit(cal, collective_weight);
  const TimeNs hop_alpha = static_cast<TimeNs>(route.alpha_ns / 2);  // every route has two hops
  const GBps bw{std::clamp(route.beta_gbps, 0.01, 10'000.0)};
  for (int d = 0; d < devices; ++d)
    s.links.push_back({"memcpy-cpu" + std::to_string(d), hardware::LinkKind::QPI, d, devices, hop_alpha, bw});
  return s;
}

nlohmann::json host_calibration_to_json(const HostCalibration& c) {
  auto points = [](const std::vector<CalibrationPoint>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : v) a.push_back({{"bytes", p.bytes}, {"time_ns", p.time}});
    return a;
  };
  nlohmann::json j;
  j["devices"] = c.devices;
  j["cores"] = c.cores;
  j["oversubscribed"] = c.oversubscribed;
  j["transfer"] = {
      {"points", points(c.transfer)}, {"alpha_ns", c.transfer_fit.alpha_ns}, {"beta_gbps", c.transfer_fit.beta_gbps}};
  if (!c.allreduce.empty())
    j["allreduce"] = {{"points", points(c.allreduce)},
                      {"alpha_ns", c.allreduce_fit.alpha_ns},
                      {"beta_gbps", c.allreduce_fit.beta_gbps}};
  j["wakeup_ns"] = c.wakeup;
  j["step_start_ns"] = c.step_start;
  j["dispatch_ns"] = c.dispatch;
  j["concurrent_speed"] = c.speed;
  j["concurrent_speed_in_cache"] = c.speed_in_cache;
  j["rt_runtime_ns"] = c.rt_runtime;
  j["rt_period_ns"] = c.rt_period;
  return j;
}

}  // namespace parasim::executor
