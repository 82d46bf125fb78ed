// Planner throughput on the problem of turing_plan.hpp (Calculon's search for Turing-NLG 530B on
// 5,128 A100s, and the same with every schedule). Each configuration is rejected by the
// parameter-memory bound, skipped by memory dominance, or lowered and simulated by the event
// engine (stage granularity, one replica / TP rank, analytic collectives; large micro-batch counts
// extrapolated from two runs; bench/planner_accuracy.cpp measures what that costs in accuracy).
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
#include <benchmark/benchmark.h>

#include "turing_plan.hpp"

namespace {

using namespace parasim;
using namespace parasim::strategies;

/// state.range(0): threads; state.range(1): 0 = Calculon's space, 1 = every schedule;
/// state.range(2): 1 = a fresh cluster per iteration (its route trees built inside the timing).
void BM_PlanTuring530B(benchmark::State& state) {
  bench::TuringProblem problem;
  auto& cluster = problem.cluster;
  PlanRequest req = problem.request(state.range(1) == 1, static_cast<int>(state.range(0)));
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
