// One validation: profile, calibrate, simulate, execute, compare (see validate.hpp).
#include "parasim/validation/validate.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <list>
#include <map>
#include <set>

#include "contention.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/cuda_runtime.hpp"
#include "parasim/executor/executor.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/mpi/link_probe.hpp"
#include "parasim/mpi/mpi_runtime.hpp"
#include "parasim/mpi/nccl_program.hpp"
#include "parasim/simulator/task_graph_json.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/cpu_profiler.hpp"
#include "parasim/profiler/gpu_profiler.hpp"
#include "parasim/profiler/link_probe.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/simulator/chrome_trace.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "parasim/strategies/step_cache.hpp"
#include "parasim/validation/host_cost_model.hpp"

namespace parasim::validation {

using namespace parasim::executor;  // runtimes, calibration, run_steps

struct ValidationCache {
  std::map<int, HostCalibration> calibrations;                           // by device count
  std::map<std::tuple<std::string, std::int64_t, int, int>, profiler::Profile> profiles;  // model, batch, backend, tp
  std::map<int, hardware::ClusterSpec> cuda_clusters;                    // by GPU count
};

std::shared_ptr<ValidationCache> make_validation_cache() { return std::make_shared<ValidationCache>(); }

std::string to_string(Backend b) { return b == Backend::Cpu ? "cpu" : "cuda"; }

std::optional<Backend> parse_backend(std::string_view s) {
  if (s == "cpu") return Backend::Cpu;
  if (s == "cuda") return Backend::Cuda;
  return std::nullopt;
}

double error_percent(TimeNs projected, TimeNs measured) {
  if (measured == 0) return 0;
  return static_cast<double>(projected - measured) / static_cast<double>(measured) * 100.0;
}

namespace {

constexpr int kContentionRounds = 4;

/// A validation on MPI ranks (validate_on_ranks): rank 0 runs the steps below with these.
struct Distributed {
  mpi::World* world = nullptr;
  mpi::RankLinkProbe probe;
  bool graph_sent = false;  // rank 0 broadcast its graph: failures after it are not agreed
};

std::vector<CalibrationPoint> calibration_points(const std::vector<profiler::SizeTime>& v) {
  std::vector<CalibrationPoint> out;
  for (const auto& p : v) out.push_back({p.bytes, static_cast<TimeNs>(p.time_ns)});
  return out;
}

/// The calibration with the thread-to-thread transfers and all-reduces replaced by the ranks'.
HostCalibration with_rank_links(HostCalibration c, const mpi::RankLinkProbe& probe) {
  c.transfer = calibration_points(probe.pingpong);
  c.transfer_fit = probe.pingpong_fit;
  c.allreduce = calibration_points(probe.allreduce);
  c.allreduce_fit = probe.allreduce_fit;
  return c;
}

/// The op each compute task runs: its op of the model built at its micro-batch's size.
OpResolver microbatch_ops(std::vector<int> replica_of_device, std::vector<std::vector<std::int64_t>> microbatches,
                          const std::map<std::int64_t, std::shared_ptr<const models::Model>>& builds) {
  return [replica = std::move(replica_of_device), mbs_of = std::move(microbatches), &builds](
             const simulator::TaskGraph& g, simulator::TaskId t) -> const models::Op* {
    const std::int32_t op = g.model_op(t);
    if (op < 0 || ix(g.device(t)) >= replica.size()) return nullptr;
    const int r = replica[ix(g.device(t))];
    if (r < 0 || ix(r) >= mbs_of.size()) return nullptr;
    const auto& mbs = mbs_of[ix(r)];
    if (mbs.empty()) return nullptr;
    const std::int32_t mb = g.microbatch(t);
    const std::int64_t samples = mb >= 0 && ix(mb) < mbs.size() ? mbs[ix(mb)] : mbs.front();
    auto it = builds.find(samples);
    if (it == builds.end() || ix(op) >= it->second->num_ops()) return nullptr;
    return &it->second->op(static_cast<models::OpId>(op));
  };
}

void stage(const ValidationRequest& r, const std::string& what) {
  if (r.on_stage) r.on_stage(what);
}

/// Pins the calling thread to one core for its lifetime, then restores its affinity.
class CoreScope {
 public:
  explicit CoreScope(int core) {
    ok_ = pthread_getaffinity_np(pthread_self(), sizeof old_, &old_) == 0;
    if (!ok_) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  ~CoreScope() {
    if (ok_) pthread_setaffinity_np(pthread_self(), sizeof old_, &old_);
  }
  CoreScope(const CoreScope&) = delete;
  CoreScope& operator=(const CoreScope&) = delete;

 private:
  cpu_set_t old_{};
  bool ok_ = false;
};

hardware::ClusterSpec cuda_cluster_spec(int devices) {
#if PARASIM_HAVE_CUDA
  profiler::LinkProbeOptions o;
  for (int d = 0; d < devices; ++d) o.devices.push_back(d);
  o.min_bytes = 4 * KiB;
  o.max_bytes = 256 * MiB;
  o.size_factor = 4;
  o.warmup = 3;
  o.iterations = 10;
  o.device_copies = false;
  o.collectives = devices > 1;
  return profiler::cluster_spec_from_probe(profiler::probe_links(o), "this-node");
#else
  (void)devices;
  throw RuntimeError("parasim was built without CUDA: --backend cuda is unavailable");
#endif
}

profiler::Profile profile_on(Backend backend, const models::Model& model, const ValidationRequest& req,
                             bool cold_cache) {
  if (backend == Backend::Cpu) {
    profiler::CpuProfileOptions o;
    o.repetitions = req.profile_repetitions;
    o.warmup = req.profile_warmup;
    o.optimizer = req.optimizer;
    o.command = "parasim validate";
    o.flush_cache = cold_cache;
    // Profile where device 0 computes (cores differ by a few percent: interrupts, other
    // tenants), under the workers' scheduling policy.
    const CoreScope core(allowed_cores().front());
    const PriorityScope priority(req.priority);
    return profiler::profile_model_on_cpu(model, o);
  }
#if PARASIM_HAVE_CUDA
  profiler::GpuProfileOptions o;
  o.plan.repetitions = req.profile_repetitions;
  o.optimizer = req.optimizer;
  return profiler::profile_model_on_gpu(model, o);
#else
  throw RuntimeError("parasim was built without CUDA: --backend cuda is unavailable");
#endif
}

/// Entries of `more` whose signature `into` lacks are appended.
void merge_profile(profiler::Profile& into, const profiler::Profile& more) {
  std::set<std::string> have;
  for (const auto& e : into.ops) have.insert(e.signature);
  for (const auto& e : more.ops)
    if (have.insert(e.signature).second) into.ops.push_back(e);
}

std::string file_stem(const ValidationResult& r) {
  std::string s = r.model + "-b" + std::to_string(r.batch) + "-" + r.strategy;
  for (char& c : s)
    if (c == ',' || c == '=' || c == '/') c = '_';
  return s;
}

void write_traces(const ValidationRequest& req, const ValidationResult& out, const simulator::TaskGraph& graph,
                  const hardware::Cluster& cluster, const simulator::StepResult& projected,
                  const ExecutionResult& run) {
  const std::filesystem::path dir(req.trace_dir);
  const std::string stem = file_stem(out);
  simulator::write_chrome_trace(dir / (stem + ".projected.trace.json"), graph, cluster, projected);
  simulator::StepResult measured;
  measured.step_time = run.step_median;
  measured.tasks = static_cast<std::int64_t>(graph.size());
  measured.timeline = run.timeline;
  measured.devices.resize(ix(graph.num_devices()));
  simulator::write_chrome_trace(dir / (stem + ".measured.trace.json"), graph, cluster, measured);
}

/// Refuses CPU validations this host cannot finish in reasonable time: the step's FLOPs
/// (2 x forward + backward MACs) at an optimistic 100 GFLOP/s per core, times the steps
/// validate runs (profile and execution). gpt3_175b at batch 1 is hours per step here.
void check_host_can_compute(const models::Model& model, const ValidationRequest& req) {
  constexpr double kOptimisticFlopsPerCore = 100e9;
  constexpr double kLimitSeconds = 3600;
  double macs = 0;
  for (std::size_t i = 0; i < model.num_ops(); ++i) {
    const models::Op& op = model.op(static_cast<models::OpId>(i));
    macs += static_cast<double>(op.macs_fwd) + static_cast<double>(op.macs_bwd_data) +
            static_cast<double>(op.macs_bwd_weight);
  }
  const double flops = 2 * macs;
  const double cores = static_cast<double>(std::max<std::size_t>(allowed_cores().size(), 1));
  const double step_s = flops / (kOptimisticFlopsPerCore * cores);
  const double runs = req.profile_warmup + req.profile_repetitions + req.warmup + req.repetitions;
  if (step_s * runs <= kLimitSeconds) return;
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "--model %s --batch %lld: one training step is %.3g GFLOP, at least %.3g s on this host's %.0f cores even "
      "at 100 GFLOP/s each, and validate runs about %.0f of them (profile and execution); the cpu backend "
      "validates models this machine can train (tiny_cnn, tiny_lstm, googlenet_cifar, ...) or a smaller --batch",
      req.model.c_str(), static_cast<long long>(req.batch), flops / 1e9, step_s, cores, runs);
  throw InputError(buf);
}

/// Refuses CPU validations whose weights, gradients and optimizer state alone need more than
/// half of this host's available memory (every simulated device is this host's memory, and
/// activations, kernel workspaces and the profiler's buffers come on top).
void check_host_memory(const simulator::TaskGraph& graph, const ValidationRequest& req) {
  Bytes need = 0;
  for (simulator::DeviceId d = 0; d < graph.num_devices(); ++d) {
    const Bytes m = graph.static_memory(d).total();
    need = m > std::numeric_limits<Bytes>::max() - need ? std::numeric_limits<Bytes>::max() : need + m;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const Bytes available = static_cast<Bytes>(pages) * page;
  if (need <= available / 2) return;
  throw InputError("--model " + req.model + " --batch " + std::to_string(req.batch) + " --strategy " + req.strategy +
                   ": weights, gradients and optimizer state need " + format_bytes(need) +
                   " in all, more than half of the " + format_bytes(available) +
                   " this host has free; the cpu backend validates models that fit this machine");
}

// The steps of validate(), in order (validate.hpp describes them).

/// The GPUs of an MPI job as a cluster: this rank's GPU kind and memory for every rank (one
/// kind per job), the hosts and links the ranks' NCCL probe measured.
hardware::ClusterSpec ranks_gpu_cluster(const Distributed& dist) {
#if PARASIM_HAVE_CUDA
  const int device = mpi::rank_cuda_device(dist.world->place().local_rank, visible_cuda_devices());
  const profiler::GpuDeviceInfo gpu = profiler::query_gpu_device(std::max(device, 0));
  return mpi::cluster_from_ranks(dist.probe, gpu.kind, gpu.memory, "mpi-ranks");
#else
  (void)dist;
  throw RuntimeError("parasim was built without CUDA: --backend cuda is unavailable");
#endif
}

/// The CPU ranks' cluster: on one host the calibrated "cpu-host" star (its links the probe's first
/// pair); across hosts the cluster the ranks' probe describes (per host, per host pair).
hardware::ClusterSpec cpu_cluster(int devices, const HostCalibration& cal, double collective_weight,
                                  const Distributed* dist) {
  if (dist && dist->world->hosts().size() > 1)
    return mpi::cluster_from_ranks(dist->probe, hardware::device_specs().front().kind,
                                   cpu_host_cluster_spec(devices, cal).devices.front().memory, "mpi-cpu-ranks");
  return cpu_host_cluster_spec(devices, cal, collective_weight);
}

/// 1. This machine as a cluster: cpu -> the calibrated "cpu-host" star (out.calibration set);
/// cuda -> the GPUs' measured copy and NCCL numbers. Both measured once per device count.
hardware::ClusterSpec machine_cluster(const ValidationRequest& req, int devices, ValidationCache& cache,
                                      ValidationResult& out, const Distributed* dist) {
  if (req.backend == Backend::Cpu) {
    auto it = cache.calibrations.find(devices);
    if (it == cache.calibrations.end()) {
      stage(req, "calibrating the CPU runtime for " + std::to_string(devices) + " devices");
      CalibrationOptions co;
      co.priority = req.priority;
      it = cache.calibrations.emplace(devices, calibrate_cpu_host(devices, co)).first;
    }
    out.calibration = dist ? with_rank_links(it->second, dist->probe) : it->second;
    return cpu_cluster(devices, *out.calibration, 0, dist);
  }
  if (dist) return ranks_gpu_cluster(*dist);
  if (!cuda_backend_built())
    throw RuntimeError(
        "--backend cuda: this parasim was built without CUDA (configure with the CUDA toolkit under "
        "/usr/local/cuda, or -DPARASIM_CUDA=ON); --backend cpu runs the same validation on this host");
  const int visible = visible_cuda_devices();
  if (visible == 0)
    throw RuntimeError(
        "--backend cuda: no CUDA GPU is visible (the cuda backend needs an NVIDIA GPU and its driver); "
        "--backend cpu runs the same validation on this host");
  if (visible < devices)
    throw RuntimeError("--backend cuda: strategy " + out.strategy + " needs " + std::to_string(devices) + " GPUs, " +
                       std::to_string(visible) + " visible (parasim does not emulate GPUs on a shared GPU)");
  auto it = cache.cuda_clusters.find(devices);
  if (it == cache.cuda_clusters.end()) {
    stage(req, "probing copies and NCCL between " + std::to_string(devices) + " GPUs");
    it = cache.cuda_clusters.emplace(devices, cuda_cluster_spec(devices)).first;
  }
  return it->second;
}

/// 2a. What the dry lowering tells about the CPU host: whether the op profiles are taken with
/// warm or cold caches (does the step's working set fit in the last-level cache?) and, for
/// several devices, the share of collectives the cpu-host links are fitted to (route_fit).
void size_up_cpu_host(const ValidationRequest& req, const models::Model& base, const simulator::TaskGraph& dry,
                      int devices, ValidationResult& out) {
  check_host_memory(dry, req);
  Bytes working_set = base.total_activation_bytes();
  for (simulator::DeviceId d = 0; d < dry.num_devices(); ++d) working_set += dry.static_memory(d).total();
  out.working_set = working_set;
  out.last_level_cache = profiler::detect_host_cpu().last_level_cache;
  using PC = ValidationRequest::ProfileCache;
  out.cold_cache_profile =
      req.profile_cache == PC::Cold ||
      (req.profile_cache == PC::Auto && out.last_level_cache > 0 && working_set > out.last_level_cache);
  if (devices > 1) {
    double transfers = 0, collectives = 0;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(dry.size()); ++t) {
      if (dry.kind(t) == simulator::TaskKind::Transfer) transfers += 1;
      if (dry.kind(t) == simulator::TaskKind::Collective) collectives += 1;
    }
    out.collective_weight = transfers + collectives > 0 ? collectives / (transfers + collectives) : 0;
  }
}

/// The model built at each micro-batch size the lowering uses, and their profiles merged.
struct MicrobatchProfiles {
  std::map<std::int64_t, std::shared_ptr<const models::Model>> builds;
  profiler::Profile merged;
};

/// 2b. Every micro-batch build profiled on the backend that will execute it (once per model,
/// size, backend and TP degree across a suite).
MicrobatchProfiles profile_microbatches(const ValidationRequest& req, const models::Model& base,
                                        const strategies::Strategy& strategy, const strategies::LoweredStep& dry,
                                        strategies::StepCache& steps, ValidationCache& cache,
                                        const ValidationResult& out) {
  std::set<std::int64_t> sizes;
  for (const auto& per_replica : dry.microbatches) sizes.insert(per_replica.begin(), per_replica.end());
  MicrobatchProfiles p;
  bool first = true;
  for (std::int64_t size : sizes) {
    throw_if_interrupted();  // Ctrl-C between profiles
    p.builds[size] = steps.model(base, size, base.dtype(), strategy.tp);
    const auto key = std::make_tuple(req.model + (out.cold_cache_profile ? "/cold" : "/warm"), size,
                                     static_cast<int>(req.backend), strategy.tp);
    auto it = cache.profiles.find(key);
    if (it == cache.profiles.end()) {
      stage(req,
            "profiling " + req.model + " at batch " + std::to_string(size) + " on " + to_string(req.backend) +
                (req.backend == Backend::Cpu ? (out.cold_cache_profile ? " (cold caches)" : " (warm caches)") : ""));
      it = cache.profiles.emplace(key, profile_on(req.backend, *p.builds[size], req, out.cold_cache_profile)).first;
    }
    if (first) p.merged = it->second;
    else merge_profile(p.merged, it->second);
    first = false;
  }
  return p;
}

/// 3. The projection. CPU: contention slowdowns by mean-field iteration - simulate, count the
/// busy threads during every compute task, slow each op down by the measured concurrent speed,
/// simulate again (damped; a few rounds settle it). `host_costs` keeps every cost model alive,
/// because the StepCache keys costs by the cost model's address.
strategies::StrategyResult project(const ValidationRequest& req, const models::Model& base, int devices,
                                   strategies::StepSetup& setup, const profiler::ProfileCostModel& measured_costs,
                                   const std::string& device_kind, std::list<HostCostModel>& host_costs,
                                   ValidationResult& out) {
  stage(req, "simulating " + out.strategy);
  std::map<std::string, double> slowdown;
  std::optional<strategies::StrategyResult> result;
  const auto op_name = [&base](const simulator::TaskGraph& g, simulator::TaskId t) {
    const std::int32_t op = g.model_op(t);
    return op >= 0 && ix(op) < base.num_ops() ? base.op(static_cast<models::OpId>(op)).name : std::string();
  };
  // Threads whose step fits in the last-level cache (the op profiles were taken warm for the same
  // reason) slow each other only by sharing the cores, not the memory bus: the in-cache curve.
  HostCalibration contention_calibration;
  if (req.backend == Backend::Cpu) {
    contention_calibration = *out.calibration;
    if (!out.cold_cache_profile && !out.calibration->speed_in_cache.empty())
      contention_calibration.speed = out.calibration->speed_in_cache;
  }
  for (int round = 0;; ++round) {
    throw_if_interrupted();  // Ctrl-C between contention rounds
    if (req.backend == Backend::Cpu) {
      host_costs.emplace_back(measured_costs, device_kind, out.calibration->dispatch, slowdown);
      setup.costs = &host_costs.back();
    } else {
      setup.costs = &measured_costs;
    }
    result.emplace(strategies::simulate_strategy(setup, {.record_timeline = true}));
    if (round == 0) out.simulated_without_contention = result->step_time;
    if (req.backend != Backend::Cpu || devices == 1 || round == kContentionRounds) break;
    out.contention_applied = true;
    const simulator::TaskGraph& g = result->lowered.graph;
    const auto next = detail::contention_slowdown(g, result->result.timeline, contention_calibration,
                                                  [&](simulator::TaskId t) { return op_name(g, t); });
    double change = 0;
    for (const auto& [name, f] : next) {
      const double old = slowdown.count(name) ? slowdown[name] : 1.0;
      const double damped = round == 0 ? f : 0.5 * (old + f);
      change = std::max(change, std::abs(damped - old));
      slowdown[name] = damped;
    }
    if (change < 0.01) break;
  }
  const strategies::StrategyResult& sim = *result;
  double mean_slowdown = 0;
  for (const auto& [name, f] : slowdown) mean_slowdown += f / static_cast<double>(slowdown.size());
  out.contention_slowdown = slowdown.empty() ? 1.0 : mean_slowdown;
  out.simulated = sim.step_time;
  out.projected = sim.step_time;
  if (req.backend == Backend::Cpu && out.calibration->rt_runtime > 0) {
    // SCHED_FIFO workers and real-time throttling: per core (the runtime pins device d's
    // workers to allowed core d mod cores), the time some task of its devices runs.
    const std::size_t cores = std::max<std::size_t>(allowed_cores().size(), 1);
    std::vector<TimeNs> core_busy(std::min(cores, static_cast<std::size_t>(devices)), 0);
    for (const strategies::DeviceReport& d : sim.devices)
      core_busy[ix(d.device) % core_busy.size()] += d.compute + d.exposed_comm;
    out.rt_throttle = detail::rt_throttle_stall(sim.step_time, core_busy, out.calibration->rt_runtime,
                                                out.calibration->rt_period);
    out.projected += out.rt_throttle;
  }
  out.tasks = static_cast<std::int64_t>(sim.lowered.graph.size());
  out.cost_source = sim.cost_source;
  return std::move(*result);
}

/// A rank's runtime under MPI: its share of the graph on the CPU or on its GPU.
std::unique_ptr<StreamRuntime> rank_runtime(const ValidationRequest& req, mpi::World& world, const OpResolver& ops) {
  const mpi::MpiRuntimeOptions o{.optimizer = req.optimizer, .priority = req.priority};
  return req.backend == Backend::Cuda ? mpi::make_mpi_nccl_runtime(world, ops, o)
                                      : mpi::make_mpi_cpu_runtime(world, ops, o);
}

/// 4. The measurement: run_steps() on the same graph, each compute task running its op at its
/// micro-batch size, in the stream order the simulated `durations` fix. Sets out.repetitions
/// (fewer than asked when the execution budget would be exceeded).
ExecutionResult measure(const ValidationRequest& req, const strategies::LoweredStep& lowered,
                        const std::map<std::int64_t, std::shared_ptr<const models::Model>>& builds,
                        const std::vector<TimeNs>& durations, ValidationResult& out, Distributed* dist) {
  std::vector<int> replica_of_device;
  for (const auto& role : lowered.roles) replica_of_device.push_back(role.replica);
  OpResolver ops = microbatch_ops(replica_of_device, lowered.microbatches, builds);
  std::unique_ptr<StreamRuntime> runtime;
  if (dist) {
    runtime = rank_runtime(req, *dist->world, ops);
  } else if (req.backend == Backend::Cpu) {
    CpuRuntimeOptions o;
    o.optimizer = req.optimizer;
    o.priority = req.priority;
    runtime = make_cpu_runtime(ops, o);
  } else {
    CudaRuntimeOptions o;
    o.optimizer = req.optimizer;
    runtime = make_cuda_runtime(ops, o);
  }
  int reps = req.repetitions, warmup = req.warmup;
  if (req.execution_budget_s > 0 && out.projected > 0) {
    const double fit = req.execution_budget_s * 1e9 / static_cast<double>(out.projected);
    reps = std::clamp(static_cast<int>(fit), std::min(3, req.repetitions), req.repetitions);
    if (reps < req.repetitions) warmup = std::min(warmup, 1);
  }
  out.repetitions = reps;
  if (dist) {
    // Every rank executes this graph, in this order, as many steps.
    nlohmann::json doc;
    doc["graph"] = simulator::taskgraph_to_json(lowered.graph);
    doc["durations"] = durations;
    doc["replica_of_device"] = replica_of_device;
    doc["microbatches"] = lowered.microbatches;
    doc["warmup"] = warmup;
    doc["repetitions"] = reps;
    dist->world->broadcast(doc.dump(), 0, "rank 0's task graph");
    dist->graph_sent = true;
  }
  stage(req, "executing " + std::to_string(warmup) + " + " + std::to_string(reps) + " steps");
  return run_steps(lowered.graph, *runtime, {.warmup = warmup, .repetitions = reps, .order_durations = durations});
}

/// 5. Side by side: the step, per device and summed over compute tasks.
void compare(const strategies::StrategyResult& sim, const ExecutionResult& run, const std::vector<TimeNs>& durations,
             ValidationResult& out) {
  const simulator::TaskGraph& graph = sim.lowered.graph;
  out.measured = run.step_median;
  out.measured_min = run.step_min;
  out.measured_max = run.step_max;
  out.launch_latency = run.launch_latency_median;
  out.error_pct = error_percent(out.projected, out.measured);
  out.runtime = run.runtime;
  out.notes = run.notes;
  out.stand_in_tasks = run.stand_in_tasks;
  if (!out.is_measured())
    out.notes.push_back(
        "not measured: " + std::to_string(out.stand_in_tasks) +
        " compute tasks ran as stand-ins for their projected time, so this row agrees by construction" +
        (PARASIM_HAVE_DNNL || out.backend != Backend::Cpu ? std::string() : " (parasim was built without oneDNN)"));
  for (const strategies::DeviceReport& d : sim.devices) {
    DeviceComparison c;
    c.device = d.device;
    c.projected_compute = d.compute;
    c.projected_comm = d.comm;
    if (ix(d.device) < run.devices.size()) {
      c.measured_compute = run.devices[ix(d.device)].compute_busy;
      c.measured_comm = run.devices[ix(d.device)].comm_busy;
    }
    out.per_device.push_back(c);
  }
  std::sort(out.per_device.begin(), out.per_device.end(),
            [](const auto& a, const auto& b) { return a.device < b.device; });
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(graph.size()); ++t) {
    if (graph.kind(t) != simulator::TaskKind::Compute) continue;
    ++out.compute_tasks;
    out.projected_compute_sum += durations[ix(t)];
    out.measured_compute_sum += run.timeline[ix(t)].end - run.timeline[ix(t)].start;
  }
}

}  // namespace

namespace {

/// The request's strategy, after the checks every validate run (one process or MPI ranks) makes.
strategies::Strategy checked_strategy(const ValidationRequest& req) {
  const strategies::Strategy strategy = strategies::parse_strategy(req.strategy);
  if (strategy.asynchronous())
    throw InputError("--strategy: " + req.strategy +
                     ": asynchronous schedules (pipedream, spectrain) have no step boundary to measure; validate runs "
                     "synchronous ones");
  if (req.batch < 1) throw InputError("--batch must be >= 1, found " + std::to_string(req.batch));
  if (req.repetitions < 1 || req.warmup < 0 || req.profile_repetitions < 1 || req.profile_warmup < 0)
    throw InputError("--reps and profile repetitions must be >= 1, --warmup and profile warm-up >= 0");
  return strategy;
}

/// The strategy lowered on the roofline over `cluster`: what validate profiles (the micro-batch
/// sizes) and what MPI ranks compare.
strategies::StepSetup roofline_setup(const ValidationRequest& req, const models::Model& base,
                                     const hardware::Cluster& cluster, const strategies::Strategy& strategy,
                                     const profiler::RooflineCostModel& roofline, strategies::StepCache& steps) {
  return {.model = &base,
          .cluster = &cluster,
          .strategy = strategy,
          .global_batch = req.batch,
          .costs = &roofline,
          .optimizer = req.optimizer,
          .symmetry = strategies::Symmetry::None,
          .cache = &steps};
}

ValidationResult validate_impl(const ValidationRequest& req, ValidationCache* cache, Distributed* dist) {
  std::shared_ptr<ValidationCache> own;
  if (!cache) {
    own = make_validation_cache();
    cache = own.get();
  }
  const strategies::Strategy strategy = checked_strategy(req);
  const models::Model base = models::build_zoo_model(req.model, {.batch = req.batch, .seq_len = req.seq_len});
  const int devices = static_cast<int>(strategy.devices());
  if (req.backend == Backend::Cpu) check_host_can_compute(base, req);

  ValidationResult out;
  out.backend = req.backend;
  out.model = req.model;
  out.batch = req.batch;
  out.seq_len = req.seq_len;
  out.strategy = strategies::to_string(strategy);
  out.devices = devices;

  std::optional<hardware::Cluster> cluster;
  cluster.emplace(machine_cluster(req, devices, *cache, out, dist));

  // The strategy lowered once on the roofline: the micro-batch sizes to profile.
  strategies::StepCache steps;
  profiler::RooflineCostModel roofline;
  strategies::StepSetup setup = roofline_setup(req, base, *cluster, strategy, roofline, steps);
  const strategies::LoweredStep dry = strategies::lower_step(setup);
  if (req.backend == Backend::Cpu) {
    size_up_cpu_host(req, base, dry.graph, devices, out);
    if (devices > 1) {
      cluster.emplace(cpu_cluster(devices, *out.calibration, out.collective_weight, dist));
      setup.cluster = &*cluster;
    }
  }
  const MicrobatchProfiles profiles = profile_microbatches(req, base, strategy, dry, steps, *cache, out);
  profiler::ProfileCostModel measured_costs(profiles.merged, "validate (" + to_string(req.backend) + ")");

  std::list<HostCostModel> host_costs;
  const strategies::StrategyResult sim =
      project(req, base, devices, setup, measured_costs, profiles.merged.device.kind, host_costs, out);
  const simulator::TaskGraph& graph = sim.lowered.graph;
  std::vector<TimeNs> durations(graph.size(), 0);
  for (std::size_t t = 0; t < graph.size(); ++t)
    durations[t] = std::max<TimeNs>(sim.result.timeline[t].end - sim.result.timeline[t].start, 0);

  const ExecutionResult run = measure(req, sim.lowered, profiles.builds, durations, out, dist);
  compare(sim, run, durations, out);
  if (!req.trace_dir.empty()) write_traces(req, out, graph, *cluster, sim.result, run);
  const profiler::CostCounts counts = measured_costs.counts();
  if (counts.roofline > 0)
    out.notes.push_back(std::to_string(counts.roofline) + " op cost lookups fell back to the roofline (not measured)");
  return out;
}

/// What every rank of validate_on_ranks() compares: its request and its task graph lowered on
/// the roofline over a fixed cluster (the same bytes on every rank of one build and command).
std::string rank_fingerprint(const ValidationRequest& req, int ranks) {
  if (req.backend == Backend::Cuda && !mpi::nccl_runtime_built())
    throw InputError(
        "--backend cuda: validate on MPI ranks needs the CUDA runtime over NCCL, and this parasim was "
        "built without CUDA; --backend cpu runs the same validation on the ranks' CPUs");
  if (req.backend == Backend::Cuda && visible_cuda_devices() == 0)
    throw RuntimeError(
        "--backend cuda: no CUDA GPU is visible to this rank (one rank drives one GPU); --backend cpu "
        "runs the same validation on the ranks' CPUs");
  const strategies::Strategy strategy = checked_strategy(req);
  const int devices = static_cast<int>(strategy.devices());
  if (devices != ranks)
    throw InputError("--strategy " + strategies::to_string(strategy) + " runs " + std::to_string(devices) +
                     " devices and this MPI job has " + std::to_string(ranks) +
                     " ranks: run one rank per device (mpirun -np " + std::to_string(devices) + ")");
  const models::Model base = models::build_zoo_model(req.model, {.batch = req.batch, .seq_len = req.seq_len});
  HostCalibration fixed;
  fixed.devices = devices;
  fixed.cores = 1;
  fixed.speed = {1.0};
  fixed.transfer_fit = {0, 0, 10'000, 10};
  fixed.allreduce_fit = {0, 0, 10'000, 10};
  const hardware::Cluster cluster{cpu_host_cluster_spec(devices, fixed, 0, 1 * GiB)};
  strategies::StepCache steps;
  profiler::RooflineCostModel roofline;
  const strategies::LoweredStep dry =
      strategies::lower_step(roofline_setup(req, base, cluster, strategy, roofline, steps));
  return req.model + " batch " + std::to_string(req.batch) + " seq " + std::to_string(req.seq_len) + " " +
         strategies::to_string(strategy) + " " + parasim::to_string(req.optimizer) + " warmup " +
         std::to_string(req.warmup) + " reps " + std::to_string(req.repetitions) + "\n" +
         simulator::taskgraph_to_json(dry.graph).dump();
}

std::string hex(std::uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// 1. Every rank lowers its own request; a failure anywhere or graphs that differ end every rank
/// with the same agreed error.
void agree_on_graph(const ValidationRequest& req, mpi::World& world) {
  std::string mine;
  try {
    mine = "ok " + hex(mpi::fnv1a(rank_fingerprint(req, world.size())));
  } catch (const InputError& e) {
    mine = std::string("input ") + e.what();
  } catch (const std::exception& e) {
    mine = std::string("runtime ") + e.what();
  }
  const std::vector<std::string> all = world.allgather(mine, "every rank's task-graph hash");
  for (int r = 0; r < world.size(); ++r) {
    const std::string& s = all[ix(r)];
    if (s.rfind("input ", 0) == 0)
      throw mpi::AgreedError("rank " + std::to_string(r) + ": " + s.substr(6), kExitBadInput);
    if (s.rfind("runtime ", 0) == 0)
      throw mpi::AgreedError("rank " + std::to_string(r) + ": " + s.substr(8), kExitRuntime);
  }
  std::string differing;
  for (int r = 1; r < world.size(); ++r)
    if (all[ix(r)] != all[0]) differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  if (differing.empty()) return;
  const std::string same =
      "; every rank must run the same command (model, batch, strategy, options) with the same parasim build";
  if (mine != all[0])
    throw mpi::AgreedError("the task graph of rank " + std::to_string(world.rank()) + " (hash " + mine.substr(3) +
                               ") differs from rank 0's (hash " + all[0].substr(3) + ")" + same,
                           kExitBadInput);
  throw mpi::AgreedError("rank" + std::string(differing.find(',') == std::string::npos ? " " : "s ") + differing +
                             " run a task graph that differs from rank 0's (hash " + all[0].substr(3) + ")" + same,
                         kExitBadInput);
}

/// 3 (ranks other than 0): rank 0's graph, this rank's models at its micro-batch sizes, the
/// same steps on the MPI runtime.
ValidationResult follow_rank0(const ValidationRequest& req, mpi::World& world) {
  // Rank 0 calibrates, profiles and simulates first: a long wait, which the heartbeat guards.
  const std::string text = world.broadcast("", 0, "rank 0's task graph", std::chrono::hours(2));
  const nlohmann::json doc = nlohmann::json::parse(text);
  if (doc.contains("error")) throw mpi::AgreedError(doc["error"].get<std::string>(), doc["code"].get<int>());
  const simulator::TaskGraph graph = simulator::taskgraph_from_json(doc["graph"], "rank 0's task graph");
  const auto durations = doc["durations"].get<std::vector<TimeNs>>();
  const auto microbatches = doc["microbatches"].get<std::vector<std::vector<std::int64_t>>>();
  const strategies::Strategy strategy = strategies::parse_strategy(req.strategy);
  const models::Model base = models::build_zoo_model(req.model, {.batch = req.batch, .seq_len = req.seq_len});
  strategies::StepCache steps;
  std::map<std::int64_t, std::shared_ptr<const models::Model>> builds;
  for (const auto& per_replica : microbatches)
    for (std::int64_t size : per_replica)
      if (!builds.count(size)) builds[size] = steps.model(base, size, base.dtype(), strategy.tp);
  const OpResolver ops = microbatch_ops(doc["replica_of_device"].get<std::vector<int>>(), microbatches, builds);
  auto runtime = rank_runtime(req, world, ops);
  const ExecutionResult run = run_steps(
      graph, *runtime,
      {.warmup = doc["warmup"].get<int>(), .repetitions = doc["repetitions"].get<int>(), .order_durations = durations});
  ValidationResult out;
  out.backend = req.backend;
  out.model = req.model;
  out.strategy = strategies::to_string(strategy);
  out.devices = world.size();
  out.runtime = run.runtime;
  out.measured = run.step_median;
  return out;
}

}  // namespace

ValidationResult validate(const ValidationRequest& req, ValidationCache* cache) {
  return validate_impl(req, cache, nullptr);
}

ValidationResult validate_on_ranks(const ValidationRequest& req, mpi::World& world) {
  agree_on_graph(req, world);
  Distributed dist;
  dist.world = &world;
  stage(req, "probing the links between " + std::to_string(world.size()) + " MPI ranks");
  dist.probe = mpi::probe_rank_links(
      world, {.transport = req.backend == Backend::Cuda ? mpi::ProbeTransport::Nccl : mpi::ProbeTransport::Mpi});
  ValidationResult out;
  if (world.root()) {
    // Until the graph is out, a failure here is everyone's: the other ranks wait for it.
    const auto tell = [&](const std::string& message, int code) {
      if (!dist.graph_sent) {
        world.broadcast(nlohmann::json{{"error", "rank 0: " + message}, {"code", code}}.dump(), 0,
                        "rank 0's task graph");
        throw mpi::AgreedError("rank 0: " + message, code);
      }
    };
    try {
      out = validate_impl(req, nullptr, &dist);
    } catch (const InputError& e) {
      tell(e.what(), kExitBadInput);
      throw;
    } catch (const mpi::AgreedError&) {
      throw;
    } catch (const std::exception& e) {
      tell(e.what(), kExitRuntime);
      throw;
    }
  } else {
    out = follow_rank0(req, world);
  }
  for (const mpi::RankPlace& p : world.places()) out.ranks.push_back({p.rank, p.host, p.local_rank, p.pid});
  out.rank_links = dist.probe;
  return out;
}

nlohmann::json validation_to_json(const ValidationResult& r) {
  nlohmann::json j;
  j["backend"] = to_string(r.backend);
  j["model"] = r.model;
  j["batch"] = r.batch;
  if (r.seq_len > 0) j["seq_len"] = r.seq_len;
  j["strategy"] = r.strategy;
  j["devices"] = r.devices;
  j["projected_ms"] = r.projected_ms();
  j["measured_ms"] = r.measured_ms();
  j["measured_min_ms"] = ns_to_ms(r.measured_min);
  j["measured_max_ms"] = ns_to_ms(r.measured_max);
  j["launch_latency_ms"] = ns_to_ms(r.launch_latency);
  j["repetitions"] = r.repetitions;
  j["measured"] = r.is_measured();
  j["error_pct"] = r.is_measured() ? nlohmann::json(r.error_pct) : nlohmann::json();
  j["stand_in_tasks"] = r.stand_in_tasks;
  j["compute_tasks"] = r.compute_tasks;
  j["simulated_ms"] = ns_to_ms(r.simulated);
  j["rt_throttle_ms"] = ns_to_ms(r.rt_throttle);
  if (r.backend == Backend::Cpu) {
    j["profile_cache"] = r.cold_cache_profile ? "cold" : "warm";
    j["working_set_bytes"] = r.working_set;
    j["last_level_cache_bytes"] = r.last_level_cache;
  }
  j["tasks"] = r.tasks;
  j["projected_compute_sum_ms"] = ns_to_ms(r.projected_compute_sum);
  j["measured_compute_sum_ms"] = ns_to_ms(r.measured_compute_sum);
  j["cost_source"] = r.cost_source;
  j["contention_slowdown"] = r.contention_slowdown;
  if (r.backend == Backend::Cpu)
    j["contention"] = {{"applied", r.contention_applied},
                       {"mean_slowdown", r.contention_slowdown},
                       {"simulated_without_ms", ns_to_ms(r.simulated_without_contention)},
                       {"effect_ms", ns_to_ms(r.simulated - r.simulated_without_contention)}};
  j["collective_weight"] = r.collective_weight;
  j["runtime"] = r.runtime;
  j["notes"] = r.notes;
  nlohmann::json busy = nlohmann::json::array();
  for (const auto& d : r.per_device)
    busy.push_back({{"device", d.device},
                    {"projected_compute_ms", ns_to_ms(d.projected_compute)},
                    {"measured_compute_ms", ns_to_ms(d.measured_compute)},
                    {"projected_comm_ms", ns_to_ms(d.projected_comm)},
                    {"measured_comm_ms", ns_to_ms(d.measured_comm)}});
  j["devices_busy"] = busy;
  if (r.calibration) j["calibration"] = host_calibration_to_json(*r.calibration);
  if (!r.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankPlacement& p : r.ranks)
      ranks.push_back(
          {{"rank", p.rank}, {"device", p.rank}, {"host", p.host}, {"local_rank", p.local_rank}, {"pid", p.pid}});
    j["mpi_ranks"] = ranks;
  }
  if (r.rank_links) {
    const auto points = [](const std::vector<profiler::SizeTime>& v) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& p : v) a.push_back({{"bytes", p.bytes}, {"time_ns", p.time_ns}});
      return a;
    };
    j["mpi_links"] = {{"pingpong",
                       {{"points", points(r.rank_links->pingpong)},
                        {"alpha_ns", r.rank_links->pingpong_fit.alpha_ns},
                        {"beta_gbps", r.rank_links->pingpong_fit.beta_gbps}}},
                      {"allreduce",
                       {{"points", points(r.rank_links->allreduce)},
                        {"alpha_ns", r.rank_links->allreduce_fit.alpha_ns},
                        {"beta_gbps", r.rank_links->allreduce_fit.beta_gbps}}}};
    nlohmann::json pairs = nlohmann::json::array();
    for (const mpi::ProbedPair& p : r.rank_links->pairs)
      pairs.push_back({{"ranks", {p.pair.a, p.pair.b}},
                       {"hosts", {p.pair.host_a, p.pair.host_b}},
                       {"class", p.pair.same_host() ? "intra-host" : "inter-host"},
                       {"points", points(p.points)},
                       {"alpha_ns", p.fit.alpha_ns},
                       {"beta_gbps", p.fit.beta_gbps}});
    j["mpi_links"]["pairs"] = pairs;
    j["mpi_links"]["transport"] = r.rank_links->transport == mpi::ProbeTransport::Nccl ? "nccl" : "mpi";
    j["mpi_links"]["notes"] = r.rank_links->notes;
  }
  return j;
}

}  // namespace parasim::validation
