// Engine throughput on random training-like DAGs: compute tasks on 3 streams of 8 GPUs,
// transfers between them and the occasional allreduce, each task depending on 1-2 of the 64
// tasks before it (so ~dozens are in flight, as in a real step). Reports events/s (heap events:
// task ends, flow latency/data completions), tasks/s and the graph's bytes per task. Rates are per
// CPU second of the benchmark thread, so a busy machine shifts them less than wall time would.
//
//   parasim_engine_bench --benchmark_filter='Engine/' --benchmark_counters_tabular=true
#include <random>

#include <benchmark/benchmark.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"

namespace {

using namespace parasim;
using namespace parasim::simulator;

TaskGraph random_dag(std::int64_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int kDevices = 8;
  TaskGraphBuilder b(kDevices, 3);
  b.reserve(static_cast<std::size_t>(n), static_cast<std::size_t>(n) * 2);
  const GroupId all = b.add_group(std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7});
  const GroupId half = b.add_group(std::vector<DeviceId>{0, 1, 2, 3});
  for (std::int64_t i = 0; i < n; ++i) {
    const auto dev = static_cast<DeviceId>(rng() % kDevices);
    const std::uint64_t kind = rng() % 1000;
    TaskId t;
    if (kind < 900) {
      t = b.add_compute({.device = dev,
                         .stream = static_cast<int>(rng() % 4 == 0 ? 2 : 0),
                         .duration = static_cast<TimeNs>(2'000 + rng() % 100'000),
                         .name = "kernel",
                         .model_op = static_cast<std::int32_t>(i % 500),
                         .phase = Phase::Forward});
      b.set_memory(t, static_cast<Bytes>(rng() % (4 * MiB)), static_cast<Bytes>(rng() % (2 * MiB)));
    } else if (kind < 995) {
      t = b.add_transfer({.src = dev, .dst = static_cast<DeviceId>((dev + 1 + rng() % (kDevices - 1)) % kDevices),
                          .bytes = static_cast<Bytes>(64 * KiB + rng() % (4 * MiB)), .name = "activation"});
    } else {
      t = b.add_collective({.op = CollectiveOp::AllReduce,
                            .group = rng() % 2 ? all : half,
                            .bytes = static_cast<Bytes>(MiB + rng() % (64 * MiB)),
                            .algorithm = CollectiveAlgorithm::Ring,
                            .name = "grads"});
    }
    const int deps = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < deps && i > 0; ++k) {
      const std::int64_t back = 1 + static_cast<std::int64_t>(rng() % 64);
      b.add_dependency(t, static_cast<TaskId>(std::max<std::int64_t>(0, i - back)));
    }
  }
  return std::move(b).build();
}

// The engine's floor: 8 independent chains of compute tasks, one per GPU - every event is a
// task end that starts exactly one successor on the stream it just freed.
TaskGraph compute_chains(std::int64_t n) {
  TaskGraphBuilder b(8, 1);
  b.reserve(static_cast<std::size_t>(n), static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const TaskId t = b.add_compute({.device = static_cast<DeviceId>(i % 8), .duration = 1'000 + (i * 7919) % 50'000});
    if (i >= 8) b.add_dependency(t, t - 8);
  }
  return std::move(b).build();
}

// Many events in flight, as in a large pipeline's step: 128 independent chains, one per stream
// (8 GPUs x 16 streams), so 128 task ends stay queued - the event queue's radix form, where the
// mixed DAG (about 7 queued) stays in the sorted array.
TaskGraph wide_chains(std::int64_t n) {
  constexpr int kStreams = 16, kChains = 8 * kStreams;
  TaskGraphBuilder b(8, kStreams);
  b.reserve(static_cast<std::size_t>(n), static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto chain = static_cast<int>(i % kChains);
    const TaskId t = b.add_compute(
        {.device = static_cast<DeviceId>(chain % 8), .stream = chain / 8, .duration = 1'000 + (i * 7919) % 50'000});
    if (i >= kChains) b.add_dependency(t, t - kChains);
  }
  return std::move(b).build();
}

void run_engine_on(benchmark::State& state, const TaskGraph& graph, const char* preset, CollectiveMode mode,
                   bool hold_sms = false) {
  const auto n = static_cast<std::int64_t>(graph.size());
  const hardware::Cluster cluster = hardware::make_cluster_preset(preset);
  const Engine engine(cluster, {.collectives = mode, .collectives_hold_sms = hold_sms});
  std::int64_t events = 0;
  TimeNs step = 0;
  for (auto _ : state) {
    StepResult r = engine.run(graph);
    events += r.events;
    step = r.step_time;
    benchmark::DoNotOptimize(r.step_time);
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["tasks/s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["events/task"] = static_cast<double>(events) / static_cast<double>(n * state.iterations());
  state.counters["graph_B/task"] = static_cast<double>(graph.memory_bytes()) / static_cast<double>(n);
  state.counters["state_B/task"] = static_cast<double>(Engine::state_bytes_per_task());
  state.counters["sim_ms"] = ns_to_ms(step);
}

void run_engine(benchmark::State& state, const char* preset, CollectiveMode mode, bool hold_sms = false) {
  run_engine_on(state, random_dag(state.range(0), 42), preset, mode, hold_sms);
}

void BM_EngineExpanded(benchmark::State& state) { run_engine(state, "dgx1-v100", CollectiveMode::Expanded); }
void BM_EngineAnalytic(benchmark::State& state) { run_engine(state, "dgx1-v100", CollectiveMode::Analytic); }
void BM_EngineNvswitch(benchmark::State& state) { run_engine(state, "dgx-h100", CollectiveMode::Expanded); }
// What simulate, plan and validate run: collectives holding SMs from the compute they overlap.
void BM_EngineHoldSms(benchmark::State& state) { run_engine(state, "dgx1-v100", CollectiveMode::Expanded, true); }
void BM_EngineChains(benchmark::State& state) {
  run_engine_on(state, compute_chains(state.range(0)), "dgx1-v100", CollectiveMode::Expanded);
}

void BM_EngineWideChains(benchmark::State& state) {
  run_engine_on(state, wide_chains(state.range(0)), "dgx1-v100", CollectiveMode::Expanded);
}

void BM_BuildGraph(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(random_dag(state.range(0), 42).size());
  state.counters["tasks/s"] = benchmark::Counter(
      static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_EngineExpanded)->Name("Engine/expanded/dgx1-v100")->RangeMultiplier(10)->Range(10'000, 10'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineAnalytic)->Name("Engine/analytic/dgx1-v100")->RangeMultiplier(10)->Range(10'000, 1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineNvswitch)->Name("Engine/expanded/dgx-h100")->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineHoldSms)->Name("Engine/expanded-sm-holds/dgx1-v100")->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineChains)->Name("Engine/compute-chains/dgx1-v100")->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineWideChains)
    ->Name("Engine/compute-chains-128/dgx1-v100")
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildGraph)->Name("TaskGraphBuilder/build")->Arg(1'000'000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
