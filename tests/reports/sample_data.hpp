// A realistic report for the tests: Inception-V3-like scaling on DGX-1 nodes, four strategies'
// breakdowns, a real simulated step (2-stage GPipe x 2 data-parallel replicas on 4 GPUs of a
// DGX-1) for the Gantt chart and the memory plot, and a handful of validation runs.
#pragma once

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/reports/report_data.hpp"
#include "parasim/reports/step_adapters.hpp"
#include "parasim/simulator/engine.hpp"

namespace parasim::reports::fixtures {

/// 2 pipeline stages x 2 replicas, 4 microbatches, GPipe: forwards, activation transfers,
/// backwards, gradient transfers back, an all-reduce per stage across replicas, updates.
inline simulator::TaskGraph pipeline_step_graph() {
  using namespace parasim::simulator;
  constexpr int kStages = 2, kReplicas = 2, kMicro = 4;
  static constexpr std::array<std::string_view, kStages> kFwd = {"stage0.fwd", "stage1.fwd"};
  static constexpr std::array<std::string_view, kStages> kBwd = {"stage0.bwd", "stage1.bwd"};
  TaskGraphBuilder b(kStages * kReplicas);
  auto dev = [](int replica, int stage) { return replica * kStages + stage; };
  std::array<std::array<TaskId, kReplicas>, kStages> last_bwd{};
  for (int r = 0; r < kReplicas; ++r) {
    for (int s = 0; s < kStages; ++s)
      b.set_static_memory(dev(r, s),
                          {.params = 96 * MiB, .grads = 96 * MiB, .optimizer = 192 * MiB, .other = 64 * MiB});
    std::array<std::array<TaskId, kMicro>, kStages> fwd{};
    for (int m = 0; m < kMicro; ++m)
      for (int s = 0; s < kStages; ++s) {
        fwd[s][m] = b.add_compute({.device = dev(r, s), .duration = 2'000'000 + 250'000 * s, .name = kFwd[s],
                                   .microbatch = m, .phase = Phase::Forward});
        b.set_memory(fwd[s][m], 700 * MiB, 0);
        if (s > 0) {
          TaskId x = b.add_transfer({.src = dev(r, s - 1), .dst = dev(r, s), .bytes = 48 * MiB, .name = "activations",
                                     .microbatch = m, .phase = Phase::Forward});
          b.add_dependency(x, fwd[s - 1][m]);
          b.add_dependency(fwd[s][m], x);
        }
      }
    for (int m = kMicro - 1; m >= 0; --m) {
      TaskId upstream = kNoTask;
      for (int s = kStages - 1; s >= 0; --s) {
        TaskId bwd = b.add_compute({.device = dev(r, s), .duration = 4'000'000 + 500'000 * s, .name = kBwd[s],
                                    .microbatch = m, .phase = Phase::BackwardData});
        b.set_memory(bwd, 0, 700 * MiB);
        b.add_dependency(bwd, fwd[kStages - 1][kMicro - 1]);  // GPipe: all forwards first
        if (upstream != kNoTask) {
          TaskId g = b.add_transfer({.src = dev(r, s + 1), .dst = dev(r, s), .bytes = 48 * MiB, .name = "gradients",
                                     .microbatch = m, .phase = Phase::BackwardData});
          b.add_dependency(g, upstream);
          b.add_dependency(bwd, g);
        }
        upstream = bwd;
        last_bwd[s][r] = bwd;
      }
    }
  }
  for (int s = 0; s < kStages; ++s) {
    const GroupId group = b.add_group(std::vector<DeviceId>{dev(0, s), dev(1, s)});
    TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = group, .bytes = 96 * MiB,
                                  .algorithm = CollectiveAlgorithm::Ring, .name = "grad allreduce"});
    for (int r = 0; r < kReplicas; ++r) b.add_dependency(ar, last_bwd[s][r]);
    for (int r = 0; r < kReplicas; ++r) {
      TaskId up = b.add_compute({.device = dev(r, s), .duration = 600'000, .name = "sgd", .phase = Phase::Update});
      b.add_dependency(up, ar);
    }
  }
  return std::move(b).build();
}

inline ReportData sample_report() {
  ReportData d;
  d.title = "Inception-V3 on dgx1-v100";
  d.model = "inception_v3";
  d.assumptions.cost_source = "roofline (V100-SXM2-32GB spec sheet: 15.7 TFLOP/s fp32, 900 GB/s)";
  d.assumptions.efficiency_model = "critical-batch E_min=78.4 B_crit=9000";
  d.assumptions.efficiency_source = "McCandlish et al. 2018 <An Empirical Model of Large-Batch Training> & Goyal 2017";
  d.assumptions.cluster = "dgx1-v100 x 8 nodes (NVLink2 cube-mesh, 4x EDR InfiniBand per node)";
  d.assumptions.dataset = "imagenet-1k (1,281,167 images)";
  d.assumptions.extra = {{"per-GPU batch", "32"}};

  ScalingSeries dp{"DP only", SeriesKind::DataParallel, {}};
  ScalingSeries hybrid{"best hybrid", SeriesKind::BestHybrid, {}};
  ScalingSeries mp2{"best with MP=2", SeriesKind::ModelParallel, {}};
  ScalingSeries mp4{"best with MP=4", SeriesKind::ModelParallel, {}};
  const double t1 = 3.6e5 + 0.123;  // not a round number: the CSV must repeat it exactly
  for (std::int64_t n = 1; n <= 64; n *= 2) {
    const double nd = static_cast<double>(n);
    const double dp_t = t1 / nd * (1 + 0.04 * std::log2(nd)) * (1 + nd * 32 / 9000.0) / (1 + 32 / 9000.0);
    dp.points.push_back({n, dp_t, 120.5 * (1 + 0.04 * std::log2(nd)), 32 * n, 78.4 * (1 + nd * 32 / 9000.0), 0,
                         "dp=" + std::to_string(n)});
    const double hy_t = n < 8 ? dp_t : dp_t * (0.97 - 0.02 * std::log2(nd / 8));
    hybrid.points.push_back(
        {n, hy_t, 118.0, 16 * n, 78.4 * (1 + nd * 16 / 9000.0), 0,
         n < 8 ? "dp=" + std::to_string(n) : "dp=" + std::to_string(n / 2) + ",mp=2,schedule=1f1b,micro=4"});
    if (n >= 2) mp2.points.push_back({n, hy_t * 1.08, 140.0, 16 * n, 78.0, 0, "dp=" + std::to_string(n / 2) + ",mp=2"});
    if (n >= 4) mp4.points.push_back({n, hy_t * 1.25, 170.0, 8 * n, 77.0, 0, "dp=" + std::to_string(n / 4) + ",mp=4"});
  }
  d.scaling = {dp, hybrid, mp2, mp4};

  d.breakdown = {{"dp=8", 98.25, 21.5, 0, 3.125},
                 {"dp=4,mp=2,schedule=1f1b,micro=4", 96.0, 6.5, 11.75, 2.0},
                 {"dp=2,mp=4,schedule=gpipe,micro=8", 94.0, 3.0, 27.5, 1.5},
                 {"mp=8", 92.0, 1.0, 0, 310.0}};

  d.throughput = {{"dp=4", "pcie-4gpu", 4, 128, 12.0, 10666.666666666666, true},
                  {"mp=4,schedule=gpipe,micro=8", "pcie-4gpu", 4, 128, 18.5, 6918.918918918919, true},
                  {"mp=4,schedule=spectrain", "pcie-4gpu", 4, 128, 13.0, 9846.153846153846, true},
                  {"dp=1", "pcie-4gpu", 1, 512, 160.0, 3200.0, false}};

  const hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
  const simulator::TaskGraph graph = pipeline_step_graph();
  const simulator::StepResult step =
      simulator::Engine(cluster, {.collectives = simulator::CollectiveMode::Expanded, .record_timeline = true})
          .run(graph);
  ReportData from_step = report_from_step("dp=2,mp=2,schedule=gpipe,micro=4", graph, step, 6'000'000);
  from_step.gantt_title = "dp=2,mp=2,schedule=gpipe,micro=4 on dgx1-v100";
  d.merge(std::move(from_step));
  // A second strategy for the memory plot: plain DP on 8 GPUs, every device alike.
  for (int dev = 0; dev < 8; ++dev)
    d.memory.push_back(
        {"dp=8",
         dev,
         20 * GiB + 512 * MiB,
         32 * GiB,
         {.params = 96 * MiB, .grads = 96 * MiB, .optimizer = 192 * MiB, .activations = 20 * GiB, .other = 128 * MiB}});

  d.validation = {{"resnet50 dp=2 (cuda)", 101.5, 97.25},
                  {"resnet50 dp=4 (cuda)", 108.0, 112.75},
                  {"inception_v3 dp=2,mp=2 (cuda)", 151.0, 139.5},
                  {"gnmt mp=4 (cuda)", 210.25, 244.0},
                  {"mlp dp=2 (cpu)", 12.5, 13.0},
                  {"vgg16 \"quoted\" & <tagged> (cpu)", 48.0, 46.5}};
  return d;
}

}  // namespace parasim::reports::fixtures
