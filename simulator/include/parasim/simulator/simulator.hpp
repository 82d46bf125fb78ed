// parasim's simulator: run one training step's TaskGraph on a Cluster and see where the time
// goes. Include this one header for everything.
//
//   TaskGraph          tasks (compute, transfer, collective, marker) + dependencies  task_graph.hpp
//   CollectivePlanner  how a collective decomposes into link-level steps             collectives.hpp
//   Engine             the discrete-event engine -> StepResult                       engine.hpp
//   StepResult         step time, per-device breakdown, memory, critical path        step_result.hpp
//   write_chrome_trace a Kineto-shaped timeline for Perfetto                         chrome_trace.hpp
//
// Example (compiled as tests/simulator/example_test.cpp):
//
//   #include "parasim/hardware/cluster_presets.hpp"
//   #include "parasim/simulator/simulator.hpp"
//
//   using namespace parasim;
//   using namespace parasim::simulator;
//
//   hardware::Cluster cluster = hardware::make_cluster_preset("dgx-h100");
//   TaskGraphBuilder b(/*num_devices=*/2);
//   GroupId both = b.add_group(std::vector<DeviceId>{0, 1});
//   TaskId f0 = b.add_compute({.device = 0, .duration = 50'000, .name = "layer0.fwd", .phase = Phase::Forward});
//   TaskId f1 = b.add_compute({.device = 1, .duration = 50'000, .name = "layer0.fwd", .phase = Phase::Forward});
//   TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = both, .bytes = 100 * MB,
//                                 .algorithm = CollectiveAlgorithm::Ring, .name = "grads"});
//   b.add_dependency(ar, f0);
//   b.add_dependency(ar, f1);
//   TaskGraph graph = std::move(b).build();
//
//   Engine engine(cluster, {.collectives = CollectiveMode::Expanded, .record_timeline = true});
//   StepResult r = engine.run(graph);
//   // 50 us compute + ring allreduce of 100 MB over 2 GPUs: 2 steps of 1 us + 50 MB / 450 GB/s
//   std::cout << format_time(r.step_time) << "\n";
//   write_chrome_trace("step.trace.json", graph, cluster, r);
#pragma once

#include "parasim/simulator/chrome_trace.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/simulator/engine.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"
#include "parasim/simulator/task_graph_json.hpp"
