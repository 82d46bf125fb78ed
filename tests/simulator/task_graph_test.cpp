#include "parasim/simulator/task_graph.hpp"

#include <gtest/gtest.h>

#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

using testing::input_error;

TEST(TaskGraph, BuilderCompactsEdgesIntoSortedDedupedCsr) {
  TaskGraphBuilder b(2);
  const TaskId a = b.add_compute({.device = 0, .duration = 10, .name = "a"});
  const TaskId c = b.add_compute({.device = 1, .duration = 10, .name = "c"});
  const TaskId x = b.add_compute({.device = 0, .duration = 10, .name = "a"});  // same name: interned once
  b.add_dependency(x, c);
  b.add_dependency(x, a);
  b.add_dependency(x, c);  // duplicate
  b.add_dependency(c, a);
  TaskGraph g = std::move(b).build();
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.num_dependencies(), 3u);
  EXPECT_EQ((std::vector<TaskId>(g.deps(x).begin(), g.deps(x).end())), (std::vector<TaskId>{a, c}));
  EXPECT_EQ((std::vector<TaskId>(g.successors(a).begin(), g.successors(a).end())), (std::vector<TaskId>{c, x}));
  EXPECT_EQ(g.name(x), "a");
  EXPECT_EQ(g.strings().size(), 3u);  // "", "a", "c"
}

// build() sorts only the lists that are out of order and moves the later lists down over the
// duplicates it dropped; lists already in order stay where they are.
TEST(TaskGraph, ListsAfterADroppedDuplicateMoveDown) {
  TaskGraphBuilder b(1);
  const TaskId a = b.add_compute({.duration = 1, .name = "a"});
  const TaskId x = b.add_compute({.duration = 1, .name = "b"});
  const TaskId c = b.add_compute({.duration = 1, .name = "c"});
  const TaskId d = b.add_compute({.duration = 1, .name = "d"});
  b.add_dependency(c, x);
  b.add_dependency(c, a);
  b.add_dependency(c, x);  // duplicate, and c's list is out of order
  b.add_dependency(d, a);
  b.add_dependency(d, c);  // in order: moved down by one
  TaskGraph g = std::move(b).build();
  EXPECT_EQ(g.num_dependencies(), 4u);
  EXPECT_TRUE(g.deps(x).empty());
  EXPECT_EQ((std::vector<TaskId>(g.deps(c).begin(), g.deps(c).end())), (std::vector<TaskId>{a, x}));
  EXPECT_EQ((std::vector<TaskId>(g.deps(d).begin(), g.deps(d).end())), (std::vector<TaskId>{a, c}));
  EXPECT_EQ((std::vector<TaskId>(g.successors(a).begin(), g.successors(a).end())), (std::vector<TaskId>{c, d}));
  EXPECT_EQ((std::vector<TaskId>(g.successors(c).begin(), g.successors(c).end())), (std::vector<TaskId>{d}));
  // The engine's starting counts: duplicates dropped, tasks without dependencies at 0.
  std::vector<std::int32_t> counts(g.size(), -1);
  g.dependency_counts(counts.data());
  EXPECT_EQ(counts, (std::vector<std::int32_t>{0, 0, 2, 2}));
}

TEST(TaskGraph, FieldsRoundTripThroughThePackedColumns) {
  TaskGraphBuilder b(4, 3);
  const GroupId grp = b.add_group(std::vector<DeviceId>{3, 1, 2});
  const TaskId c = b.add_compute({.device = 3,
                                  .stream = 2,
                                  .duration = 77,
                                  .name = "conv",
                                  .model_op = 12,
                                  .microbatch = 5,
                                  .phase = Phase::BackwardWeight});
  const TaskId t =
      b.add_transfer({.src = 1, .dst = 2, .bytes = 999, .stream = 1, .name = "act", .phase = Phase::Forward});
  const TaskId k = b.add_collective({.op = CollectiveOp::AllToAll, .group = grp, .bytes = 4096,
                                     .algorithm = CollectiveAlgorithm::Hierarchical, .stream = 2});
  const TaskId m = b.add_marker("end", 2);
  b.set_memory(c, 100, 40, MemoryCategory::Other);
  b.set_static_memory(3, {.params = 1, .grads = 2, .optimizer = 3, .other = 4});
  TaskGraph g = std::move(b).build();
  EXPECT_EQ(g.kind(c), TaskKind::Compute);
  EXPECT_EQ(g.device(c), 3);
  EXPECT_EQ(g.stream(c), 2);
  EXPECT_EQ(g.duration(c), 77);
  EXPECT_EQ(g.model_op(c), 12);
  EXPECT_EQ(g.microbatch(c), 5);
  EXPECT_EQ(g.phase(c), Phase::BackwardWeight);
  EXPECT_EQ(g.alloc_bytes(c), 100);
  EXPECT_EQ(g.free_bytes(c), 40);
  EXPECT_EQ(g.memory_category(c), MemoryCategory::Other);
  EXPECT_EQ(g.kind(t), TaskKind::Transfer);
  EXPECT_EQ(g.src(t), 1);
  EXPECT_EQ(g.dst(t), 2);
  EXPECT_EQ(g.bytes(t), 999);
  EXPECT_EQ(g.memory_category(t), MemoryCategory::Activations);
  EXPECT_EQ(g.kind(k), TaskKind::Collective);
  EXPECT_EQ(g.collective_op(k), CollectiveOp::AllToAll);
  EXPECT_EQ(g.algorithm(k), CollectiveAlgorithm::Hierarchical);
  EXPECT_EQ(g.stream(k), 2);
  EXPECT_EQ((std::vector<DeviceId>(g.group_devices(g.group(k)).begin(), g.group_devices(g.group(k)).end())),
            (std::vector<DeviceId>{3, 1, 2}));
  EXPECT_EQ(g.kind(m), TaskKind::Marker);
  EXPECT_EQ(g.device(m), 2);
  EXPECT_EQ(g.static_memory(3).total(), 10);
}

TEST(TaskGraph, MemoryPerTaskStaysSmall) {
  static_assert(TaskGraph::bytes_per_task() == 56);
  static_assert(TaskGraph::bytes_per_dependency() == 8);
  TaskGraphBuilder b(8);
  const std::size_t n = 100'000;
  b.reserve(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    const TaskId t = b.add_compute({.device = static_cast<DeviceId>(i % 8), .duration = 5, .name = "k"});
    if (i > 0) b.add_dependency(t, t - 1);
  }
  TaskGraph g = std::move(b).build();
  const double per_task = static_cast<double>(g.memory_bytes()) / static_cast<double>(n);
  EXPECT_LT(per_task, 64.0 + 1.0);  // 56 + 8 per edge, plus names and vector slack
  EXPECT_GE(per_task, 64.0 - 1.0);
}

TEST(TaskGraph, BadTasksNameThemselves) {
  TaskGraphBuilder b(2, 2);
  EXPECT_EQ(input_error([&] { b.add_compute({.device = 2, .duration = 1, .name = "x"}); }),
            "task 0 \"x\": device 2 is out of range [0, 1]");
  EXPECT_EQ(input_error([&] { b.add_compute({.device = 0, .stream = 5, .duration = 1, .name = "x"}); }),
            "task 0 \"x\": stream 5 is out of range [0, 1]");
  EXPECT_EQ(input_error([&] { b.add_compute({.device = 0, .duration = -3, .name = "x"}); }),
            "task 0 \"x\": duration must be >= 0 ns, found -3");
  EXPECT_EQ(input_error([&] { b.add_transfer({.src = 0, .dst = 1, .bytes = -1}); }),
            "task 0: bytes must be >= 0, found -1");
  EXPECT_EQ(input_error([&] { b.add_group(std::vector<DeviceId>{0, 7}); }), "group 0: device 7 is out of range [0, 1]");
  EXPECT_EQ(input_error([&] { b.add_group(std::vector<DeviceId>{1, 1}); }), "group 0: device 1 is listed twice");
  EXPECT_EQ(input_error([&] { b.add_collective({.group = 0, .bytes = 1, .name = "ar"}); }),
            "task 0 \"ar\": group 0 does not exist (0 groups defined so far)");
  EXPECT_EQ(input_error([] { TaskGraphBuilder bad(0); }),
            "taskgraph: the number of devices must be in [1, 1048576], found 0");
}

TEST(TaskGraph, CyclesAndMissingTasksAreRejectedAtBuild) {
  {
    TaskGraphBuilder b(1);
    const TaskId a = b.add_compute({.duration = 1, .name = "a"});
    const TaskId x = b.add_compute({.duration = 1, .name = "b"});
    const TaskId c = b.add_compute({.duration = 1, .name = "c"});
    const TaskId free_task = b.add_compute({.duration = 1, .name = "free"});
    b.add_dependency(x, a);
    b.add_dependency(c, x);
    b.add_dependency(a, c);
    b.add_dependency(free_task, a);  // behind the cycle, not on it
    EXPECT_EQ(input_error([&] { std::move(b).build(); }),
              "dependency cycle: task 0 \"a\" -> task 1 \"b\" -> task 2 \"c\" -> task 0 \"a\"");
  }
  {
    TaskGraphBuilder b(1);
    const TaskId a = b.add_compute({.duration = 1, .name = "a"});
    b.add_dependency(a, a);
    EXPECT_EQ(input_error([&] { std::move(b).build(); }), "dependency cycle: task 0 \"a\" -> task 0 \"a\"");
  }
  {
    TaskGraphBuilder b(1);
    const TaskId a = b.add_compute({.duration = 1, .name = "a"});
    b.add_dependency(a, 9);
    EXPECT_EQ(input_error([&] { std::move(b).build(); }),
              "task 0 \"a\": depends on task 9, which does not exist (the graph has 1 tasks)");
  }
}

}  // namespace
}  // namespace parasim::simulator
