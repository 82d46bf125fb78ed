#include <gtest/gtest.h>

#include "parasim/simulator/engine.hpp"
#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

TEST(EngineMemory, ActivationsLiveFromForwardToBackward) {
  auto cluster = testing::star_cluster(1, 0, 10);
  TaskGraphBuilder b(1, 2);
  b.set_static_memory(0, {.params = 100, .grads = 100, .optimizer = 200, .other = 0});
  const TaskId f1 = b.add_compute({.device = 0, .duration = 10, .name = "f1", .phase = Phase::Forward});
  const TaskId f2 = b.add_compute({.device = 0, .duration = 10, .name = "f2", .phase = Phase::Forward});
  const TaskId b2 = b.add_compute({.device = 0, .duration = 10, .name = "b2", .phase = Phase::BackwardData});
  const TaskId b1 = b.add_compute({.device = 0, .duration = 10, .name = "b1", .phase = Phase::BackwardData});
  // A workspace on the other stream, alive 0..15.
  const TaskId ws = b.add_compute({.device = 0, .stream = 1, .duration = 15, .name = "ws"});
  b.add_dependency(f2, f1);
  b.add_dependency(b2, f2);
  b.add_dependency(b1, b2);
  b.set_memory(f1, 1'000, 0);
  b.set_memory(f2, 500, 0);
  b.set_memory(b2, 0, 500);
  b.set_memory(b1, 0, 1'000);
  b.set_memory(ws, 300, 300, MemoryCategory::Other);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  const DeviceStats& d = r.devices[0];
  // At t = 10: static 400 + activations 1'500 (f1, f2) + workspace 300.
  EXPECT_EQ(d.peak_memory, 2'200);
  EXPECT_EQ(d.peak_time, 10);
  EXPECT_EQ(d.peak_breakdown,
            (MemoryBreakdown{.params = 100, .grads = 100, .optimizer = 200, .activations = 1'500, .other = 300}));
  EXPECT_EQ(d.capacity, 32 * GiB);
  EXPECT_EQ(r.step_time, 40);
}

TEST(EngineMemory, FreesAtAnInstantComeBeforeAllocations) {
  auto cluster = testing::star_cluster(1, 0, 10);
  TaskGraphBuilder b(1);
  const TaskId a = b.add_compute({.device = 0, .duration = 10, .name = "a"});
  const TaskId c = b.add_compute({.device = 0, .duration = 10, .name = "c"});
  b.add_dependency(c, a);
  b.set_memory(a, 700, 700);
  b.set_memory(c, 700, 700);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  EXPECT_EQ(r.devices[0].peak_memory, 700);
  EXPECT_EQ(r.devices[0].peak_time, 0);
}

TEST(EngineMemory, StaticOnlyPeakIsTheStaticTotal) {
  auto cluster = testing::star_cluster(2, 0, 10);
  TaskGraphBuilder b(2);
  b.set_static_memory(1, {.params = 5, .grads = 6, .optimizer = 7, .other = 8});
  b.add_compute({.device = 0, .duration = 10});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  EXPECT_EQ(r.devices[1].peak_memory, 26);
  EXPECT_EQ(r.devices[1].peak_breakdown.other, 8);
  EXPECT_EQ(r.devices[0].peak_memory, 0);
}

}  // namespace
}  // namespace parasim::simulator
