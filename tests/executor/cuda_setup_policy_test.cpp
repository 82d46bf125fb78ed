// The CUDA runtime's setup and ordering decisions, tested without a GPU: the stand-in notes and
// the chain that puts every GPU's collectives in one issue order.
#include <gtest/gtest.h>

#include <algorithm>

#include "parasim/executor/cuda_setup_policy.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor {
namespace {

using namespace parasim::simulator;

TEST(StandInLedger, NamesEveryStandInOpAndWhy) {
  StandInLedger ledger;
  EXPECT_TRUE(ledger.notes().empty());
  ledger.add("", StandInReason::NoOp);
  ledger.add("fc2", StandInReason::MemoryReserve, "GPU 0 below the 4.00 GiB reserve");
  ledger.add("fc1", StandInReason::MemoryReserve, "GPU 0 below the 4.00 GiB reserve");
  ledger.add("fc2", StandInReason::MemoryReserve, "GPU 0 below the 4.00 GiB reserve");  // its backward task
  ledger.add("attn", StandInReason::PrepareFailed, "cannot allocate 6.00 GiB on CUDA device 1: out of memory");
  EXPECT_EQ(ledger.tasks(), 5);
  EXPECT_EQ(ledger.ops(StandInReason::MemoryReserve), (std::vector<std::string>{"fc1", "fc2"}));
  EXPECT_EQ(ledger.ops(StandInReason::PrepareFailed), (std::vector<std::string>{"attn"}));
  EXPECT_EQ(ledger.notes(),
            (std::vector<std::string>{
                "5 compute tasks run a timed stand-in (a spin kernel for the task's graph duration; not a measurement)",
                "stand-in ops (memory reserve: GPU 0 below the 4.00 GiB reserve): fc1, fc2",
                "stand-in ops (no kernel: cannot allocate 6.00 GiB on CUDA device 1: out of memory): attn"}));
}

TEST(CollectiveOrder, ChainsCollectivesOfOneGpuAcrossStreamsInIssueOrder) {
  // Two GPUs, three streams. A tensor-parallel all-reduce on stream 1 and a data-parallel one on
  // stream 2 (two communicators per GPU), then another on stream 1.
  TaskGraphBuilder b(2, 3);
  const GroupId g = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId c0 = b.add_compute({.device = 0, .duration = 100, .name = "c0"});
  const TaskId tp =
      b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 4096, .stream = 1, .name = "tp"});
  const TaskId dp =
      b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 4096, .stream = 2, .name = "dp"});
  const TaskId tp2 =
      b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 4096, .stream = 1, .name = "tp2"});
  b.add_dependency(tp, c0);
  b.add_dependency(dp, c0);
  b.add_dependency(tp2, dp);
  const TaskGraph graph = std::move(b).build();
  const IssuePlan plan = plan_issue(graph);
  const auto waits = collective_order_waits(graph, plan);
  ASSERT_EQ(waits.size(), graph.size());
  EXPECT_TRUE(waits[static_cast<std::size_t>(c0)].empty());

  // Whichever of tp and dp is issued first goes free; the other waits on both GPUs (streams are
  // device * 3 + stream); tp2 follows dp, which ran on stream 2, so it waits too.
  const auto pos = [&](TaskId t) {
    return std::find(plan.issue_order.begin(), plan.issue_order.end(), t) - plan.issue_order.begin();
  };
  const TaskId first = pos(tp) < pos(dp) ? tp : dp;
  const TaskId second = first == tp ? dp : tp;
  const int s2 = graph.stream(second);
  EXPECT_TRUE(waits[static_cast<std::size_t>(first)].empty());
  ASSERT_EQ(waits[static_cast<std::size_t>(second)].size(), 2u);
  EXPECT_EQ(waits[static_cast<std::size_t>(second)][0].stream, 0 * 3 + s2);
  EXPECT_EQ(waits[static_cast<std::size_t>(second)][1].stream, 1 * 3 + s2);
  EXPECT_EQ(waits[static_cast<std::size_t>(second)][0].after, first);
  const auto& w2 = waits[static_cast<std::size_t>(tp2)];
  if (second == dp) {
    ASSERT_EQ(w2.size(), 2u);
    EXPECT_EQ(w2[0].stream, 1);
    EXPECT_EQ(w2[1].stream, 4);
    EXPECT_EQ(w2[0].after, dp);
  }
}

TEST(CollectiveOrder, CollectivesOnOneStreamNeedNoWaits) {
  TaskGraphBuilder b(2, 2);
  const GroupId g = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId a = b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 4096, .name = "a"});
  const TaskId c = b.add_collective({.op = CollectiveOp::AllGather, .group = g, .bytes = 4096, .name = "c"});
  b.add_dependency(c, a);
  const TaskGraph graph = std::move(b).build();
  const auto waits = collective_order_waits(graph, plan_issue(graph));
  for (const auto& w : waits) EXPECT_TRUE(w.empty());
}

}  // namespace
}  // namespace parasim::executor
