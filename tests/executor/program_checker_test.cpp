// The checker that stands in for a GPU in CI must itself catch broken programs.
#include <gtest/gtest.h>

#include "graphs.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/executor/recording_runtime.hpp"

namespace parasim::executor {
namespace {

using namespace parasim::simulator;

std::vector<RecordedCall> record(const TaskGraph& g) {
  const IssuePlan plan = plan_issue(g);
  RecordingRuntime fake;
  fake.setup(g, plan);
  fake.begin_step();
  issue_step(plan, g, fake);
  return fake.calls();
}

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  for (const auto& p : problems)
    if (p.find(what) != std::string::npos) return true;
  return false;
}

TEST(ProgramChecker, AcceptsThePlannedProgram) {
  const TaskGraph g = test::pipeline_with_allreduce();
  EXPECT_TRUE(check_program(g, record(g)).empty());
}

TEST(ProgramChecker, CatchesEveryDroppedWait) {
  const TaskGraph g = test::pipeline_with_allreduce();
  const auto calls = record(g);
  int waits = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].kind != CommandKind::Wait) continue;
    ++waits;
    auto broken = calls;
    broken.erase(broken.begin() + static_cast<std::ptrdiff_t>(i));
    EXPECT_TRUE(mentions(check_program(g, broken), "before its dependency"))
        << "dropping wait " << i << " went unnoticed";
  }
  EXPECT_EQ(waits, 10);
}

TEST(ProgramChecker, CatchesAWaitIssuedBeforeItsRecord) {
  const TaskGraph g = test::pipeline_with_allreduce();
  auto calls = record(g);
  // Move the first record to the very end: its wait now comes first (CUDA would not wait).
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].kind != CommandKind::Record) continue;
    RecordedCall rec = calls[i];
    calls.erase(calls.begin() + static_cast<std::ptrdiff_t>(i));
    calls.push_back(rec);
    break;
  }
  EXPECT_TRUE(mentions(check_program(g, calls), "before it was recorded"));
}

TEST(ProgramChecker, CatchesAReorderedStreamAndAMissingOrDuplicatedLaunch) {
  const TaskGraph g = test::pipeline_with_allreduce();
  auto calls = record(g);
  // Swap f1 and b1 (same stream, b1 depends on f1).
  std::size_t f1 = 0, b1 = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].kind == CommandKind::Launch && calls[i].task == 2) f1 = i;
    if (calls[i].kind == CommandKind::Launch && calls[i].task == 3) b1 = i;
  }
  std::swap(calls[f1], calls[b1]);
  EXPECT_TRUE(mentions(check_program(g, calls), "before its dependency"));

  auto dup = record(g);
  dup.push_back(dup[f1]);
  EXPECT_TRUE(mentions(check_program(g, dup), "launched 2 times"));
  auto missing = record(g);
  missing.erase(missing.begin() + static_cast<std::ptrdiff_t>(b1));
  EXPECT_TRUE(mentions(check_program(g, missing), "launched 0 times"));
}

TEST(ProgramChecker, CatchesCollectivesInConflictingOrders) {
  TaskGraphBuilder b(2);
  const GroupId g01 = b.add_group(std::vector<DeviceId>{0, 1});
  b.add_collective({.group = g01, .bytes = 1024, .name = "c0"});
  b.add_collective({.group = g01, .bytes = 1024, .name = "c1"});
  const TaskGraph g = std::move(b).build();
  // Device 0's comm stream runs c0 then c1; device 1's c1 then c0: NCCL would hang.
  std::vector<RecordedCall> calls = {
      {CommandKind::Launch, {1, 3}, 0, -1},
      {CommandKind::Launch, {1, 3}, 1, -1},
  };
  EXPECT_TRUE(check_program(g, calls).empty());
  // A hand-written program can only conflict through waits; emulate one: stream 3 waits for an
  // event stream 1 records after c1, before c0 can run on stream 3.
  std::vector<RecordedCall> bad = {
      {CommandKind::Wait, {3}, kNoTask, 0},
      {CommandKind::Launch, {1, 3}, 0, -1},
      {CommandKind::Launch, {1, 3}, 1, -1},
      {CommandKind::Record, {1}, kNoTask, 0},
  };
  const auto problems = check_program(g, bad);
  EXPECT_TRUE(mentions(problems, "deadlocks"));
  EXPECT_TRUE(mentions(problems, "before it was recorded"));
}

}  // namespace
}  // namespace parasim::executor
