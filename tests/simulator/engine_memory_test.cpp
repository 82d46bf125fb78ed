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

// The peak's breakdown is the mix at the peak's instant, not at the end: after it, other bytes
// grow while activations shrink, to a lower total.
TEST(EngineMemory, TheBreakdownAtThePeakIsTheMixAtThatInstant) {
  auto cluster = testing::star_cluster(1, 0, 10);
  TaskGraphBuilder b(1, 2);
  b.set_static_memory(0, {.params = 10, .grads = 0, .optimizer = 0, .other = 50});
  const TaskId workspace = b.add_compute({.device = 0, .stream = 1, .duration = 40, .name = "workspace"});
  const TaskId act = b.add_compute({.device = 0, .duration = 10, .name = "act"});
  const TaskId later = b.add_compute({.device = 0, .duration = 20, .name = "later"});
  b.add_dependency(later, act);
  b.set_memory(workspace, 300, 300, MemoryCategory::Other);
  b.set_memory(act, 400, 400);
  b.set_memory(later, 350, 350, MemoryCategory::Other);
  TaskGraph g = std::move(b).build();
  const DeviceStats d = Engine(cluster).run(g).devices[0];
  // t = 0: 60 static + 300 other + 400 activations = 760; t = 10: 60 + 300 + 350 = 710.
  EXPECT_EQ(d.peak_memory, 760);
  EXPECT_EQ(d.peak_time, 0);
  EXPECT_EQ(d.peak_breakdown,
            (MemoryBreakdown{.params = 10, .grads = 0, .optimizer = 0, .activations = 400, .other = 350}));
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
