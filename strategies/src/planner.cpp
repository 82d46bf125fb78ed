#include "parasim/strategies/planner.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>

#include "parasim/common/error.hpp"
#include "parasim/strategies/memory_model.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies {

std::string to_string(Objective o) { return o == Objective::TimeToTrain ? "time-to-train" : "step"; }

Objective parse_objective(const std::string& text) {
  if (text == "time-to-train") return Objective::TimeToTrain;
  if (text == "step") return Objective::StepTime;
  throw InputError("--objective: expected time-to-train or step, found \"" + text + "\"");
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Feasible: return "feasible";
    case Verdict::MemoryBound: return "memory-bound";
    case Verdict::Invalid: return "invalid";
    case Verdict::StaticMemory: return "static-memory";
    case Verdict::PeakMemory: return "peak-memory";
  }
  return "?";
}

TimeNs objective_value(const PlanRow& row, Objective objective) {
  return objective == Objective::TimeToTrain ? row.time_to_train : row.step_time;
}

namespace {

std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / static_cast<double>(GiB));
  return buf;
}

/// The least parameter memory any device of the candidate must hold: P / (mp * tp) parameters'
/// weights, gradients and (ZeRO-sharded) optimizer state. Every device holds at least its share
/// of the layers (TP replicates LayerNorms, pipelines copy tied embeddings: only more), so the
/// fullest device holds at least this much.
Bytes parameter_memory_lower_bound(const PlanRequest& req, const Strategy& s) {
  const std::int64_t shards = static_cast<std::int64_t>(s.mp) * s.tp;
  const std::int64_t params = (req.model->total_params() + shards - 1) / shards;
  const models::DType dtype = req.dtype.value_or(req.model->dtype());
  return static_memory_for(params, dtype, req.optimizer, s.zero == 1 ? s.dp : 1).total();
}

Bytes largest_capacity(const hardware::Cluster& cluster, std::int64_t devices) {
  Bytes cap = 0;
  for (hardware::DeviceId d = 0; d < static_cast<hardware::DeviceId>(devices); ++d)
    cap = std::max(cap, cluster.device(d).memory);
  return cap;
}

/// The device furthest over (or closest to) its capacity.
const DeviceReport* fullest_device(const std::vector<DeviceReport>& devices) {
  const DeviceReport* worst = nullptr;
  for (const DeviceReport& d : devices) {
    if (d.capacity <= 0) continue;
    if (worst == nullptr || static_cast<double>(d.peak_memory) * static_cast<double>(worst->capacity) >
                                static_cast<double>(worst->peak_memory) * static_cast<double>(d.capacity))
      worst = &d;
  }
  return worst;
}

/// Feasible rows by objective; the rest closest-to-fitting first, invalid ones last; ties by the
/// canonical strategy text and the batch, which make the order total.
bool ranks_before(const PlanRow& a, const PlanRow& b, Objective objective) {
  if (a.feasible() != b.feasible()) return a.feasible();
  if (a.feasible()) {
    const TimeNs va = objective_value(a, objective), vb = objective_value(b, objective);
    if (va != vb) return va < vb;
  } else {
    const bool ia = a.verdict == Verdict::Invalid, ib = b.verdict == Verdict::Invalid;
    if (ia != ib) return ib;
    if (!ia) {
      const double ra = a.memory_ratio(), rb = b.memory_ratio();
      if (ra != rb) return ra < rb;
    }
  }
  const std::string sa = to_string(a.strategy), sb = to_string(b.strategy);
  if (sa != sb) return sa < sb;
  return a.global_batch < b.global_batch;
}

void check_request(const PlanRequest& req) {
  if (req.model == nullptr || req.cluster == nullptr || req.costs == nullptr)
    throw InputError("planner: a model, a cluster and a cost model are required");
  if (req.space.gpus > req.cluster->num_devices())
    throw InputError("--gpus " + std::to_string(req.space.gpus) + ": cluster " + req.cluster->name() + " has only " +
                     std::to_string(req.cluster->num_devices()) + " devices; add nodes (--nodes)");
  if (req.dataset_samples < 1) throw InputError("planner: the dataset size must be positive");
}

}  // namespace

Granularity planner_granularity(const PlanRequest& req) {
  if (req.granularity) return *req.granularity;
  constexpr std::size_t kManyOps = 2000;
  const bool transformer = plan_tensor_parallel(*req.model).any();
  return transformer || req.model->num_ops() > kManyOps ? Granularity::Stage : Granularity::Op;
}

PlanRow evaluate_candidate(const PlanRequest& req, const Candidate& c, Granularity granularity, StepCache& cache,
                           std::string* cost_source) {
  PlanRow row;
  row.strategy = c.strategy;
  row.global_batch = c.global_batch;
  row.devices = c.strategy.devices();

  const Bytes bound = parameter_memory_lower_bound(req, c.strategy);
  const Bytes capacity = largest_capacity(*req.cluster, row.devices);
  if (bound > capacity) {
    row.verdict = Verdict::MemoryBound;
    row.peak_memory = bound;
    row.capacity = capacity;
    row.reason = "parameters, gradients and optimizer state alone need at least " + gib(bound) +
                 " per device, device has " + gib(capacity);
    return row;
  }

  StepSetup setup{.model = req.model,
                  .cluster = req.cluster,
                  .strategy = c.strategy,
                  .global_batch = c.global_batch,
                  .costs = req.costs,
                  .optimizer = req.optimizer,
                  .dtype = req.dtype,
                  .granularity = granularity,
                  .symmetry = Symmetry::DataAndTensor,
                  .cache = &cache,
                  .simulate_infeasible = false};
  StrategyResult r;
  try {
    r = simulate_strategy(setup, simulator::EngineOptions{.collectives = req.collectives});
  } catch (const InputError& e) {
    row.verdict = Verdict::Invalid;
    row.reason = e.what();
    return row;
  }
  if (cost_source != nullptr) *cost_source = r.cost_source;
  if (const DeviceReport* full = fullest_device(r.devices)) {
    row.peak_memory = full->peak_memory;
    row.capacity = full->capacity;
  }
  if (!r.simulated) {
    row.verdict = Verdict::StaticMemory;
    row.reason = r.infeasible_reason + " for weights, gradients and optimizer state";
    return row;
  }
  row.verdict = r.feasible ? Verdict::Feasible : Verdict::PeakMemory;
  row.reason = r.infeasible_reason;
  row.step_time = r.step_time;
  row.throughput = r.throughput;
  row.bubble_fraction = r.bubble_fraction;
  for (const DeviceReport& d : r.devices) {
    row.compute = std::max(row.compute, d.compute);
    row.exposed_comm = std::max(row.exposed_comm, d.exposed_comm);
  }
  const TimeToTrain t = time_to_train(req.efficiency, req.dataset_samples, c.global_batch, r.step_time);
  row.epochs = t.epochs;
  row.steps_per_epoch = t.steps_per_epoch;
  row.time_to_train = t.total;
  return row;
}

PlanResult run_planner(const PlanRequest& req) {
  check_request(req);
  PlanResult out;
  out.objective = req.objective;
  out.granularity = planner_granularity(req);
  const ModelFacts facts = model_facts(*req.model, req.cluster->devices_of_node(0).size() > 0
                                                       ? static_cast<int>(req.cluster->devices_of_node(0).size())
                                                       : 1);
  const std::vector<Candidate> candidates = enumerate_candidates(req.space, facts);
  out.rows.resize(candidates.size());
  out.stats.candidates = static_cast<std::int64_t>(candidates.size());

  StepCache own_cache;
  StepCache& cache = req.cache != nullptr ? *req.cache : own_cache;
  int threads = req.threads > 0 ? req.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(1, candidates.size()))));

  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(candidates.size());
  // The cost source of the lowest-index simulated candidate, per worker (merged deterministically).
  std::vector<std::pair<std::size_t, std::string>> sources(static_cast<std::size_t>(threads),
                                                           {candidates.size(), std::string()});
  auto work = [&](int worker) {
    for (std::size_t i = next.fetch_add(1); i < candidates.size(); i = next.fetch_add(1)) {
      try {
        std::string source;
        out.rows[i] = evaluate_candidate(req, candidates[i], out.granularity, cache, &source);
        auto& mine = sources[static_cast<std::size_t>(worker)];
        if (!source.empty() && i < mine.first) mine = {i, std::move(source)};
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (req.on_candidate_done) req.on_candidate_done();
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  std::size_t first = candidates.size();
  for (auto& [index, source] : sources)
    if (index < first) {
      first = index;
      out.cost_source = source;
    }
  for (const PlanRow& r : out.rows) {
    switch (r.verdict) {
      case Verdict::Feasible: ++out.stats.feasible; break;
      case Verdict::MemoryBound: ++out.stats.memory_bound; break;
      case Verdict::Invalid: ++out.stats.invalid; break;
      case Verdict::StaticMemory: ++out.stats.static_memory; break;
      case Verdict::PeakMemory: ++out.stats.peak_memory; break;
    }
    if (r.simulated()) ++out.stats.simulated;
  }
  std::sort(out.rows.begin(), out.rows.end(),
            [&](const PlanRow& a, const PlanRow& b) { return ranks_before(a, b, req.objective); });
  return out;
}

void add_details(const PlanRequest& req, PlanResult& plan, int top) {
  StepCache own_cache;
  StepCache& cache = req.cache != nullptr ? *req.cache : own_cache;
  int done = 0;
  for (PlanRow& row : plan.rows) {
    if (done >= top || !row.feasible()) break;
    ++done;
    StepSetup setup{.model = req.model,
                    .cluster = req.cluster,
                    .strategy = row.strategy,
                    .global_batch = row.global_batch,
                    .costs = req.costs,
                    .optimizer = req.optimizer,
                    .dtype = req.dtype,
                    .granularity = plan.granularity,
                    .symmetry = Symmetry::DataAndTensor,
                    .cache = &cache,
                    .simulate_infeasible = false};
    const StrategyResult r =
        simulate_strategy(setup, simulator::EngineOptions{.collectives = req.collectives, .record_timeline = true});
    const simulator::TaskGraph& g = r.lowered.graph;
    // Asynchronous schedules simulate micro + mp micro-batches; scale to one step's micro.
    const double scale = r.lowered.simulated_microbatches > 0 && row.strategy.asynchronous()
                             ? static_cast<double>(row.strategy.micro) / r.lowered.simulated_microbatches
                             : 1.0;
    std::vector<std::array<TimeNs, kStreamsPerDevice>> busy(static_cast<std::size_t>(g.num_devices()));
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
      const simulator::TaskTiming& tt = r.result.timeline[static_cast<std::size_t>(t)];
      if (tt.end < tt.start || tt.start < 0) continue;
      const int stream = g.stream(t);
      if (stream < 0 || stream >= kStreamsPerDevice) continue;
      busy[static_cast<std::size_t>(g.device(t))][static_cast<std::size_t>(stream)] += tt.end - tt.start;
    }
    auto worst = [&](int stream) {
      TimeNs m = 0;
      for (hardware::DeviceId d : r.lowered.simulated_devices)
        m = std::max(m, busy[static_cast<std::size_t>(d)][static_cast<std::size_t>(stream)]);
      return static_cast<TimeNs>(static_cast<double>(m) * scale + 0.5);
    };
    row.dp_comm = worst(kDataParallelStream);
    row.pipeline_comm = worst(kPipelineStream);
    row.tp_comm = worst(kTensorParallelStream);
    row.detailed = true;
  }
}

}  // namespace parasim::strategies
