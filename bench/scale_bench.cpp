// One training step at frontier scale: GPT-3 175B, tp=8 x mp=16 (1F1B, 128 micro-batches,
// selective recompute, bf16, global batch 256 per replica) with dp filling a dgx-h100 cluster of
// 1,024, 16,384 and 131,072 GPUs - what `parasim simulate --model gpt3_175b --granularity stage`
// does, timed from lowering to the step result (default expanded collectives, one simulated
// replica and TP rank, collectives by symmetry). The cluster is rebuilt before each iteration
// outside the timing, so its route trees are built inside it (cold, as on the command line).
//
// Counters: step_ms (the simulated step), tasks, events, messages (collective messages simulated),
// inferred (messages inferred from a simulated one of their class). BM_ClusterBuild times the
// cluster's construction alone, which the hybrid's timing leaves out.
//
//   parasim_scale_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <memory>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace {

using namespace parasim;
using namespace parasim::strategies;

/// state.range(0): GPUs (a multiple of 128).
void BM_Gpt3Hybrid(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int dp = gpus / 128;
  const models::Model model =
      models::build_zoo_model("gpt3_175b", models::ModelOptions{.batch = 1, .dtype = models::DType::BF16});
  profiler::RooflineCostModel roofline;
  const Strategy strategy =
      parse_strategy("dp=" + std::to_string(dp) + ",mp=16,tp=8,schedule=1f1b,micro=128,recompute=selective");
  std::unique_ptr<hardware::Cluster> cluster;
  StrategyResult r;
  for (auto _ : state) {
    state.PauseTiming();
    cluster = std::make_unique<hardware::Cluster>(hardware::make_cluster_preset("dgx-h100", gpus / 8));
    state.ResumeTiming();
    const StepSetup setup{.model = &model,
                          .cluster = cluster.get(),
                          .strategy = strategy,
                          .global_batch = 256LL * dp,
                          .costs = &roofline,
                          .dtype = models::DType::BF16,
                          .granularity = Granularity::Stage};
    r = simulate_strategy(setup);
    benchmark::DoNotOptimize(r.step_time);
  }
  state.counters["step_ms"] = ns_to_ms(r.step_time);
  state.counters["tasks"] = static_cast<double>(r.lowered.graph.size());
  state.counters["events"] = static_cast<double>(r.result.events);
  state.counters["messages"] = static_cast<double>(r.result.collective_messages);
  state.counters["inferred"] = static_cast<double>(r.result.collective_messages_inferred);
}

/// What `simulate` does before lowering at that size: build the dgx-h100 preset of state.range(0)
/// GPUs (its spec, then the checks and indexes of Cluster's constructor). Counters: links.
void BM_ClusterBuild(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  std::int64_t links = 0;
  for (auto _ : state) {
    const hardware::Cluster cluster = hardware::make_cluster_preset("dgx-h100", gpus / 8);
    links = cluster.num_links();
    benchmark::DoNotOptimize(links);
  }
  state.counters["links"] = static_cast<double>(links);
}

}  // namespace

BENCHMARK(BM_ClusterBuild)
    ->ArgNames({"gpus"})
    ->Arg(1024)
    ->Arg(16384)
    ->Arg(131072)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Gpt3Hybrid)
    ->ArgNames({"gpus"})
    ->Arg(1024)
    ->Arg(16384)
    ->Arg(131072)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
