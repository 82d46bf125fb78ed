// The scheduling core: FIFO order with the simulator's semantics, dependencies turned into the
// fewest event waits, and programs that the CUDA rules accept (checked by the recording runtime).
#include <gtest/gtest.h>

#include <algorithm>

#include "graphs.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/median.hpp"
#include "parasim/executor/executor.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/executor/recording_runtime.hpp"

namespace parasim::executor {
namespace {

using namespace parasim::simulator;

std::vector<std::string> program_problems(const TaskGraph& g, std::span<const TimeNs> durations = {}) {
  const IssuePlan plan = plan_issue(g, durations);
  RecordingRuntime fake;
  fake.setup(g, plan);
  fake.begin_step();
  issue_step(plan, g, fake);
  return check_program(g, fake.calls());
}

TEST(IssuePlan, EveryCrossStreamDependencyBecomesAWaitAndStreamOrderCoversTheRest) {
  const TaskGraph g = test::pipeline_with_allreduce();
  const IssuePlan plan = plan_issue(g);
  EXPECT_EQ(plan.num_streams(), 4);
  // d0 compute: f0, b0, u0; d0 comm: act, ar; d1 compute: f1, b1, u1; d1 comm: grad, ar.
  EXPECT_EQ(plan.stream_order[0], (std::vector<TaskId>{0, 5, 7}));
  EXPECT_EQ(plan.stream_order[1], (std::vector<TaskId>{1, 6}));
  EXPECT_EQ(plan.stream_order[2], (std::vector<TaskId>{2, 3, 8}));
  EXPECT_EQ(plan.stream_order[3], (std::vector<TaskId>{4, 6}));
  // act, f1, grad, b0: one wait each; ar: one per member (b1 is already known to device 0's
  // comm stream through b0's wait for grad); u0 and u1: both members of ar.
  EXPECT_EQ(plan.waits, 10);
  EXPECT_EQ(plan.dependencies_by_stream_order, 1);  // b1 after f1
  EXPECT_TRUE(program_problems(g).empty());
}

TEST(IssuePlan, WaitsComeBeforeTheirLaunchAndReferToEventsRecordedEarlier) {
  const TaskGraph g = test::pipeline_with_allreduce();
  const IssuePlan plan = plan_issue(g);
  std::vector<bool> recorded(plan.events.size(), false);
  for (const Command& c : plan.commands) {
    if (c.kind == CommandKind::Record) recorded[static_cast<std::size_t>(c.event)] = true;
    if (c.kind == CommandKind::Wait) {
      EXPECT_TRUE(recorded[static_cast<std::size_t>(c.event)]) << "wait for event " << c.event << " before its record";
    }
  }
}

TEST(IssuePlan, ATaskJoinsItsStreamWhenItsDependenciesEndTiesByTaskId) {
  TaskGraphBuilder b(2);
  const TaskId a = b.add_compute({.device = 0, .duration = 1'000, .name = "a (waits for long)"});
  const TaskId lng = b.add_compute({.device = 1, .duration = 1'000'000, .name = "long"});
  const TaskId c = b.add_compute({.device = 0, .duration = 1'000, .name = "c (ready at 0)"});
  const TaskId d = b.add_compute({.device = 0, .duration = 1'000, .name = "d (ready at 0)"});
  b.add_dependency(a, lng);
  const TaskGraph g = std::move(b).build();
  const IssuePlan plan = plan_issue(g);
  EXPECT_EQ(plan.stream_order[0], (std::vector<TaskId>{c, d, a}));
  EXPECT_TRUE(program_problems(g).empty());
}

TEST(IssuePlan, OrderDurationsFromAProjectionDecideTheOrder) {
  TaskGraphBuilder b(2);
  const TaskId x = b.add_transfer({.src = 1, .dst = 0, .bytes = 1 * MiB, .name = "x"});
  const TaskId a = b.add_compute({.device = 0, .duration = 1'000, .name = "a after x"});
  const TaskId p = b.add_compute({.device = 1, .duration = 5'000, .name = "p"});
  const TaskId q = b.add_compute({.device = 0, .duration = 1'000, .name = "q after p"});
  b.add_dependency(a, x);
  b.add_dependency(q, p);
  const TaskGraph g = std::move(b).build();
  // Without a projection transfers take no time: a (ready at 0) precedes q (ready at 5 us).
  EXPECT_EQ(plan_issue(g).stream_order[0], (std::vector<TaskId>{a, q}));
  // With the transfer projected at 10 us, q is ready first.
  const std::vector<TimeNs> projected = {10'000, 1'000, 5'000, 1'000};
  EXPECT_EQ(plan_issue(g, projected).stream_order[0], (std::vector<TaskId>{q, a}));
  EXPECT_TRUE(program_problems(g, projected).empty());
  EXPECT_THROW(plan_issue(g, std::vector<TimeNs>{1, 2}), InputError);
}

TEST(IssuePlan, AChainFedByAnotherStreamWaitsOncePerNewFact) {
  TaskGraphBuilder b(1);
  const TaskId src = b.add_compute({.device = 0, .stream = 1, .duration = 1'000, .name = "src"});
  TaskId prev = kNoTask;
  for (int i = 0; i < 5; ++i) {
    const TaskId t = b.add_compute({.device = 0, .stream = 0, .duration = 1'000, .name = "chain"});
    b.add_dependency(t, src);  // every chain task depends on src: only the first needs a wait
    if (prev != kNoTask) b.add_dependency(t, prev);
    prev = t;
  }
  const TaskGraph g = std::move(b).build();
  const IssuePlan plan = plan_issue(g);
  EXPECT_EQ(plan.waits, 1);
  EXPECT_EQ(plan.events.size(), 1u);
  EXPECT_TRUE(program_problems(g).empty());
}

TEST(IssuePlan, ACollectiveHasTheSameOrderOnEveryMember) {
  TaskGraphBuilder b(3);
  const GroupId g01 = b.add_group(std::vector<DeviceId>{0, 1});
  const GroupId g12 = b.add_group(std::vector<DeviceId>{1, 2});
  const GroupId all = b.add_group(std::vector<DeviceId>{0, 1, 2});
  const TaskId c1 = b.add_collective({.group = all, .bytes = 1 * MiB, .name = "c1"});
  const TaskId c2 = b.add_collective({.group = g01, .bytes = 1 * MiB, .name = "c2"});
  const TaskId c3 = b.add_collective({.group = g12, .bytes = 1 * MiB, .name = "c3"});
  const TaskId w = b.add_compute({.device = 2, .duration = 50'000, .name = "slow"});
  b.add_dependency(c1, w);  // c1 is ready last: c2 and c3 go first where they share streams
  const TaskGraph g = std::move(b).build();
  const IssuePlan plan = plan_issue(g);
  EXPECT_EQ(plan.stream_order[plan.stream_index(0, 1)], (std::vector<TaskId>{c2, c1}));
  EXPECT_EQ(plan.stream_order[plan.stream_index(1, 1)], (std::vector<TaskId>{c2, c3, c1}));
  EXPECT_EQ(plan.stream_order[plan.stream_index(2, 1)], (std::vector<TaskId>{c3, c1}));
  EXPECT_TRUE(program_problems(g).empty());
}

TEST(IssuePlan, RandomGraphsGiveCorrectDeadlockFreePrograms) {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    const TaskGraph g = test::random_graph(seed);
    const auto problems = program_problems(g);
    ASSERT_TRUE(problems.empty()) << "seed " << seed << ": " << problems.front();
  }
}

TEST(IssuePlan, MarkerTimesAreTheLatestEndOfTheirDependencies) {
  const TaskGraph g = test::pipeline_with_allreduce();
  std::vector<TaskTiming> tl(g.size(), TaskTiming{0, 0});
  tl[7] = {10, 70};
  tl[8] = {10, 90};
  fill_marker_times(g, tl);
  EXPECT_EQ(tl[9].start, 90);
  EXPECT_EQ(tl[9].end, 90);
}

TEST(RunSteps, TheRecordingRuntimeReproducesTheSimulatedScheduleAndReportsSpread) {
  const TaskGraph g = test::pipeline_with_allreduce(100'000, 1'000'000);
  RecordingRuntime fake;  // transfers and collectives: 1 us + 1 ns per 1000 B
  const ExecutionResult r = run_steps(g, fake, {.warmup = 1, .repetitions = 3});
  EXPECT_EQ(fake.setups(), 1);
  EXPECT_EQ(fake.steps(), 4);
  // f0 100, act 2, f1 100, b1 100, grad 2, b0 100, ar (4 MB) 5, update 25  (us)
  const TimeNs expected = 100'000 + 2'000 + 100'000 + 100'000 + 2'000 + 100'000 + 5'000 + 25'000;
  EXPECT_EQ(r.step_median, expected);
  EXPECT_EQ(r.step_min, expected);
  EXPECT_EQ(r.step_max, expected);
  EXPECT_EQ(r.step_times.size(), 3u);
  EXPECT_EQ(r.timeline[9].end, expected);  // the marker
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].compute_busy, 225'000);
  EXPECT_EQ(r.devices[0].comm_busy, 7'000);
  EXPECT_EQ(r.devices[1].comm_busy, 7'000);
  EXPECT_EQ(r.devices[0].exposed_comm, 7'000);
  EXPECT_THROW(run_steps(g, fake, {.warmup = 0, .repetitions = 0}), InputError);
}

TEST(RunSteps, CtrlCEndsTheRepetitionsBetweenSteps) {
  const TaskGraph g = test::pipeline_with_allreduce();
  RecordingRuntime fake;
  request_interrupt();
  EXPECT_THROW(run_steps(g, fake, {.warmup = 1, .repetitions = 3}), Interrupted);
  reset_interrupt();
  EXPECT_EQ(fake.steps(), 0);  // not one step began
}

TEST(RunSteps, MedianIsAMeasuredValue) {
  EXPECT_EQ(lower_median_ns({5, 1, 3}), 3);
  EXPECT_EQ(lower_median_ns({4, 1, 3, 2}), 2);
  EXPECT_EQ(lower_median_ns({}), 0);
}

}  // namespace
}  // namespace parasim::executor
