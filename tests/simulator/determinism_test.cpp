#include <random>

#include <gtest/gtest.h>

#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"
#include "parasim/simulator/task_graph_json.hpp"

namespace parasim::simulator {
namespace {

// A random DAG with compute, transfers and collectives, every dependency pointing backwards.
TaskGraph random_graph(std::uint32_t seed, int devices, int tasks) {
  std::mt19937 rng(seed);
  TaskGraphBuilder b(devices, 3);
  std::vector<DeviceId> all(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) all[static_cast<std::size_t>(d)] = d;
  const GroupId everyone = b.add_group(all);
  const GroupId half = b.add_group(std::vector<DeviceId>(all.begin(), all.begin() + devices / 2));
  for (int i = 0; i < tasks; ++i) {
    const auto dev = static_cast<DeviceId>(rng() % static_cast<unsigned>(devices));
    const unsigned kind = rng() % 20;
    TaskId t;
    if (kind < 14) {
      t = b.add_compute({.device = dev, .stream = static_cast<int>(rng() % 2 == 0 ? 0 : 2),
                         .duration = static_cast<TimeNs>(1'000 + rng() % 50'000), .name = "k"});
      b.set_memory(t, static_cast<Bytes>(rng() % 1'000'000), static_cast<Bytes>(rng() % 500'000));
    } else if (kind < 19) {
      t = b.add_transfer({.src = dev, .dst = static_cast<DeviceId>(rng() % static_cast<unsigned>(devices)),
                          .bytes = static_cast<Bytes>(rng() % 8'000'000), .name = "x"});
    } else {
      t = b.add_collective({.op = static_cast<CollectiveOp>(rng() % 5), .group = rng() % 2 ? everyone : half,
                            .bytes = static_cast<Bytes>(rng() % 32'000'000), .name = "c"});
    }
    for (int k = 0; k < 2 && t > 0; ++k) b.add_dependency(t, static_cast<TaskId>(rng() % static_cast<unsigned>(t)));
  }
  return std::move(b).build();
}

TEST(Determinism, SameInputSameResultJson) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100", 2);
  for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
    for (const bool hold : {false, true}) {
      const EngineOptions options{.collectives = mode, .collectives_hold_sms = hold};
      const TaskGraph g1 = random_graph(7, 16, 3'000);
      const TaskGraph g2 = random_graph(7, 16, 3'000);
      const std::string a = dump_json(step_result_to_json(Engine(cluster, options).run(g1), g1, cluster));
      const std::string b = dump_json(step_result_to_json(Engine(cluster, options).run(g2), g2, cluster));
      EXPECT_EQ(a, b);
      // Through the JSON file format too.
      const TaskGraph g3 = taskgraph_from_json(taskgraph_to_json(g1), "rt.json");
      EXPECT_EQ(dump_json(step_result_to_json(Engine(cluster, options).run(g3), g3, cluster)), a);
    }
}

TEST(Determinism, BreakdownsAddUpAndCriticalPathIsAChain) {
  auto cluster = hardware::make_cluster_preset("dgx-h100", 2);
  const TaskGraph g = random_graph(11, 16, 2'000);
  for (const bool hold : {false, true}) {
    const StepResult r = Engine(cluster, {.record_timeline = true, .collectives_hold_sms = hold}).run(g);
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t)
      if (g.kind(t) == TaskKind::Compute) {  // never faster than alone; slower only beside collectives
        const TaskTiming& tt = r.timeline[static_cast<std::size_t>(t)];
        if (hold) {
          EXPECT_GE(tt.end - tt.start, g.duration(t)) << t;
        } else {
          EXPECT_EQ(tt.end - tt.start, g.duration(t)) << t;
        }
      }
    for (const auto& d : r.devices) {
      EXPECT_EQ(d.compute_busy + d.exposed_comm + d.idle, r.step_time);
      EXPECT_LE(d.comm_busy, r.step_time);
    }
    ASSERT_FALSE(r.critical_path.empty());
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(r.critical_path.back())].end, r.step_time);
    EXPECT_TRUE(g.deps(r.critical_path.front()).empty());
    for (std::size_t i = 1; i < r.critical_path.size(); ++i) {
      const TaskTiming& prev = r.timeline[static_cast<std::size_t>(r.critical_path[i - 1])];
      const TaskTiming& next = r.timeline[static_cast<std::size_t>(r.critical_path[i])];
      EXPECT_LE(prev.end, next.start);
    }
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t)
      for (TaskId d : g.deps(t))
        EXPECT_LE(r.timeline[static_cast<std::size_t>(d)].end, r.timeline[static_cast<std::size_t>(t)].start);
  }
}

}  // namespace
}  // namespace parasim::simulator
