// Planner throughput: Turing-NLG 530B (105 layers, hidden 20480, 128 heads) on up to 5,128 A100
// GPUs (dgx-a100, 641 nodes) with global batch at most 2,520 - Calculon's search (Isaev et al.
// SC'23): every tp (1, 2, 4, 8) x pp dividing 105 with dp = floor(5128 / (tp x pp)), the largest
// global batch <= 2520 that dp divides, every micro-batch count dividing the per-replica batch,
// 1F1B or interleaved with every V dividing the layers per stage, recompute none/selective/full
// and ZeRO 0/1 (1,002 configurations; 4,392 with every schedule parasim knows: none, GPipe, 1F1B,
// interleaved, PipeDream, SpecTrain). Each configuration is rejected by the parameter-memory bound,
// skipped by memory dominance, or lowered and simulated by the event engine (stage granularity,
// one replica / TP rank, analytic collectives; large micro-batch counts extrapolated from two runs).
// A fresh StepCache per iteration: the time includes building the model variants and their costs.
// With cold_routes the cluster is rebuilt before each iteration (outside the timing), so the
// timing also includes computing its route trees (thousands of Dijkstra runs over 10,898
// endpoints); otherwise they are warm from the previous iteration.
//
// Counters: configs (enumerated: every candidate of the space), memory_bound (rejected by the
// parameter-memory bound, not lowered), dominated (skipped: a family member needing no more
// memory did not fit), simulated (candidates judged by the event engine), sim_runs (event-engine
// runs: an extrapolated candidate takes two), feasible, configs_per_s (enumerated configurations
// per wall second, all worker threads together). Wall time is the Time column (real time).
// Each worker keeps one CollectivePlanner across its candidates (EngineOptions::planner).
//
//   parasim_planner_bench --benchmark_counters_tabular=true
//   parasim_planner_bench --benchmark_filter='cold_routes:0' --benchmark_counters_tabular=true
#include <memory>

#include <benchmark/benchmark.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/planner.hpp"

namespace {

using namespace parasim;
using namespace parasim::strategies;

/// Calculon's space: pp divides the 105 layers, schedules 1F1B and interleaved (every V dividing
/// the layers per stage), every micro-batch count dividing the per-replica batch.
SearchSpace calculon_space() {
  SearchSpace s{.gpus = 5128, .allow_fewer = true, .max_batch = 2520};
  s.even_stages = true;
  s.schedules = {Schedule::OneFOneB, Schedule::Interleaved};
  s.max_micro_per_stage = 1 << 20;
  return s;
}

/// The same with every schedule parasim knows (adds none, GPipe, PipeDream, SpecTrain).
SearchSpace every_schedule_space() {
  SearchSpace s = calculon_space();
  s.schedules = SearchSpace{}.schedules;
  return s;
}

/// state.range(0): threads; state.range(1): 0 = Calculon's space, 1 = every schedule;
/// state.range(2): 1 = a fresh cluster per iteration (its route trees built inside the timing).
void BM_PlanTuring530B(benchmark::State& state) {
  const models::Model model =
      models::build_zoo_model("turing_530b", models::ModelOptions{.batch = 1, .dtype = models::DType::BF16});
  auto cluster = std::make_unique<hardware::Cluster>(hardware::make_cluster_preset("dgx-a100", 641));
  const profiler::RooflineCostModel roofline;
  PlanRequest req{.model = &model,
                  .cluster = cluster.get(),
                  .costs = &roofline,
                  .optimizer = profiler::Optimizer::Adam,
                  .dtype = models::DType::BF16,
                  .efficiency = default_efficiency("turing_530b"),
                  .dataset_samples = dataset("gpt3-300b-tokens").samples,
                  .space = state.range(1) == 0 ? calculon_space() : every_schedule_space(),
                  .granularity = Granularity::Stage,
                  .threads = static_cast<int>(state.range(0))};
  const bool cold = state.range(2) == 1;
  if (!cold) run_planner(req);  // warm the cluster's route trees
  PlanStats stats;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      cluster = std::make_unique<hardware::Cluster>(hardware::make_cluster_preset("dgx-a100", 641));
      req.cluster = cluster.get();
      state.ResumeTiming();
    }
    StepCache cache;
    req.cache = &cache;
    const PlanResult plan = run_planner(req);
    stats = plan.stats;
    benchmark::DoNotOptimize(plan.rows.data());
  }
  state.counters["configs"] = static_cast<double>(stats.candidates);
  state.counters["memory_bound"] = static_cast<double>(stats.memory_bound);
  state.counters["simulated"] = static_cast<double>(stats.simulated);
  state.counters["sim_runs"] = static_cast<double>(stats.simulations);
  state.counters["feasible"] = static_cast<double>(stats.feasible);
  state.counters["dominated"] = static_cast<double>(stats.dominated);
  state.counters["configs_per_s"] =
      benchmark::Counter(static_cast<double>(stats.candidates), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_PlanTuring530B)
    ->ArgNames({"threads", "all_schedules", "cold_routes"})
    ->Args({1, 0, 0})
    ->Args({2, 0, 0})
    ->Args({2, 0, 1})
    ->Args({1, 1, 0})
    ->Args({2, 1, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

BENCHMARK_MAIN();
