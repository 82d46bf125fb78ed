// The CPU backend runs graphs for real and respects every dependency and stream.
#include <gtest/gtest.h>

#include <algorithm>

#include "graphs.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/executor.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::executor {
namespace {

using namespace parasim::simulator;

// Every task starts after all of its dependencies ended; tasks of one stream never overlap.
void expect_schedule_respected(const TaskGraph& g, const std::vector<TaskTiming>& tl) {
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
    ASSERT_GE(tl[static_cast<std::size_t>(t)].start, 0) << "task " << t << " never ran";
    ASSERT_GE(tl[static_cast<std::size_t>(t)].end, tl[static_cast<std::size_t>(t)].start) << "task " << t;
    for (TaskId d : g.deps(t))
      EXPECT_GE(tl[static_cast<std::size_t>(t)].start, tl[static_cast<std::size_t>(d)].end)
          << "task " << t << " \"" << g.name(t) << "\" started before dependency " << d << " \"" << g.name(d)
          << "\" ended";
  }
  const IssuePlan plan = plan_issue(g);
  for (const auto& order : plan.stream_order) {
    std::vector<TaskTiming> spans;
    for (TaskId t : order) spans.push_back(tl[static_cast<std::size_t>(t)]);
    std::sort(spans.begin(), spans.end(), [](const TaskTiming& a, const TaskTiming& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].end, spans[i].start) << "overlap on a stream";
  }
}

TEST(CpuRuntime, RunsAPipelineWithTransfersAndAnAllReduceInOrder) {
  const TaskGraph g = test::pipeline_with_allreduce(300'000, 256 * KiB);
  auto rt = make_cpu_runtime_without_kernels();
  const ExecutionResult r = run_steps(g, *rt, {.warmup = 1, .repetitions = 1});
  expect_schedule_respected(g, r.timeline);
  // Five compute tasks of 300 us and two of 75 us lie on the critical path.
  // No upper bound: a loaded host may stretch any wall-clock run (ctest's timeout catches hangs).
  EXPECT_GE(r.step_median, 4 * 300'000 + 75'000);
  EXPECT_FALSE(r.notes.empty());  // compute tasks without kernels are flagged as not measured
  std::int64_t compute = 0;
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) compute += g.kind(t) == TaskKind::Compute ? 1 : 0;
  EXPECT_GT(compute, 0);
  EXPECT_EQ(r.stand_in_tasks, compute);  // every one of them is a stand-in
}

TEST(CpuRuntime, RandomGraphsRespectEveryDependency) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    const TaskGraph g = test::random_graph(seed, 3, 2, 40);
    auto rt = make_cpu_runtime_without_kernels();
    const ExecutionResult r = run_steps(g, *rt, {.warmup = 0, .repetitions = 1});
    expect_schedule_respected(g, r.timeline);
  }
}

// Data parallelism by hand over tiny_cnn: forward and backward of every op on both devices,
// the gradients all-reduced on the comm streams, then the updates.
TaskGraph tiny_cnn_data_parallel(const models::Model& m) {
  TaskGraphBuilder b(2);
  const GroupId both = b.add_group(std::vector<DeviceId>{0, 1});
  const auto order = m.topological_order();
  Bytes grads = 0;
  for (auto v : order) grads += m.op(v).params * 4;
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = both, .bytes = grads, .name = "grads"});
  for (DeviceId d = 0; d < 2; ++d) {
    TaskId prev = kNoTask;
    auto chain = [&](TaskId t) {
      if (prev != kNoTask) b.add_dependency(t, prev);
      prev = t;
    };
    for (auto v : order) {
      const auto op = static_cast<std::int32_t>(v);
      if (!profiler::op_has_phase(m.op(v), profiler::Phase::Forward)) continue;
      chain(b.add_compute({.device = d, .duration = 1'000, .name = "fwd", .model_op = op, .phase = Phase::Forward}));
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto op = static_cast<std::int32_t>(*it);
      if (profiler::op_has_phase(m.op(*it), profiler::Phase::BackwardData))
        chain(b.add_compute(
            {.device = d, .duration = 1'000, .name = "bwd_data", .model_op = op, .phase = Phase::BackwardData}));
      if (profiler::op_has_phase(m.op(*it), profiler::Phase::BackwardWeight))
        chain(b.add_compute(
            {.device = d, .duration = 1'000, .name = "bwd_weight", .model_op = op, .phase = Phase::BackwardWeight}));
    }
    b.add_dependency(ar, prev);
    for (auto v : order) {
      if (!profiler::op_has_phase(m.op(v), profiler::Phase::Update)) continue;
      const TaskId u = b.add_compute({.device = d,
                                      .duration = 1'000,
                                      .name = "update",
                                      .model_op = static_cast<std::int32_t>(v),
                                      .phase = Phase::Update});
      b.add_dependency(u, ar);
    }
  }
  return std::move(b).build();
}

TEST(CpuRuntime, RunsRealKernelsOfTinyCnnDataParallel) {
  if (!PARASIM_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: tiny_cnn's kernels would be stand-ins";
  const models::Model m = models::build_zoo_model("tiny_cnn", {.batch = 4});
  const TaskGraph g = tiny_cnn_data_parallel(m);
  auto rt = make_cpu_runtime(m);
  const ExecutionResult r = run_steps(g, *rt, {.warmup = 1, .repetitions = 3});
  EXPECT_EQ(r.step_times.size(), 3u);
  EXPECT_LE(r.step_min, r.step_median);
  EXPECT_LE(r.step_median, r.step_max);
  for (const std::string& note : r.notes) EXPECT_EQ(note.find("no runnable kernel"), std::string::npos) << note;
  EXPECT_EQ(r.stand_in_tasks, 0);
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_GT(r.devices[0].compute_busy, 0);
  EXPECT_GT(r.devices[1].comm_busy, 0);
  auto once = make_cpu_runtime(m);
  const ExecutionResult single = run_steps(g, *once, {.warmup = 0, .repetitions = 1});
  expect_schedule_respected(g, single.timeline);
}

TEST(CpuRuntime, AllowedCoresAreKnown) { EXPECT_FALSE(allowed_cores().empty()); }

}  // namespace
}  // namespace parasim::executor
