// Streams, dependencies, overlap and the critical path, with hand-computed nanoseconds.
#include "parasim/simulator/engine.hpp"

#include <gtest/gtest.h>

#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

using testing::star_cluster;

std::vector<TaskId> ids(std::initializer_list<TaskId> l) { return l; }

TEST(EngineBasics, Chain) {
  auto cluster = star_cluster(2, 500, 10);
  TaskGraphBuilder b(2);
  const TaskId a = b.add_compute({.device = 0, .duration = 1'000, .name = "a"});
  const TaskId x = b.add_compute({.device = 0, .duration = 2'000, .name = "b"});
  const TaskId c = b.add_compute({.device = 1, .duration = 500, .name = "c"});
  b.add_dependency(x, a);
  b.add_dependency(c, x);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.step_time, 3'500);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(c)].start, 3'000);
  EXPECT_EQ(r.devices[0].compute_busy, 3'000);
  EXPECT_EQ(r.devices[0].idle, 500);
  EXPECT_EQ(r.devices[1].compute_busy, 500);
  EXPECT_EQ(r.devices[1].idle, 3'000);
  EXPECT_EQ(r.critical_path, ids({a, x, c}));
  EXPECT_EQ(r.events, 3);
}

TEST(EngineBasics, DataLoadingHoldsItsStreamButLeavesTheDeviceIdle) {
  // A host loader (phase data_load) on stream 1 for 5,000 ns; the device computes 1,000 ns before
  // and 2,000 ns after waiting for it: the device is idle while only the host works.
  auto cluster = star_cluster(1, 0, 10);
  TaskGraphBuilder b(1);
  const TaskId load =
      b.add_compute({.device = 0, .stream = 1, .duration = 5'000, .name = "data_load", .phase = Phase::DataLoad});
  const TaskId pre = b.add_compute({.device = 0, .duration = 1'000, .name = "pre"});
  const TaskId post = b.add_compute({.device = 0, .duration = 2'000, .name = "post"});
  b.add_dependency(post, load);
  b.add_dependency(post, pre);
  EXPECT_EQ(b.entry_tasks(-1), ids({load, pre}));
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.step_time, 7'000);
  EXPECT_EQ(r.devices[0].compute_busy, 3'000);
  EXPECT_EQ(r.devices[0].comm_busy, 0);
  EXPECT_EQ(r.devices[0].idle, 4'000);
  EXPECT_EQ(r.critical_path, ids({load, post}));
}

TEST(EngineBasics, EntryTasksOfAMicroBatchIgnoreOtherMicroBatches) {
  TaskGraphBuilder b(1);
  const TaskId f0 = b.add_compute({.device = 0, .duration = 1, .name = "f", .microbatch = 0});
  const TaskId f1 = b.add_compute({.device = 0, .duration = 1, .name = "f", .microbatch = 1});
  const TaskId b1 = b.add_compute({.device = 0, .duration = 1, .name = "b", .microbatch = 1});
  b.add_dependency(f1, f0);  // another micro-batch's task: f1 still starts micro-batch 1
  b.add_dependency(b1, f1);
  EXPECT_EQ(b.entry_tasks(1), ids({f1}));
  EXPECT_EQ(b.entry_tasks(0), ids({f0}));
  EXPECT_EQ(b.entry_tasks(-1), ids({f0}));
}

TEST(EngineBasics, ForkJoinAndItsCriticalPath) {
  auto cluster = star_cluster(2, 500, 10);
  TaskGraphBuilder b(2);
  const TaskId root = b.add_compute({.device = 0, .duration = 100, .name = "root"});
  const TaskId x = b.add_compute({.device = 0, .duration = 1'000, .name = "x"});
  const TaskId y = b.add_compute({.device = 1, .duration = 3'000, .name = "y"});
  const TaskId join = b.add_compute({.device = 0, .duration = 200, .name = "join"});
  b.add_dependency(x, root);
  b.add_dependency(y, root);
  b.add_dependency(join, x);
  b.add_dependency(join, y);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.step_time, 3'300);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(x)].end, 1'100);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(join)].start, 3'100);
  EXPECT_EQ(r.critical_path, ids({root, y, join}));
  EXPECT_EQ(r.devices[0].compute_busy, 1'300);
  EXPECT_EQ(r.devices[0].idle, 2'000);
}

TEST(EngineBasics, StreamsAreFifoInReadyOrderWithTiesByTaskId) {
  auto cluster = star_cluster(1, 0, 10);
  TaskGraphBuilder b(1);
  const TaskId gate = b.add_compute({.device = 0, .stream = 1, .duration = 50, .name = "gate"});
  const TaskId late = b.add_compute({.device = 0, .duration = 100, .name = "late"});   // ready at 50
  const TaskId first = b.add_compute({.device = 0, .duration = 100, .name = "first"});  // ready at 0
  const TaskId second = b.add_compute({.device = 0, .duration = 100, .name = "second"});  // ready at 0
  b.add_dependency(late, gate);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(first)].start, 0);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(second)].start, 100);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(late)].start, 200);  // id 1 but ready later: queued behind
  EXPECT_EQ(r.step_time, 300);
  // The last task waited for its stream: the critical path follows the stream predecessor.
  EXPECT_EQ(r.critical_path, ids({first, second, late}));
}

// A marker completes the moment it is ready, so what it releases is ready at that instant too and
// joins its stream in id order with the tasks released beside it, as if released directly.
TEST(EngineBasics, TasksReleasedThroughAMarkerJoinTheirStreamInIdOrder) {
  auto cluster = star_cluster(1, 0, 10);
  {  // Two gates end at 50; the marker behind one releases `x`, a lower id than `y` behind the other.
    TaskGraphBuilder b(1, 3);
    const TaskId g1 = b.add_compute({.device = 0, .stream = 1, .duration = 50, .name = "g1"});
    const TaskId g2 = b.add_compute({.device = 0, .stream = 2, .duration = 50, .name = "g2"});
    const TaskId m = b.add_marker("join");
    const TaskId x = b.add_compute({.device = 0, .duration = 100, .name = "x"});
    const TaskId y = b.add_compute({.device = 0, .duration = 100, .name = "y"});
    b.add_dependency(m, g1);
    b.add_dependency(x, m);
    b.add_dependency(y, g2);
    const StepResult r = Engine(cluster, {.record_timeline = true}).run(std::move(b).build());
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(x)].start, 50);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(y)].start, 150);
    EXPECT_EQ(r.critical_path, ids({g1, m, x, y}));  // y waited for x on the stream
  }
  {  // One gate ends alone at 50 and releases `y` and the marker, whose task `x` has a lower id
     // than both: x goes first though y was released before the marker was reached.
    TaskGraphBuilder b(1, 2);
    const TaskId gate = b.add_compute({.device = 0, .stream = 1, .duration = 50, .name = "gate"});
    const TaskId x = b.add_compute({.device = 0, .duration = 100, .name = "x"});
    const TaskId y = b.add_compute({.device = 0, .duration = 100, .name = "y"});
    const TaskId m = b.add_marker("join");
    b.add_dependency(x, m);
    b.add_dependency(y, gate);
    b.add_dependency(m, gate);
    const StepResult r = Engine(cluster, {.record_timeline = true}).run(std::move(b).build());
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(x)].start, 50);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(y)].start, 150);
    EXPECT_EQ(r.step_time, 250);
  }
}

TEST(EngineBasics, ComputeOverlapsCommunicationOnTwoStreams) {
  auto cluster = star_cluster(2, 500, 10);  // route alpha 1000, 10 GB/s
  for (const Bytes bytes : {Bytes{50'000}, Bytes{150'000}}) {
    TaskGraphBuilder b(2);
    b.add_compute({.device = 0, .stream = kComputeStream, .duration = 10'000, .name = "gemm"});
    b.add_transfer({.src = 0, .dst = 1, .bytes = bytes, .stream = kCommStream, .name = "send"});
    TaskGraph g = std::move(b).build();
    StepResult r = Engine(cluster).run(g);
    const TimeNs transfer = 1'000 + bytes / 10;  // 6'000 or 16'000
    EXPECT_EQ(r.step_time, std::max<TimeNs>(10'000, transfer));
    EXPECT_EQ(r.devices[0].compute_busy, 10'000);
    EXPECT_EQ(r.devices[0].comm_busy, transfer);
    EXPECT_EQ(r.devices[0].exposed_comm, std::max<TimeNs>(0, transfer - 10'000));
    EXPECT_EQ(r.devices[0].idle, 0);
    EXPECT_EQ(r.devices[1].idle, r.step_time);  // receiving does not occupy the receiver's streams
    // [device * 2 + stream]: each stream's own busy time, however the two overlap.
    EXPECT_EQ(r.stream_busy, (std::vector<TimeNs>{10'000, transfer, 0, 0}));
  }
}

TEST(EngineBasics, StreamBusySumsTheDurationsOfEachStreamsTasksNotTheirWaits) {
  // Stream 0 of device 0 runs a (300) and then b (200), b ready at 0 and queued behind a; stream 1
  // runs c (100) once a is done. The stream sums are 500 and 100; the union (compute_busy) is 500.
  auto cluster = star_cluster(1, 0, 10);
  TaskGraphBuilder b(1);
  const TaskId a = b.add_compute({.device = 0, .duration = 300, .name = "a"});
  b.add_compute({.device = 0, .duration = 200, .name = "b"});
  const TaskId c = b.add_compute({.device = 0, .stream = 1, .duration = 100, .name = "c"});
  b.add_dependency(c, a);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  EXPECT_EQ(r.step_time, 500);
  EXPECT_EQ(r.devices[0].compute_busy, 500);
  EXPECT_EQ(r.stream_busy, (std::vector<TimeNs>{500, 100}));
}

TEST(EngineBasics, MarkersAndZeroLengthTasksTakeNoTime) {
  auto cluster = star_cluster(2, 0, 10);
  TaskGraphBuilder b(2);
  const TaskId a = b.add_compute({.device = 0, .duration = 0, .name = "nop"});
  const TaskId m = b.add_marker("sync");
  const TaskId c = b.add_compute({.device = 1, .duration = 70, .name = "c"});
  const TaskId self = b.add_transfer({.src = 1, .dst = 1, .bytes = 1'000'000, .name = "self copy"});
  const TaskId end = b.add_marker("end", 1);
  b.add_dependency(m, a);
  b.add_dependency(c, m);
  b.add_dependency(self, c);
  b.add_dependency(end, self);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.step_time, 70);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(m)].start, 0);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(end)].end, 70);
  EXPECT_EQ(r.critical_path, ids({a, m, c, self, end}));
}

TEST(EngineBasics, CollectiveOccupiesTheCommStreamOfEveryMember) {
  auto cluster = star_cluster(3, 0, 10);
  TaskGraphBuilder b(3);
  const GroupId grp = b.add_group(std::vector<DeviceId>{0, 1, 2});
  // Device 2's comm stream is busy until 500 with a transfer; the allreduce waits for it.
  const TaskId busy = b.add_transfer({.src = 2, .dst = 0, .bytes = 5'000, .name = "busy"});
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000,
                                      .algorithm = CollectiveAlgorithm::Ring, .name = "ar"});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  // Ring of 3 on a switch: 4 steps, each 1000 B at 10 GB/s = 100 ns.
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(busy)].end, 500);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].start, 500);
  EXPECT_EQ(r.step_time, 900);
  EXPECT_EQ(r.devices[0].comm_busy, 400);  // receiving 0..500 does not count; the collective does
  EXPECT_EQ(r.devices[0].exposed_comm, 400);
  EXPECT_EQ(r.devices[0].idle, 500);
  EXPECT_EQ(r.devices[2].comm_busy, 900);
  // The collective counts on its waiting member's comm stream from its start, not while the
  // stream waited; devices 0 and 1 have nothing but the collective (passive: no streams).
  EXPECT_EQ(r.stream_busy, (std::vector<TimeNs>{0, 0, 0, 0, 0, 900}));
  EXPECT_EQ(r.critical_path, ids({busy, ar}));
}

TEST(EngineBasics, AMemberWithNothingButItsGroupsCollectivesIsStillCounted) {
  // Device 1 only ever takes part in grp's allreduce (a TP rank a symmetric lowering does not
  // simulate): the engine queues the collective on device 0 alone and fills in device 1's times.
  auto cluster = star_cluster(2, 0, 10);
  TaskGraphBuilder b(2);
  const GroupId grp = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId a = b.add_compute({.device = 0, .duration = 1'000, .name = "a"});
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000,
                                      .algorithm = CollectiveAlgorithm::Ring, .name = "ar"});
  const TaskId c = b.add_compute({.device = 0, .duration = 500, .name = "c"});
  b.add_dependency(ar, a);
  b.add_dependency(c, ar);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  // Ring of 2 on a switch: 2 steps of 1500 B at 10 GB/s = 150 ns each.
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].start, 1'000);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].end, 1'300);
  EXPECT_EQ(r.step_time, 1'800);
  EXPECT_EQ(r.devices[0].compute_busy, 1'500);
  EXPECT_EQ(r.devices[0].comm_busy, 300);
  EXPECT_EQ(r.devices[0].idle, 0);
  EXPECT_EQ(r.devices[1].compute_busy, 0);
  EXPECT_EQ(r.devices[1].comm_busy, 300);
  EXPECT_EQ(r.devices[1].exposed_comm, 300);
  EXPECT_EQ(r.devices[1].idle, 1'500);
  // A passive member has no streams of its own: its time is its comm_busy alone.
  EXPECT_EQ(r.stream_busy, (std::vector<TimeNs>{1'500, 300, 0, 0}));
  EXPECT_EQ(r.critical_path, ids({a, ar, c}));
}

TEST(EngineBasics, CollectivesOfAGroupWithOnlyCollectivesStillRunOneAtATime) {
  // Neither member has any other task; both allreduces are ready at 0 and must still take the
  // comm stream one after the other, in id order.
  auto cluster = star_cluster(3, 0, 10);
  TaskGraphBuilder b(3);
  const GroupId grp = b.add_group(std::vector<DeviceId>{1, 2});
  const TaskId first = b.add_collective({.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000,
                                         .algorithm = CollectiveAlgorithm::Ring, .name = "first"});
  const TaskId second = b.add_collective({.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000,
                                          .algorithm = CollectiveAlgorithm::Ring, .name = "second"});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(first)].end, 300);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(second)].start, 300);
  EXPECT_EQ(r.step_time, 600);
  for (int d : {1, 2}) {
    EXPECT_EQ(r.devices[static_cast<std::size_t>(d)].comm_busy, 600) << d;
    EXPECT_EQ(r.devices[static_cast<std::size_t>(d)].idle, 0) << d;
  }
  EXPECT_EQ(r.devices[0].idle, 600);
  EXPECT_EQ(r.critical_path, ids({first, second}));
}

// a (200,000 ns) then b (1,000,000 ns) on device 0's stream 0 beside a 3 MB ring all-reduce of
// devices 0 and 1 (stream 1: 0..300,000 ns on a 10 GB/s star), and the host's 700,000 ns loader
// (DataLoad) on stream 2.
struct BesideAnAllReduce {
  TaskGraph graph;
  TaskId a, b, load, ar;
};
BesideAnAllReduce compute_beside_an_allreduce() {
  TaskGraphBuilder g(2, 3);
  const GroupId grp = g.add_group(std::vector<DeviceId>{0, 1});
  const TaskId a = g.add_compute({.device = 0, .duration = 200'000, .name = "a"});
  const TaskId b = g.add_compute({.device = 0, .duration = 1'000'000, .name = "b"});
  const TaskId load =
      g.add_compute({.device = 0, .stream = 2, .duration = 700'000, .name = "load", .phase = Phase::DataLoad});
  const TaskId ar = g.add_collective(
      {.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000'000, .algorithm = CollectiveAlgorithm::Ring});
  g.add_dependency(b, a);
  return {std::move(g).build(), a, b, load, ar};
}

TEST(EngineBasics, CollectivesHoldSmsFromTheComputeTheyOverlap) {
  // A V100 (80 SMs) gives a ring all-reduce of 3 MB all of NCCL's 12 channels (3e6 B is 91 of
  // Simple's 32 KiB per channel): compute beside it runs at 68/80 = 0.85 of its rate. a ends at
  // round(200,000 / 0.85) = 235,294; b then does 64,706 x 0.85 = 55,000.1 ns of its 1,000,000 by
  // 300,000 and the rest at full rate: 300,000 + 944,999.9, rounded, 1,245,000. The host's loader
  // is never slowed. Moved ends are not events of their own: both runs count the same.
  auto cluster = star_cluster(2, 0, 10);
  const BesideAnAllReduce t = compute_beside_an_allreduce();
  std::int64_t events = -1;
  for (const bool hold : {false, true}) {
    StepResult r = Engine(cluster, {.record_timeline = true, .collectives_hold_sms = hold}).run(t.graph);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(t.ar)].end, 300'000);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(t.a)].end, hold ? 235'294 : 200'000);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(t.b)].end, hold ? 1'245'000 : 1'200'000);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(t.load)].end, 700'000);
    EXPECT_EQ(r.step_time, hold ? 1'245'000 : 1'200'000);
    EXPECT_EQ(r.devices[0].compute_busy, r.step_time);
    EXPECT_EQ(r.stream_busy[0], r.step_time);
    if (events >= 0) {
      EXPECT_EQ(r.events, events);
    }
    events = r.events;
  }
}

TEST(EngineBasics, ACollectivesKernelHoldsSmsWhileItWaitsForItsPeers) {
  // GPU 1's comm stream is busy until 100,000 ns, so the 3 MB all-reduce runs 100,000..400,000;
  // GPU 0 reached it at 0, and its NCCL kernel holds 12 of its 80 SMs from then on: a (200,000 ns
  // of work on GPU 0) runs at 0.85 throughout and ends at round(200,000 / 0.85) = 235,294, where
  // held only from the start it would end at 100,000 + 100,000 / 0.85 = 217,647.
  auto cluster = star_cluster(2, 0, 10);
  TaskGraphBuilder b(2);
  const GroupId grp = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId a = b.add_compute({.device = 0, .duration = 200'000, .name = "a"});
  const TaskId busy = b.add_compute({.device = 1, .stream = kCommStream, .duration = 100'000, .name = "busy"});
  const TaskId ar = b.add_collective(
      {.op = CollectiveOp::AllReduce, .group = grp, .bytes = 3'000'000, .algorithm = CollectiveAlgorithm::Ring});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true, .collectives_hold_sms = true}).run(g);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(busy)].end, 100'000);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].start, 100'000);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].end, 400'000);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(a)].end, 235'294);
}

TEST(EngineBasics, SmallCollectivesHoldFewerSms) {
  // 65,536 B is two of Simple's 32 KiB per channel: NCCL runs it on 2 channels, and a beside it
  // runs at 78/80. The all-reduce takes 6,554 ns (2 steps of 32,768 B at 10 GB/s, rounded each):
  // a does 6,554 x 0.975 = 6,390.15 ns of its 10,000 by then and ends at 6,554 + 3,609.85 -> 10,164.
  auto cluster = star_cluster(2, 0, 10);
  TaskGraphBuilder b(2);
  const GroupId grp = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId a = b.add_compute({.device = 0, .duration = 10'000, .name = "a"});
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce,
                                      .group = grp,
                                      .bytes = 65'536,
                                      .algorithm = CollectiveAlgorithm::Ring,
                                      .name = "ar"});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true, .collectives_hold_sms = true}).run(g);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(ar)].end, 6'554);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(a)].end, 10'164);
}

TEST(EngineBasics, TheClustersNcclChannelsReplaceEachPartsOwn) {
  // The same steps with every collective pinned to 40 channels (half a V100's 80 SMs): a does
  // 150,000 ns of its 200,000 by the all-reduce's end at 300,000 and ends at 350,000; b runs
  // 350,000..1,350,000 alone. Pinned to 0 the collectives hold nothing.
  const BesideAnAllReduce t = compute_beside_an_allreduce();
  for (const int channels : {40, 0}) {
    hardware::ClusterSpec spec = star_cluster(2, 0, 10).spec();
    spec.nccl_channels = channels;
    const hardware::Cluster cluster(spec);
    StepResult r = Engine(cluster, {.record_timeline = true, .collectives_hold_sms = true}).run(t.graph);
    EXPECT_EQ(r.timeline[static_cast<std::size_t>(t.a)].end, channels == 40 ? 350'000 : 200'000) << channels;
    EXPECT_EQ(r.step_time, channels == 40 ? 1'350'000 : 1'200'000) << channels;
  }
}

TEST(EngineBasics, TooManyDevicesForTheClusterIsAnInputError) {
  auto cluster = star_cluster(2, 0, 10);
  TaskGraphBuilder b(3);
  b.add_compute({.device = 2, .duration = 1});
  TaskGraph g = std::move(b).build();
  EXPECT_EQ(testing::input_error([&] { Engine(cluster).run(g); }),
            "the task graph uses 3 devices but cluster \"star2\" has 2");
}

}  // namespace
}  // namespace parasim::simulator
