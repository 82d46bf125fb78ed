#include "parasim/simulator/chrome_trace.hpp"

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"

namespace parasim::simulator {
namespace {

TaskGraph mixed_graph() {
  TaskGraphBuilder b(4, 3);
  const GroupId all = b.add_group(std::vector<DeviceId>{0, 1, 2, 3});
  std::vector<TaskId> fwd;
  for (DeviceId d = 0; d < 4; ++d)
    fwd.push_back(b.add_compute({.device = d,
                                 .duration = 10'000 + 1'000 * d,
                                 .name = "layer\"0\".fwd",
                                 .model_op = 0,
                                 .microbatch = 0,
                                 .phase = Phase::Forward}));
  const TaskId x = b.add_transfer({.src = 0, .dst = 5 % 4, .bytes = 1 << 20, .name = "act", .microbatch = 0});
  b.add_dependency(x, fwd[0]);
  const TaskId side = b.add_compute({.device = 1, .stream = 2, .duration = 3'000, .name = "side"});
  b.add_dependency(side, x);
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = all, .bytes = 8 << 20, .name = "grads"});
  for (TaskId f : fwd) b.add_dependency(ar, f);
  const TaskId end = b.add_marker("step end");
  b.add_dependency(end, ar);
  b.add_dependency(end, side);
  b.add_marker("dev marker", 2);
  return std::move(b).build();
}

// Task times alone (what an asynchronous pipeline's steady-state window needs): the same task
// timeline as a full recording, and no link intervals, whose count grows with every message.
TEST(ChromeTrace, TaskTimesWithoutLinkIntervals) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  const TaskGraph g = mixed_graph();
  const StepResult full = Engine(cluster, {.record_timeline = true}).run(g);
  const StepResult tasks = Engine(cluster, {.record_task_times = true}).run(g);
  ASSERT_EQ(tasks.timeline.size(), g.size());
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
    EXPECT_EQ(tasks.timeline[static_cast<std::size_t>(t)].start, full.timeline[static_cast<std::size_t>(t)].start);
    EXPECT_EQ(tasks.timeline[static_cast<std::size_t>(t)].end, full.timeline[static_cast<std::size_t>(t)].end);
  }
  EXPECT_FALSE(full.link_timeline.empty());
  EXPECT_TRUE(tasks.link_timeline.empty());
  EXPECT_EQ(tasks.step_time, full.step_time);
  EXPECT_TRUE(Engine(cluster).run(g).timeline.empty());
}

TEST(ChromeTrace, ValidJsonOneEventPerTaskPerTrackNoOverlaps) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  const TaskGraph g = mixed_graph();
  const StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  const auto path = std::filesystem::temp_directory_path() / "parasim_trace_test.json";
  write_chrome_trace(path, g, cluster, r);
  const nlohmann::json j = read_json_file(path);
  std::filesystem::remove(path);

  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_EQ(j.at("displayTimeUnit"), "ms");
  std::map<TaskId, int> per_task;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  int link_events = 0;
  std::map<int, std::string> process_names;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}].emplace_back(e.at("ts").get<double>(),
                                                                          e.at("dur").get<double>());
    if (e.at("cat") == "link") {
      ++link_events;
      continue;
    }
    ++per_task[e.at("args").at("task").get<TaskId>()];
  }
  // Every task once, a collective once per member's comm stream.
  ASSERT_EQ(per_task.size(), g.size());
  for (const auto& [t, count] : per_task)
    EXPECT_EQ(count, g.kind(t) == TaskKind::Collective ? 4 : 1) << "task " << t;
  EXPECT_GT(link_events, 0);
  for (auto& [track, events] : tracks) {
    std::sort(events.begin(), events.end());
    for (std::size_t i = 1; i < events.size(); ++i)
      EXPECT_LE(events[i - 1].first + events[i - 1].second, events[i].first + 1e-9)
          << "overlap on pid " << track.first << " tid " << track.second;
  }
  EXPECT_EQ(process_names[0], "GPU 0 (V100-SXM2-32GB)");
  EXPECT_EQ(process_names[4], "Host");
  EXPECT_EQ(process_names[5], "Links");
}

TEST(ChromeTrace, EventsLookLikeKineto) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  const TaskGraph g = mixed_graph();
  const StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  const nlohmann::json j = nlohmann::json::parse(chrome_trace_json(g, cluster, r));
  bool saw_kernel = false, saw_memcpy = false, saw_nccl = false, saw_thread_name = false;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("pid") == 0 && e.at("tid") == 0) {
      EXPECT_EQ(e.at("args").at("name"), "compute stream 0");
      saw_thread_name = true;
    }
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "kernel" && e.at("args").at("task") == 0) {
      saw_kernel = true;
      EXPECT_EQ(e.at("name"), "layer\"0\".fwd");
      EXPECT_EQ(e.at("ts").get<double>(), 0.0);
      EXPECT_EQ(e.at("dur").get<double>(), 10.0);  // 10'000 ns = 10.000 us
      EXPECT_EQ(e.at("args").at("phase"), "forward");
      EXPECT_EQ(e.at("args").at("microbatch"), 0);
    }
    if (e.at("cat") == "gpu_memcpy") {
      saw_memcpy = true;
      EXPECT_EQ(e.at("name"), "Memcpy PtoP (Device -> Device)");
      EXPECT_EQ(e.at("args").at("bytes"), 1 << 20);
    }
    if (e.at("cat") == "nccl") {
      saw_nccl = true;
      EXPECT_EQ(e.at("name"), "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE");
      EXPECT_EQ(e.at("tid"), kCommStream);
    }
  }
  EXPECT_TRUE(saw_kernel && saw_memcpy && saw_nccl && saw_thread_name);
  EXPECT_EQ(nccl_kernel_name(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 1024),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  // NVLS and PAT run the Simple protocol only, whatever the size.
  EXPECT_EQ(nccl_kernel_name(CollectiveOp::AllGather, CollectiveAlgorithm::Pat, 1024),
            "ncclDevKernel_AllGather_PAT_SIMPLE");
  EXPECT_EQ(nccl_kernel_name(CollectiveOp::AllReduce, CollectiveAlgorithm::Nvls, MiB),
            "ncclDevKernel_AllReduce_Sum_f32_NVLS_SIMPLE");
}

TEST(ChromeTrace, NeedsATimeline) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  const TaskGraph g = mixed_graph();
  const StepResult r = Engine(cluster).run(g);
  EXPECT_THROW(chrome_trace_json(g, cluster, r), RuntimeError);
}

}  // namespace
}  // namespace parasim::simulator
