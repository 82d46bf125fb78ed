// evaluate_candidate(): one configuration judged, cheapest test first (planner.hpp), with the
// step simulated by the event engine - directly, or at two smaller micro-batch counts and
// extrapolated along the micro-batch count when that count is large.
//
// Why the extrapolation is sound: at a fixed micro-batch size, a synchronous step is a warm-up,
// a steady state that adds the same work per extra micro-batch, and a drain plus the gradient
// synchronisation, so step time and per-device busy times are affine in the micro-batch count K
// once the steady state is reached; peak memory is affine too (flat for 1F1B / interleaving /
// accumulation, whose in-flight micro-batches are bounded, linear for GPipe, which keeps all K).
// Asynchronous schedules are already measured as K x the steady-state time per micro-batch.
// So two simulations at K1 < K2 (K1 = mp, K2 = 2 mp for pipelines; 1 and 2 without a pipeline)
// give every quantity at K exactly in exact arithmetic; measured on Turing-NLG 530B
// configurations, the largest deviation from a full simulation is 0.4% of the step (1F1B with
// sequence parallelism), peaks exact (docs/projection.md). Interleaving's warm-up is longer than
// mp micro-batches, so its peaks (and those of long 1F1B pipelines, sampled earlier, at a twelfth
// and half of their stages) are continued along the chunk forwards each stage holds in flight
// (InFlight, extrapolation_points()).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <future>
#include <mutex>
#include <unordered_map>

#include "compute_once.hpp"
#include "gib.hpp"
#include "parasim/common/error.hpp"
#include "parasim/strategies/memory_model.hpp"
#include "parasim/strategies/planner.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "parasim/strategies/step_bound.hpp"

namespace parasim::strategies {

namespace {

using detail::gib;

/// Whether the request's micro-batches add their gradients up in place, (K - 1) / K of a pass on
/// each: a share that grows with the micro-batch count K (common/grad_accumulation.hpp).
bool accumulates_in_place(const PlanRequest& req) {
  return resolve(req.grad_accumulation, req.dtype.value_or(req.model->dtype())) == GradAccumulation::InPlace;
}

/// The least parameter memory the fullest device of the candidate must hold: weights, gradients
/// and (ZeRO-sharded) optimizer state of the larger of
///   P / (mp * tp)                      every device holds at least its share, and
///   ceil(L / mp) * min layer / tp      whole transformer layers are cut between stages, so some
///                                      device holds at least ceil(L / mp) of them (pigeonhole).
/// TP replicates LayerNorms and pipelines copy tied embeddings: real devices only hold more.
///   expert parallelism: the experts' parameters count ep times less (and the layer bound, whose
///                                      smallest layer's experts are not known apart, is not used).
Bytes parameter_memory_lower_bound(const PlanRequest& req, const ModelFacts& facts, const Strategy& s) {
  const std::int64_t shards = static_cast<std::int64_t>(s.mp) * s.tp;
  const std::int64_t total = facts.params - facts.expert_params + (facts.expert_params + s.ep - 1) / s.ep;
  std::int64_t params = (total + shards - 1) / shards;
  if (facts.min_layer_params > 0 && s.ep == 1) {
    const std::int64_t layers = (facts.layers + s.mp - 1) / s.mp;
    params = std::max(params, layers * facts.min_layer_params / s.tp);
  }
  const models::DType dtype = req.dtype.value_or(req.model->dtype());
  return static_memory_for(params, dtype, req.optimizer, s.zero >= 1 ? s.dp * s.cp : 1, s.zero >= 2, s.zero == 3,
                           req.grad_accumulation)
      .total();
}

/// What a PlanRow needs from one simulated step.
struct StepSample {
  bool simulated = false;
  bool feasible = true;
  std::string reason;
  TimeNs step = 0;
  TimeNs bubble = 0;
  struct Device {
    hardware::DeviceId id = 0;
    int stage = 0;
    TimeNs compute = 0;
    TimeNs exposed = 0;
    Bytes peak = 0;
    Bytes capacity = 0;
    std::array<TimeNs, kStreamsPerDevice> stream_busy{};
  };
  std::vector<Device> devices;
};

StepSample sample_of(const StrategyResult& r) {
  StepSample s;
  s.simulated = r.simulated;
  s.feasible = r.feasible;
  s.reason = r.infeasible_reason;
  s.step = r.step_time;
  s.bubble = r.bubble_time;
  for (const DeviceReport& d : r.devices)
    s.devices.push_back({d.device, d.stage, d.compute, d.exposed_comm, d.peak_memory, d.capacity, d.stream_busy});
  return s;
}

/// How many chunk forwards stage `s` of a 1F1B or interleaved pipeline holds in flight at its
/// peak with K micro-batches: its warm-up forwards plus one (pipeline_schedule.cpp: warm-up
/// mp - s - 1 for 1F1B, 2 (mp - s - 1) + (V - 1) mp for Megatron's interleaving), at most all K V.
/// Until then every forward precedes every backward and the peak grows by one micro-batch's
/// activations per micro-batch; from then on it stays.
struct InFlight {
  int stages = 0;  // 0: not a 1F1B-like schedule (peaks continue along K)
  int virtual_stages = 1;
  int at(int stage, int micro) const {
    const int warmup = virtual_stages == 1 ? stages - stage - 1
                                           : 2 * (stages - stage - 1) + (virtual_stages - 1) * stages;
    return std::min(micro * virtual_stages, warmup + 1);
  }
};

InFlight in_flight_of(const Strategy& s) {
  if (s.mp <= 1) return {};
  if (s.schedule == Schedule::OneFOneB) return {s.mp, 1};
  if (s.schedule == Schedule::Interleaved) return {s.mp, s.interleave};
  return {};
}

/// Every quantity of `a` (at k1) and `b` (at k2) continued affinely to k. Peaks are affine in the
/// micro-batches a device holds in flight: K, or for 1F1B and interleaving the count `flight`
/// gives, which stops growing once the warm-up is full.
StepSample extrapolate(const StepSample& a, int k1, const StepSample& b, int k2, int k, const InFlight& flight) {
  const double t = static_cast<double>(k - k1) / static_cast<double>(k2 - k1);
  auto at = [t](std::int64_t x, std::int64_t y) {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(x) + t * static_cast<double>(y - x)));
  };
  StepSample s = b;
  s.step = at(a.step, b.step);
  s.bubble = std::max<TimeNs>(0, at(a.bubble, b.bubble));
  const StepSample::Device* worst = nullptr;
  for (std::size_t i = 0; i < s.devices.size() && i < a.devices.size(); ++i) {
    StepSample::Device& d = s.devices[i];
    d.compute = at(a.devices[i].compute, d.compute);
    // Compute and exposed communication are disjoint parts of the step: continued separately they
    // can overrun it where the samples sit at that bound (an asynchronous step's steady state).
    d.exposed = std::min(at(a.devices[i].exposed, d.exposed), std::max<TimeNs>(0, s.step - d.compute));
    for (std::size_t j = 0; j < d.stream_busy.size(); ++j)
      d.stream_busy[j] = at(a.devices[i].stream_busy[j], d.stream_busy[j]);
    if (flight.stages > 0) {
      const int n1 = flight.at(d.stage, k1), n2 = flight.at(d.stage, k2);
      if (n2 > n1) {
        const double u = static_cast<double>(flight.at(d.stage, k) - n1) / static_cast<double>(n2 - n1);
        d.peak = static_cast<Bytes>(std::llround(static_cast<double>(a.devices[i].peak) +
                                                 u * static_cast<double>(d.peak - a.devices[i].peak)));
      }  // else the warm-up was full at k1 already: the peak stays
    } else {
      d.peak = at(a.devices[i].peak, d.peak);
    }
    if (d.peak > d.capacity &&
        (worst == nullptr || static_cast<double>(d.peak) * static_cast<double>(worst->capacity) >
                                 static_cast<double>(worst->peak) * static_cast<double>(d.capacity)))
      worst = &d;
  }
  s.feasible = worst == nullptr;
  s.reason = worst == nullptr ? std::string()
                              : "needs " + gib(worst->peak) + " on device " + std::to_string(worst->id) + " (stage " +
                                    std::to_string(worst->stage) + "), device has " + gib(worst->capacity);
  return s;
}

}  // namespace

/// Long 1F1B pipelines (at least kLongPipeline stages) are sampled at ceil(mp / 12) and
/// ceil(mp / 2) micro-batches (or ceil(K / 2) when smaller, as long as that is at least twice the
/// first), fewer than the stages. Stage s holds min(K, mp - s) micro-batches
/// in flight (pipeline_schedule.cpp), so its peak is continued along that count (InFlight), not
/// along K; the step grows by nearly the steady-state time per micro-batch from far below mp on.
/// How nearly depends on the length and mostly on the second sample: on Turing-NLG 530B these
/// samples put 105-stage steps within 0.29% of a full simulation (peaks exact; mp / 3 and
/// 2 mp / 3 gave 0.15%, mp / 6 and mp / 2 0.25%, mp / 6 and mp / 3 0.34%, mp / 9 and 2 mp / 9
/// 0.88%), while mp / 2 and mp put 21-stage steps (sequence parallelism) 0.8% off, so shorter
/// pipelines keep mp and 2 mp (docs/projection.md, bench/planner_accuracy.cpp).
inline constexpr int kLongPipeline = 64;
bool long_one_f_one_b(const Strategy& s) { return s.mp >= kLongPipeline && s.schedule == Schedule::OneFOneB; }

std::array<int, 2> extrapolation_points(const Strategy& s) {
  if (long_one_f_one_b(s)) {
    // The second sample is at most half of K itself, so that a K between the samples' sum and
    // mp is extrapolated too (over a factor of two at most), not simulated in full.
    const int k1 = (s.mp + 11) / 12, k2 = std::min((s.mp + 1) / 2, (s.micro + 1) / 2);
    return k2 >= 2 * k1 && s.micro > k1 + k2 ? std::array<int, 2>{k1, k2} : std::array<int, 2>{0, 0};
  }
  std::array<int, 2> k{1, 2};
  if (s.mp > 1 && s.pipelined()) k = {s.mp, 2 * s.mp};
  if (s.micro <= k[1]) return {0, 0};
  return k;
}

namespace {

void fill_from_sample(PlanRow& row, const StepSample& s, const PlanRequest& req, const ModelFacts& facts) {
  const StepSample::Device* full = nullptr;
  for (const StepSample::Device& d : s.devices) {
    if (d.capacity <= 0) continue;
    if (full == nullptr || static_cast<double>(d.peak) * static_cast<double>(full->capacity) >
                               static_cast<double>(full->peak) * static_cast<double>(d.capacity))
      full = &d;
    row.compute = std::max(row.compute, d.compute);
    row.exposed_comm = std::max(row.exposed_comm, d.exposed);
    row.dp_comm = std::max(row.dp_comm, d.stream_busy[kDataParallelStream]);
    row.pipeline_comm = std::max(row.pipeline_comm, d.stream_busy[kPipelineStream]);
    row.tp_comm = std::max(row.tp_comm, d.stream_busy[kTensorParallelStream]);
  }
  if (full != nullptr) {
    row.peak_memory = full->peak;
    row.capacity = full->capacity;
  }
  if (!s.simulated) {
    row.verdict = Verdict::StaticMemory;
    row.reason = s.reason + " for weights, gradients and optimizer state";
    row.compute = row.exposed_comm = row.dp_comm = row.pipeline_comm = row.tp_comm = 0;
    return;
  }
  row.verdict = s.feasible ? Verdict::Feasible : Verdict::PeakMemory;
  row.reason = s.reason;
  row.step_time = s.step;
  row.throughput = s.step > 0 ? static_cast<double>(row.global_batch) * 1e9 / static_cast<double>(s.step) : 0;
  row.bubble_fraction = s.step > 0 ? static_cast<double>(s.bubble) / static_cast<double>(s.step) : 0;
  if (s.step > 0 && facts.device_peak_flops > 0)
    row.mfu = facts.matmul_flops_per_sample * static_cast<double>(row.global_batch) /
              (static_cast<double>(row.devices) * facts.device_peak_flops * static_cast<double>(s.step) * 1e-9);
  if (s.step > 0) {
    const TimeToTrain t = time_to_train(req.efficiency, req.dataset_samples, row.global_batch, s.step);
    row.epochs = t.epochs;
    row.steps_per_epoch = t.steps_per_epoch;
    row.time_to_train = t.total;
  }
}

}  // namespace

bool parameter_memory_rejects(const PlanRequest& req, const ModelFacts& facts, const Candidate& c) {
  return parameter_memory_lower_bound(req, facts, c.strategy) > req.cluster->largest_memory(c.strategy.devices());
}

struct StepBoundCache::State {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_future<std::optional<StepBound>>> bounds;
};

StepBoundCache::StepBoundCache(const hardware::Cluster& cluster) : state_(std::make_unique<State>()) {
  one_kind_ = true;
  for (hardware::DeviceId d = 1; d < cluster.num_devices(); ++d)
    one_kind_ = one_kind_ && cluster.device(d).kind == cluster.device(0).kind;
}

StepBoundCache::~StepBoundCache() = default;

std::optional<StepBound> StepBoundCache::get(const std::string& key,
                                             const std::function<std::optional<StepBound>()>& make) {
  // The first caller of a key works it out; the others wait for it rather than repeat it.
  return compute_once(state_->mutex, state_->bounds, key, make);
}

StepSetup plan_step_setup(const PlanRequest& req, const Strategy& strategy, std::int64_t global_batch,
                          Granularity granularity, StepCache& cache) {
  return StepSetup{.model = req.model,
                   .cluster = req.cluster,
                   .strategy = strategy,
                   .global_batch = global_batch,
                   .costs = req.costs,
                   .optimizer = req.optimizer,
                   .dtype = req.dtype,
                   .granularity = granularity,
                   .symmetry = Symmetry::DataAndTensor,
                   .cache = &cache,
                   .simulate_infeasible = false,
                   .collective_costs = req.collective_costs,
                   .calibration = req.calibration,
                   .data_loading = req.data_loading,
                   .grad_accumulation = req.grad_accumulation};
}

/// A fewest-layers recomputation's bound is its fewest, one layer a chunk: the least compute of
/// every count it may settle on.
Strategy least_recompute(const Candidate& c) {
  Strategy s = c.strategy;
  if (c.fewest_recompute_layers) s.recompute_layers = 1;
  return s;
}

std::string bound_shape_key(const Candidate& c) {
  Strategy shape = least_recompute(c);
  const std::int64_t per_replica = static_cast<std::int64_t>(shape.dp) * shape.micro;
  shape.dp = 1;
  shape.micro = 1;
  if (shape.zero <= 1) shape.zero = 0;
  return to_string(shape) + "|" + std::to_string(per_replica > 0 ? c.global_batch / per_replica : 0);
}

TimeNs candidate_step_bound(const PlanRequest& req, const ModelFacts& facts, const Candidate& c,
                            Granularity granularity, StepCache& cache, StepBoundCache* bounds) {
  if (parameter_memory_rejects(req, facts, c)) return 0;
  const StepSetup setup = plan_step_setup(req, least_recompute(c), c.global_batch, granularity, cache);
  try {
    const std::int64_t per_replica = static_cast<std::int64_t>(c.strategy.dp) * c.strategy.micro;
    if (bounds == nullptr || !bounds->applies() || c.strategy.split != BatchSplit::Even ||
        c.global_batch % per_replica != 0)
      return step_time_lower_bound(setup);
    std::string key = bound_shape_key(c);
    if (accumulates_in_place(req)) key += "|accumulate " + std::to_string(c.strategy.micro);
    const std::optional<StepBound> b = bounds->get(key, [&] { return step_bound_per_micro(setup); });
    return b ? b->at(c.strategy.micro) : 0;
  } catch (const InputError&) {
    return 0;
  }
}

namespace {

PlanRow evaluate_one(const PlanRequest& req, const ModelFacts& facts, const Candidate& c, Granularity granularity,
                     StepCache& cache, std::string* cost_source, simulator::CollectivePlanner* collectives) {
  PlanRow row;
  row.strategy = c.strategy;
  row.global_batch = c.global_batch;
  row.devices = c.strategy.devices();

  const Bytes bound = parameter_memory_lower_bound(req, facts, c.strategy);
  const Bytes capacity = req.cluster->largest_memory(row.devices);
  if (bound > capacity) {
    row.verdict = Verdict::MemoryBound;
    row.peak_memory = bound;
    row.capacity = capacity;
    row.reason = "parameters, gradients and optimizer state alone need at least " + gib(bound) +
                 " per device, device has " + gib(capacity);
    return row;
  }

  int runs = 0;
  auto simulate_at = [&](int micro) {
    StepSetup setup = plan_step_setup(req, c.strategy, c.global_batch, granularity, cache);
    if (micro != c.strategy.micro) {
      // Same micro-batch size, fewer of them: the global batch shrinks with the count.
      setup.global_batch = c.global_batch / c.strategy.micro * micro;
      setup.strategy.micro = micro;
    }
    const StrategyResult r =
        simulate_strategy(setup, simulator::EngineOptions{.collectives = req.collectives, .planner = collectives});
    runs += r.simulated ? 1 : 0;
    if (cost_source != nullptr && cost_source->empty()) *cost_source = r.cost_source;
    return sample_of(r);
  };

  const bool even = c.global_batch % (static_cast<std::int64_t>(c.strategy.dp) * c.strategy.micro) == 0 &&
                    c.strategy.split == BatchSplit::Even;
  // A step of max(compute, load) is not affine in the micro-batch count: no extrapolation then.
  // Nor is a synchronous pipeline's with in-place gradient accumulation, whose (K - 1) / K of a
  // pass rides on every micro-batch's backward (docs/fidelity.md, "Gradient accumulation").
  const bool in_place_pipeline = c.strategy.pipelined() && !c.strategy.asynchronous() && accumulates_in_place(req);
  const bool affine = even && !req.data_loading.enabled && !in_place_pipeline;
  const std::array<int, 2> k = req.extrapolate && affine ? extrapolation_points(c.strategy) : std::array<int, 2>{0, 0};
  try {
    if (k[0] == 0) {
      fill_from_sample(row, simulate_at(c.strategy.micro), req, facts);
      row.simulations = runs;
      return row;
    }
    const StepSample first = simulate_at(k[0]);
    row.sampled_micro = k;
    // A stage whose warm-up is not yet full at K1 holds more at K: its peak is only a lower bound.
    const InFlight flight = in_flight_of(c.strategy);
    const bool peak_still_grows = flight.stages > 0 && flight.at(0, k[0]) < flight.at(0, c.strategy.micro);
    if (!first.simulated || (!first.feasible && !peak_still_grows)) {
      // More micro-batches of the same size never need less memory: infeasible at K as well.
      fill_from_sample(row, first, req, facts);
      if (row.verdict == Verdict::PeakMemory) {
        row.reason += " already with micro=" + std::to_string(k[0]);
        row.step_time = row.compute = row.exposed_comm = row.dp_comm = row.pipeline_comm = row.tp_comm = 0;
        row.throughput = row.bubble_fraction = row.epochs = 0;
        row.steps_per_epoch = 0;
        row.time_to_train = 0;
      }
      row.simulations = runs;
      return row;
    }
    // Infeasible at K1 with the peak still growing: K2 gives the peak at K, and the step, as for
    // a candidate that fits (--exact reports both too).
    fill_from_sample(row, extrapolate(first, k[0], simulate_at(k[1]), k[1], c.strategy.micro, flight), req, facts);
    row.simulations = runs;
  } catch (const InputError& e) {
    row = PlanRow{};
    row.strategy = c.strategy;
    row.global_batch = c.global_batch;
    row.devices = c.strategy.devices();
    row.verdict = Verdict::Invalid;
    row.reason = e.what();
  }
  return row;
}

/// Full recomputation of the fewest layers of each chunk that fit. Peak memory falls and the step
/// grows with the layers rerun, so the fewest that fit is the fastest: the most layers (the
/// candidate's own count) first - if they do not fit, no count does - then one, then the count
/// between. Each layer rerun frees about one layer's activations, so the peak is close to linear
/// in the count: the next probe is where the line through the nearest miss and fit crosses the
/// capacity (then the count just below it, which ends the search when the line is exact); after
/// kSecantSteps such probes, bisection, so a peak far from linear still costs log2(layers).
PlanRow evaluate_fewest_layers(const PlanRequest& req, const ModelFacts& facts, const Candidate& c,
                               Granularity granularity, StepCache& cache, std::string* cost_source,
                               simulator::CollectivePlanner* collectives) {
  constexpr int kSecantSteps = 3;
  int simulations = 0;
  auto at = [&](int layers) {
    Candidate k = c;
    k.fewest_recompute_layers = false;
    k.strategy.recompute_layers = layers;
    PlanRow r = evaluate_one(req, facts, k, granularity, cache, cost_source, collectives);
    simulations += r.simulations;
    return r;
  };
  const int most = c.strategy.recompute_layers;
  PlanRow fits = at(most);
  if (fits.feasible() && most > 1) {
    PlanRow misses = at(1);
    int lo = 1, hi = most;  // 1 .. lo do not fit, hi does
    if (misses.feasible()) {
      fits = std::move(misses);
      hi = 1;
    }
    for (int step = 0; hi - lo > 1; ++step) {
      int next = lo + (hi - lo) / 2;
      const double over = misses.memory_ratio(), under = fits.memory_ratio();
      if (step < kSecantSteps && misses.simulated() && over > 1.0 && over > under) {
        const double cross = static_cast<double>(lo) + (over - 1.0) / (over - under) * static_cast<double>(hi - lo);
        next = std::clamp(static_cast<int>(std::ceil(cross)), lo + 1, hi - 1);
      }
      PlanRow r = at(next);
      if (r.feasible()) {
        fits = std::move(r);
        hi = next;
      } else {
        misses = std::move(r);
        lo = next;
      }
    }
    if (hi > 1)
      fits.reason = "recompute_layers=" + std::to_string(lo) + " " +
                    (misses.verdict == Verdict::Invalid ? "is refused: " : "") + misses.reason;
  }
  fits.simulations = simulations;
  return fits;
}

}  // namespace

PlanRow evaluate_candidate(const PlanRequest& req, const ModelFacts& facts, const Candidate& c, Granularity granularity,
                           StepCache& cache, std::string* cost_source, simulator::CollectivePlanner* collectives) {
  if (c.fewest_recompute_layers)
    return evaluate_fewest_layers(req, facts, c, granularity, cache, cost_source, collectives);
  return evaluate_one(req, facts, c, granularity, cache, cost_source, collectives);
}

}  // namespace parasim::strategies
