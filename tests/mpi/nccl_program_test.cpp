// The CUDA-over-MPI runtime's NCCL program, checked without a GPU: exact calls per rank on a
// hand-made graph, and on tiny_cnn lowered under dp=2, mp=2 and 1F1B (2 and 4 ranks) and on
// random graphs, that every send meets its receive in the same order at the same position and
// every communicator's members issue the same collectives, and that a model of CUDA streams and
// NCCL (blocking sends, receives and collectives; one NCCL call at a time per GPU) runs every
// rank's program to the end, so NCCL cannot deadlock on them.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graphs.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/mpi/nccl_program.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/step_cache.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::mpi {
namespace {

using namespace parasim::simulator;

std::vector<NcclProgram> programs(const TaskGraph& g, const executor::IssuePlan& plan) {
  std::vector<NcclProgram> out;
  for (int r = 0; r < g.num_devices(); ++r) out.push_back(nccl_program(g, plan, r));
  return out;
}

std::vector<std::string> lines(const NcclProgram& p) {
  std::vector<std::string> out;
  for (const NcclCall& c : p.calls) out.push_back(to_string(c));
  return out;
}

// Runs the programs of every rank on a model of CUDA streams and NCCL: each stream executes its
// calls in order; a wait needs the event's record (issued earlier by the host) to have executed;
// a rank's NCCL calls run one at a time in program order (the after_stream chain), and a send, a
// receive or a collective runs only together with its partners, each at the head of its stream
// and next in its rank's NCCL order. Fails naming the stuck calls if the programs cannot finish.
void expect_programs_complete(const std::vector<NcclProgram>& p, const executor::IssuePlan& plan) {
  const std::size_t n = p.size();
  std::vector<std::vector<char>> done(n);
  std::vector<std::size_t> next_nccl(n, 0);  // index into the rank's NCCL calls
  std::vector<std::vector<std::size_t>> nccl(n);
  for (std::size_t r = 0; r < n; ++r) {
    done[r].assign(p[r].calls.size(), 0);
    for (std::size_t k = 0; k < p[r].calls.size(); ++k)
      if (p[r].calls[k].is_nccl()) nccl[r].push_back(k);
  }
  // The call that is the head of its stream on rank r (every earlier call on that stream done).
  const auto at_head = [&](std::size_t r, std::size_t k) {
    for (std::size_t j = 0; j < k; ++j)
      if (p[r].calls[j].stream == p[r].calls[k].stream && !done[r][j]) return false;
    return true;
  };
  const auto recorded = [&](std::size_t r, std::size_t k) {  // the record a wait refers to
    const NcclCall& w = p[r].calls[k];
    for (std::size_t j = 0; j < k; ++j) {
      const NcclCall& c = p[r].calls[j];
      const bool local = w.kind == NcclCallKind::WaitEvent && c.kind == NcclCallKind::RecordEvent;
      const bool signal = w.kind == NcclCallKind::WaitArrival && c.kind == NcclCallKind::SignalRecv;
      if ((local || signal) && c.event == w.event) return done[r][j] != 0;
    }
    return false;  // never recorded before the wait: CUDA would not wait at all, so fail
  };
  const auto transfer_arrived = [&](std::size_t r, std::size_t k, TaskId task) {
    for (std::size_t j = 0; j < k; ++j)
      if (p[r].calls[j].kind == NcclCallKind::Recv && p[r].calls[j].task == task) return done[r][j] != 0;
    return false;
  };
  // Ready to run as one NCCL operation: (rank, call) of every participant, or empty.
  const auto partners = [&](std::size_t r, std::size_t k) {
    std::vector<std::pair<std::size_t, std::size_t>> out{{r, k}};
    const NcclCall& c = p[r].calls[k];
    const auto is_next = [&](std::size_t q, std::size_t j) {
      return next_nccl[q] < nccl[q].size() && nccl[q][next_nccl[q]] == j && at_head(q, j);
    };
    if (!is_next(r, k)) return decltype(out){};
    for (std::size_t q = 0; q < n; ++q) {
      if (q == r) continue;
      if (next_nccl[q] >= nccl[q].size()) continue;
      const std::size_t j = nccl[q][next_nccl[q]];
      const NcclCall& d = p[q].calls[j];
      bool match = false;
      if (c.kind == NcclCallKind::Collective) match = d.kind == NcclCallKind::Collective && d.task == c.task;
      else if (c.peer == static_cast<int>(q))
        match = d.peer == static_cast<int>(r) && d.position == c.position && d.task == c.task && d.event == c.event;
      if (match && at_head(q, j)) out.emplace_back(q, j);
    }
    const std::size_t want = c.kind == NcclCallKind::Collective ? p[r].comms[ix(c.comm)].members.size() : 2;
    return out.size() == want ? out : decltype(out){};
  };
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t k = 0; k < p[r].calls.size(); ++k) {
        if (done[r][k] || !at_head(r, k)) continue;
        const NcclCall& c = p[r].calls[k];
        if (c.is_nccl()) {
          const auto run = partners(r, k);
          for (const auto& [q, j] : run) done[q][j] = 1, ++next_nccl[q];
          progressed = progressed || !run.empty();
          continue;
        }
        bool ready = true;
        if (c.kind == NcclCallKind::WaitEvent) ready = recorded(r, k);
        if (c.kind == NcclCallKind::WaitArrival) {
          bool signalled = false;
          for (std::size_t j = 0; j < k; ++j)
            signalled = signalled || (p[r].calls[j].kind == NcclCallKind::SignalRecv && p[r].calls[j].event == c.event);
          // Without a signal the arrival is the receive of the transfer the event follows.
          ready = signalled ? recorded(r, k) : transfer_arrived(r, k, plan.events[ix(c.event)].task);
        }
        if (ready) done[r][k] = 1, progressed = true;
      }
  }
  std::string stuck;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t k = 0; k < p[r].calls.size(); ++k)
      if (!done[r][k]) stuck += "  rank " + std::to_string(r) + ": " + to_string(p[r].calls[k]) + "\n";
  EXPECT_TRUE(stuck.empty()) << "the programs cannot finish; calls that never run:\n" << stuck;
}

// dev0: f0 -> x (to dev1, comm stream) ; f0 -> b0 ; dev1: x -> f1 ; b0 -> c1 (no data: a signal);
// then an all-reduce of both devices after b0 and c1 and f1.
TaskGraph signal_and_transfer() {
  TaskGraphBuilder b(2);
  const TaskId f0 = b.add_compute({.device = 0, .duration = 100, .name = "f0"});
  const TaskId x = b.add_transfer({.src = 0, .dst = 1, .bytes = 4096, .name = "x"});
  const TaskId f1 = b.add_compute({.device = 1, .duration = 100, .name = "f1"});
  const TaskId b0 = b.add_compute({.device = 0, .duration = 300, .name = "b0"});
  const TaskId c1 = b.add_compute({.device = 1, .duration = 100, .name = "c1"});
  const GroupId both = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = both, .bytes = 1024, .name = "ar"});
  b.add_dependency(x, f0);
  b.add_dependency(f1, x);
  b.add_dependency(b0, f0);
  b.add_dependency(c1, b0);
  b.add_dependency(c1, f1);
  b.add_dependency(ar, b0);
  b.add_dependency(ar, c1);
  return std::move(b).build();
}

TEST(NcclProgram, ExactCallsOfATransferASignalAndAnAllReduce) {
  const TaskGraph g = signal_and_transfer();
  const executor::IssuePlan plan = executor::plan_issue(g);
  const auto p = programs(g, plan);
  // Tasks: 0 f0, 1 x, 2 f1, 3 b0, 4 c1, 5 ar. The plan issues b0 before x (both ready at f0's
  // end; b0 holds the compute stream). b0 -> c1 carries no data: rank 0 sends a 1-byte signal
  // after b0's event (e1), received at the same position (3) on rank 1's receive stream. x's own
  // arrival tells rank 1 that e2 happened. c1 -> ar: rank 1 signals e3; rank 0's all-reduce
  // learns of b0 through it (c1 waited for b0), so it waits for e3 only.
  EXPECT_EQ(lines(p[0]), (std::vector<std::string>{
                             "0 s0 Compute t0",
                             "1 s0 RecordEvent e0",
                             "2 s0 Compute t3",
                             "3 s0 RecordEvent e1",
                             "3 s0 SignalSend e1 ->1 1B",
                             "4 s1 WaitEvent e0",
                             "5 s1 Send t1 ->1 4096B after s0",
                             "6 s1 RecordEvent e2",
                             "11 recv SignalRecv e3 <-1 1B after s1",
                             "12 s1 WaitArrival e3 <-1",
                             "14 s1 Collective t5 1024B c0 after recv",
                         }));
  EXPECT_EQ(lines(p[1]), (std::vector<std::string>{
                             "3 recv SignalRecv e1 <-0 1B",
                             "5 recv Recv t1 <-0 4096B",
                             "7 s0 WaitArrival e2 <-0",
                             "8 s0 Compute t2",
                             "9 s0 WaitArrival e1 <-0",
                             "10 s0 Compute t4",
                             "11 s0 RecordEvent e3",
                             "11 s0 SignalSend e3 ->0 1B after recv",
                             "13 s1 WaitEvent e3",
                             "14 s1 Collective t5 1024B c0 after s0",
                         }));
  ASSERT_EQ(p[0].comms.size(), 1u);
  EXPECT_EQ(p[0].comms[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(p[0].comms[0].root(), 0);
  EXPECT_EQ(p[1].member_of, (std::vector<int>{0}));
  EXPECT_TRUE(p[0].p2p && p[1].p2p && p[0].job_p2p && p[1].job_p2p);
  EXPECT_NO_THROW(check_nccl_programs(p));
  expect_programs_complete(p, plan);
}

TEST(NcclProgram, CheckerNamesMessagesReceivedOutOfOrder) {
  const TaskGraph g = signal_and_transfer();
  auto p = programs(g, executor::plan_issue(g));
  // Rank 1 posts x's receive before the signal it matches second: the positions disagree.
  std::swap(p[1].calls[0], p[1].calls[1]);
  EXPECT_THROW(
      {
        try {
          check_nccl_programs(p);
        } catch (const RuntimeError& e) {
          EXPECT_STREQ(e.what(),
                       "NCCL programs do not match: rank 1: call 3 recv SignalRecv e1 <-0 1B after position 5");
          throw;
        }
      },
      RuntimeError);
  auto q = programs(g, executor::plan_issue(g));
  q[1].calls.erase(q[1].calls.begin() + 1);  // x is never received
  EXPECT_THROW(
      {
        try {
          check_nccl_programs(q);
        } catch (const RuntimeError& e) {
          EXPECT_STREQ(e.what(), "NCCL programs do not match: rank 0 sends 2 messages to rank 1, which receives 1");
          throw;
        }
      },
      RuntimeError);
}

TEST(NcclProgram, StreamModelFindsTheDeadlockOfSwappedReceives) {
  const TaskGraph g = signal_and_transfer();
  const executor::IssuePlan plan = executor::plan_issue(g);
  auto p = programs(g, plan);
  // Rank 1 receives x before the signal rank 0 sends first: each waits for the other forever.
  std::swap(p[1].calls[0], p[1].calls[1]);
  EXPECT_NONFATAL_FAILURE(expect_programs_complete(p, plan), "  rank 1: 5 recv Recv t1 <-0 4096B\n");
}

struct Lowered {
  TaskGraph graph;
  executor::IssuePlan plan;
};

Lowered lower_tiny_cnn(const std::string& strategy, std::int64_t batch) {
  const models::Model m = models::build_zoo_model("tiny_cnn", {.batch = batch});
  const hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100", 1);
  profiler::RooflineCostModel roofline;
  strategies::StepCache steps;
  strategies::LoweredStep step = strategies::lower_step({.model = &m,
                                                         .cluster = &cluster,
                                                         .strategy = strategies::parse_strategy(strategy),
                                                         .global_batch = batch,
                                                         .costs = &roofline,
                                                         .optimizer = profiler::Optimizer::Sgd,
                                                         .symmetry = strategies::Symmetry::None,
                                                         .cache = &steps});
  executor::IssuePlan plan = executor::plan_issue(step.graph);
  return {std::move(step.graph), std::move(plan)};
}

struct Counts {
  int sends = 0, receives = 0, signals_out = 0, signals_in = 0, collectives = 0, computes = 0;
};

Counts count(const NcclProgram& p) {
  Counts c;
  for (const NcclCall& call : p.calls) {
    c.sends += call.kind == NcclCallKind::Send;
    c.receives += call.kind == NcclCallKind::Recv;
    c.signals_out += call.kind == NcclCallKind::SignalSend;
    c.signals_in += call.kind == NcclCallKind::SignalRecv;
    c.collectives += call.kind == NcclCallKind::Collective;
    c.computes += call.kind == NcclCallKind::Compute;
  }
  return c;
}

// Per rank, the graph's own counts: transfers out of and into it, collectives it joins, its
// compute tasks. The program issues each exactly once.
void expect_counts_match_graph(const TaskGraph& g, const std::vector<NcclProgram>& p) {
  for (int r = 0; r < g.num_devices(); ++r) {
    int out = 0, in = 0, coll = 0, comp = 0;
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      if (g.kind(t) == TaskKind::Transfer && g.src(t) != g.dst(t)) out += g.src(t) == r, in += g.dst(t) == r;
      if (g.kind(t) == TaskKind::Compute) comp += g.device(t) == r;
      if (g.kind(t) == TaskKind::Collective) {
        const auto m = g.group_devices(g.group(t));
        coll += std::find(m.begin(), m.end(), r) != m.end();
      }
    }
    const Counts c = count(p[ix(r)]);
    EXPECT_EQ(c.sends, out) << "rank " << r;
    EXPECT_EQ(c.receives, in) << "rank " << r;
    EXPECT_EQ(c.collectives, coll) << "rank " << r;
    EXPECT_EQ(c.computes, comp) << "rank " << r;
  }
}

TEST(NcclProgram, TinyCnnDataParallelIsCollectivesOnly) {
  const Lowered l = lower_tiny_cnn("dp=2", 8);
  const auto p = programs(l.graph, l.plan);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NO_THROW(check_nccl_programs(p));
  expect_programs_complete(p, l.plan);
  expect_counts_match_graph(l.graph, p);
  for (const NcclProgram& r : p) {
    const Counts c = count(r);
    EXPECT_EQ(c.sends + c.receives, 0) << "replicas exchange only gradients";
    EXPECT_GT(c.collectives, 0);
    // The plan's semantics: a collective starts after its dependencies on every member, and a
    // task after it waits for it to end on every member. So each rank signals the other twice:
    // after its last backward task, and after the all-reduce.
    std::vector<TaskKind> signalled;
    for (const NcclCall& call : r.calls)
      if (call.kind == NcclCallKind::SignalSend) signalled.push_back(l.graph.kind(l.plan.events[ix(call.event)].task));
    EXPECT_EQ(signalled, (std::vector<TaskKind>{TaskKind::Compute, TaskKind::Collective}));
    EXPECT_EQ(c.signals_in, 2);
  }
  // One communicator: both ranks on the comm stream, rank 0 makes its id.
  ASSERT_EQ(p[0].comms.size(), 1u);
  EXPECT_EQ(p[0].comms[0], (NcclCommKey{{0, 1}, 1}));
  EXPECT_EQ(p[0].comms[0].root(), 0);
}

TEST(NcclProgram, TinyCnnModelParallelSendsActivationsAndGradients) {
  const Lowered l = lower_tiny_cnn("mp=2", 8);
  const auto p = programs(l.graph, l.plan);
  EXPECT_NO_THROW(check_nccl_programs(p));
  expect_programs_complete(p, l.plan);
  expect_counts_match_graph(l.graph, p);
  const Counts c0 = count(p[0]), c1 = count(p[1]);
  EXPECT_EQ(c0.sends, c1.receives);
  EXPECT_EQ(c1.sends, c0.receives);
  EXPECT_GT(c0.sends, 0);  // activations forward
  EXPECT_GT(c1.sends, 0);  // gradients back
  // Each receive sits at its send's position, in the same order on both sides.
  std::vector<int> sent, received;
  for (const NcclCall& call : p[0].calls)
    if (call.kind == NcclCallKind::Send) sent.push_back(call.position);
  for (const NcclCall& call : p[1].calls)
    if (call.kind == NcclCallKind::Recv) received.push_back(call.position);
  EXPECT_EQ(sent, received);
}

TEST(NcclProgram, TinyCnnPipelinesOnTwoAndFourRanksMatch) {
  for (const auto& [strategy, ranks] : std::vector<std::pair<std::string, int>>{
           {"mp=2,schedule=1f1b,micro=4", 2}, {"dp=2,mp=2", 4}, {"dp=2,mp=2,schedule=1f1b,micro=2", 4}}) {
    SCOPED_TRACE(strategy);
    const Lowered l = lower_tiny_cnn(strategy, 8);
    ASSERT_EQ(l.graph.num_devices(), ranks);
    const auto p = programs(l.graph, l.plan);
    EXPECT_NO_THROW(check_nccl_programs(p));
    expect_programs_complete(p, l.plan);
    expect_counts_match_graph(l.graph, p);
    // Every NCCL call of a rank is chained to the one before: a GPU runs them one at a time.
    for (const NcclProgram& r : p) {
      int last = kNoStream;
      for (const NcclCall& call : r.calls) {
        if (!call.is_nccl()) continue;
        EXPECT_EQ(call.after_stream, last != call.stream ? last : kNoStream) << to_string(call);
        last = call.stream;
      }
    }
  }
}

TEST(NcclProgram, RandomGraphsAlwaysMatch) {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    const TaskGraph g = executor::test::random_graph(seed, 4, 3, 150);
    const executor::IssuePlan plan = executor::plan_issue(g);
    const auto p = programs(g, plan);
    EXPECT_NO_THROW(check_nccl_programs(p));
    expect_programs_complete(p, plan);
    expect_counts_match_graph(g, p);
  }
}

TEST(NcclProgram, RankDeviceIsTheLocalRankOrTheOnlyVisibleGpu) {
  EXPECT_EQ(rank_cuda_device(3, 8), 3);  // mpirun on an 8-GPU host
  EXPECT_EQ(rank_cuda_device(3, 1), 0);  // srun --gpus-per-task=1: the task sees its own GPU only
  EXPECT_EQ(rank_cuda_device(-1, 1), 0);
  EXPECT_EQ(rank_cuda_device(2, 2), -1);   // more ranks than GPUs on the host
  EXPECT_EQ(rank_cuda_device(-1, 4), -1);  // no launcher local rank, several GPUs: ambiguous
  EXPECT_EQ(rank_cuda_device(0, 0), -1);
}

TEST(NcclProgram, RankOutsideThePlanIsRefused) {
  const TaskGraph g = signal_and_transfer();
  EXPECT_THROW(nccl_program(g, executor::plan_issue(g), 2), RuntimeError);
}

}  // namespace
}  // namespace parasim::mpi
