#include "parasim/profiler/cost_model.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"

namespace parasim::profiler {
namespace {

using models::DType;

// The task graph's phases without kernels never reach an array over kPhases.
TEST(CostModel, RecomputeAndOtherAreNotKernelPhases) {
  EXPECT_FALSE(parse_phase_key("forward").has_value());
  EXPECT_FALSE(parse_phase_key("recompute").has_value());
  EXPECT_EQ(phase_index(Phase::Update), 3u);
  try {
    (void)phase_index(Phase::Recompute);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "phase recompute has no kernels of its own (kernel phases: fwd, bwd_data, bwd_weight, update)");
  }
  OpCost c;
  EXPECT_THROW((void)c.at(Phase::Other), std::invalid_argument);
  models::Op relu;
  relu.kind = models::OpKind::Relu;
  EXPECT_THROW((void)op_has_phase(relu, Phase::Other), std::invalid_argument);
}

TEST(CostModel, CostSourceNamesRoundTrip) {
  for (CostSource s : {CostSource::MeasuredGpu, CostSource::MeasuredCpu, CostSource::Imported,
                       CostSource::MeasuredScaled, CostSource::Roofline})
    EXPECT_EQ(parse_cost_source(to_string(s)), s);
  EXPECT_TRUE(is_measured(CostSource::MeasuredScaled));
  EXPECT_FALSE(is_measured(CostSource::Roofline));
}

TEST(CostModel, OptimizerParsingAndBytes) {
  EXPECT_EQ(parse_optimizer("adam"), Optimizer::Adam);
  EXPECT_EQ(parse_optimizer("momentum"), Optimizer::Momentum);
  EXPECT_EQ(parse_optimizer("lamb"), std::nullopt);  // the CLI's message: tests/cli plan_unknown_optimizer
  EXPECT_EQ(optimizer_state_bytes_per_param(Optimizer::Sgd), 0);
  EXPECT_EQ(optimizer_state_bytes_per_param(Optimizer::Momentum), 4);
  EXPECT_EQ(optimizer_state_bytes_per_param(Optimizer::Adam), 8);
  EXPECT_EQ(optimizer_traffic_bytes_per_param(Optimizer::Sgd, DType::F32), 12);
  EXPECT_EQ(optimizer_traffic_bytes_per_param(Optimizer::Momentum, DType::F32), 20);
  EXPECT_EQ(optimizer_traffic_bytes_per_param(Optimizer::Adam, DType::F32), 28);
  // fp16: 2-byte gradient, fp32 master weight and state, plus the fp16 weight copy.
  EXPECT_EQ(optimizer_traffic_bytes_per_param(Optimizer::Adam, DType::F16), 2 + 8 + 16 + 2);
}

TEST(CostModel, OpCostAccessByPhase) {
  OpCost c;
  c.at(Phase::BackwardData) = 7;
  c.at(Phase::Update) = 3;
  EXPECT_EQ(c.bwd_data, 7);
  EXPECT_EQ(c.total(), 10);
}

}  // namespace
}  // namespace parasim::profiler
