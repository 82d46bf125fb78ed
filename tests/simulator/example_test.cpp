// The usage example from parasim/simulator/simulator.hpp, compiled and checked.
#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/simulator.hpp"

namespace {

TEST(Example, HeaderExampleRunsAsDocumented) {
  using namespace parasim;
  using namespace parasim::simulator;
  const auto trace = std::filesystem::temp_directory_path() / "parasim_example.trace.json";

  hardware::Cluster cluster = hardware::make_cluster_preset("dgx-h100");
  TaskGraphBuilder b(/*num_devices=*/2);
  GroupId both = b.add_group(std::vector<DeviceId>{0, 1});
  TaskId f0 = b.add_compute({.device = 0, .duration = 50'000, .name = "layer0.fwd", .phase = Phase::Forward});
  TaskId f1 = b.add_compute({.device = 1, .duration = 50'000, .name = "layer0.fwd", .phase = Phase::Forward});
  TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = both, .bytes = 100 * MB,
                                .algorithm = CollectiveAlgorithm::Ring, .name = "grads"});
  b.add_dependency(ar, f0);
  b.add_dependency(ar, f1);
  TaskGraph graph = std::move(b).build();

  Engine engine(cluster, {.collectives = CollectiveMode::Expanded, .record_timeline = true});
  StepResult r = engine.run(graph);
  std::cout << format_time(r.step_time) << "\n";
  write_chrome_trace(trace.string(), graph, cluster, r);

  // 50 us + 2 steps x (1 us + 50 MB / 450 GB/s).
  EXPECT_EQ(r.step_time, 50'000 + 2 * (1'000 + serialization_time(50 * MB, GBps{450})));
  EXPECT_TRUE(std::filesystem::exists(trace));
  std::filesystem::remove(trace);
}

}  // namespace
