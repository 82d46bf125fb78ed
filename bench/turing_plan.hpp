// The planning problem of the planner benchmark and its accuracy check: Turing-NLG 530B
// (105 layers, hidden 20480, 128 heads) on up to 5,128 A100 GPUs (dgx-a100, 641 nodes) with
// global batch at most 2,520 - Calculon's search (Isaev et al. SC'23): every tp (1, 2, 4, 8) x
// pp dividing 105 with dp = floor(5128 / (tp x pp)), the largest global batch <= 2520 that dp
// divides, every micro-batch count dividing the per-replica batch, 1F1B or interleaved with
// every V dividing the layers per stage, recompute none/selective/full and ZeRO 0/1 (1,002
// configurations; 4,392 with every schedule parasim knows: none, GPipe, 1F1B, interleaved,
// PipeDream, SpecTrain).
#pragma once

#include <memory>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/planner.hpp"

namespace parasim::bench {

/// Calculon's space: pp divides the 105 layers, schedules 1F1B and interleaved (every V dividing
/// the layers per stage), every micro-batch count dividing the per-replica batch.
inline strategies::SearchSpace calculon_space() {
  strategies::SearchSpace s{.gpus = 5128, .allow_fewer = true, .max_batch = 2520};
  s.even_stages = true;
  s.schedules = {strategies::Schedule::OneFOneB, strategies::Schedule::Interleaved};
  s.max_micro_per_stage = 1 << 20;
  s.partial_recompute = false;  // Calculon recomputes every layer or none (or selectively)
  return s;
}

/// The same with every schedule parasim knows (adds none, GPipe, PipeDream, SpecTrain).
inline strategies::SearchSpace every_schedule_space() {
  strategies::SearchSpace s = calculon_space();
  s.schedules = strategies::SearchSpace{}.schedules;
  return s;
}

/// Everything a PlanRequest points to, kept alive together.
struct TuringProblem {
  models::Model model =
      models::build_zoo_model("turing_530b", models::ModelOptions{.batch = 1, .dtype = models::DType::BF16});
  std::unique_ptr<hardware::Cluster> cluster =
      std::make_unique<hardware::Cluster>(hardware::make_cluster_preset("dgx-a100", 641));
  profiler::RooflineCostModel roofline;

  strategies::PlanRequest request(bool every_schedule, int threads) const {
    return strategies::PlanRequest{.model = &model,
                                   .cluster = cluster.get(),
                                   .costs = &roofline,
                                   .optimizer = profiler::Optimizer::Adam,
                                   .dtype = models::DType::BF16,
                                   .efficiency = strategies::default_efficiency("turing_530b"),
                                   .dataset_samples = strategies::dataset("gpt3-300b-tokens").samples,
                                   .space = every_schedule ? every_schedule_space() : calculon_space(),
                                   .granularity = strategies::Granularity::Stage,
                                   .threads = threads};
  }
};

}  // namespace parasim::bench
