#include "parasim/profiler/profile_cost_model.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

using namespace testing_fixtures;
using models::DType;
using models::Model;

Model small_model(std::int64_t batch) {
  models::ModelBuilder b("small", batch, DType::F32);
  auto x = b.input("x", {batch, 3, 16, 16});
  auto c1 = b.conv2d("c1", x, 8, 3, 1, 1);
  auto r = b.relu("r", c1);
  auto f = b.flatten("f", r);
  auto fc = b.linear("fc", f, 8 * 16 * 16, 10);
  b.cross_entropy("loss", fc);
  return b.finish();
}

const models::Op& op_named(const Model& m, const char* name) { return m.op(*m.find_op(name)); }

ProfileEntry entry_for(const models::Op& op, PhaseStats fwd, PhaseStats bwd_data, PhaseStats bwd_weight,
                       PhaseStats update) {
  ProfileEntry e;
  e.names = {op.name};
  e.kind = models::to_string(op.kind);
  e.signature = op.signature();
  e.batch_key = batch_key(op);
  e.batch = op_batch(op);
  if (op_has_phase(op, Phase::Forward)) e.set(Phase::Forward, fwd);
  if (op_has_phase(op, Phase::BackwardData)) e.set(Phase::BackwardData, bwd_data);
  if (op_has_phase(op, Phase::BackwardWeight)) e.set(Phase::BackwardWeight, bwd_weight);
  if (op_has_phase(op, Phase::Update)) e.set(Phase::Update, update);
  return e;
}

/// Profile at batch 8 with the conv measured at batch 8 and the relu measured at batch 4.
Profile make_profile() {
  const Model m8 = small_model(8);
  const Model m4 = small_model(4);
  Profile p;
  p.created = "2025-03-01T00:00:00Z";
  p.backend = "cuda";
  p.source = CostSource::MeasuredGpu;
  p.device = DeviceInfo{};
  p.device.name = "Tesla V100-SXM2-32GB";
  p.device.kind = "V100-SXM2-32GB";
  p.model = "small";
  p.batch = 8;
  p.optimizer = Optimizer::Sgd;
  p.ops.push_back(entry_for(op_named(m8, "c1"), stats(90, 100, 120), {}, stats(180, 200, 230), stats(10, 12, 14)));
  p.ops.push_back(entry_for(op_named(m4, "r"), stats(40, 50, 60), stats(60, 70, 80), {}, {}));
  return p;
}

TEST(ProfileCostModel, ExactScaledAndRooflineWithCounts) {
  const Model m = small_model(8);
  ProfileCostModel costs(make_profile(), "traces/v100/small-b8-fp32.json");

  const OpCost conv = costs.cost(op_named(m, "c1"), "v100", Optimizer::Sgd);
  EXPECT_EQ(conv.source, CostSource::MeasuredGpu);
  EXPECT_EQ(conv.fwd, 100);
  EXPECT_EQ(conv.bwd_data, 0);
  EXPECT_EQ(conv.bwd_weight, 200);
  EXPECT_EQ(conv.update, 12);

  const OpCost relu = costs.cost(op_named(m, "r"), "V100-SXM2-32GB", Optimizer::Sgd);
  EXPECT_EQ(relu.source, CostSource::MeasuredScaled);
  EXPECT_EQ(relu.fwd, 100);       // 50 ns at batch 4, x2
  EXPECT_EQ(relu.bwd_data, 140);  // 70 ns at batch 4, x2

  const models::Op& fc = op_named(m, "fc");
  const OpCost linear = costs.cost(fc, "V100-SXM2-32GB", Optimizer::Sgd);
  EXPECT_EQ(linear.source, CostSource::Roofline);
  const OpCost expected = RooflineCostModel().cost(fc, "V100-SXM2-32GB", Optimizer::Sgd);
  EXPECT_EQ(linear.fwd, expected.fwd);
  EXPECT_EQ(linear.total(), expected.total());

  const CostCounts c = costs.counts();
  EXPECT_EQ(c.measured, 1);
  EXPECT_EQ(c.scaled, 1);
  EXPECT_EQ(c.roofline, 1);
  EXPECT_EQ(costs.coverage_summary(),
            "2 of 3 op costs measured (1 scaled from another batch size or optimizer), 1 roofline");
  costs.reset_counts();
  EXPECT_EQ(costs.counts().total(), 0);
}

TEST(ProfileCostModel, ScalesDownToSmallerBatches) {
  const Model m2 = small_model(2);
  ProfileCostModel costs(make_profile());
  const OpCost relu = costs.cost(op_named(m2, "r"), "v100", Optimizer::Sgd);
  EXPECT_EQ(relu.source, CostSource::MeasuredScaled);
  EXPECT_EQ(relu.fwd, 25);  // 50 ns at batch 4, x0.5
  // The conv was measured at batch 8 only: scaled by 2/8, but its update does not depend on the batch.
  const OpCost conv = costs.cost(op_named(m2, "c1"), "v100", Optimizer::Sgd);
  EXPECT_EQ(conv.source, CostSource::MeasuredScaled);
  EXPECT_EQ(conv.fwd, 25);
  EXPECT_EQ(conv.bwd_weight, 50);
  EXPECT_EQ(conv.update, 12);
}

TEST(ProfileCostModel, OtherOptimizerScalesTheUpdateByTraffic) {
  const Model m = small_model(8);
  ProfileCostModel costs(make_profile());
  const OpCost conv = costs.cost(op_named(m, "c1"), "v100", Optimizer::Adam);
  EXPECT_EQ(conv.source, CostSource::MeasuredScaled);
  EXPECT_EQ(conv.fwd, 100);
  EXPECT_EQ(conv.update, 28);  // 12 ns x 28 / 12 bytes per parameter
}

TEST(ProfileCostModel, AnotherDeviceFallsBackToRoofline) {
  const Model m = small_model(8);
  ProfileCostModel costs(make_profile());
  EXPECT_EQ(costs.cost(op_named(m, "c1"), "H100-SXM5-80GB", Optimizer::Sgd).source, CostSource::Roofline);
  EXPECT_EQ(costs.cost(op_named(m, "x"), "H100-SXM5-80GB", Optimizer::Sgd).source, CostSource::Roofline);
  EXPECT_EQ(costs.counts().roofline, 2);
  // On the profile's own device the free ops are exact: counted as measured.
  EXPECT_EQ(costs.cost(op_named(m, "x"), "v100", Optimizer::Sgd).source, CostSource::MeasuredGpu);
  EXPECT_EQ(costs.cost(op_named(m, "f"), "v100", Optimizer::Sgd).total(), 0);
}

TEST(ProfileCostModel, EntryMissingAPhaseFallsBackToRoofline) {
  Profile p = make_profile();
  p.ops[0].phases[static_cast<std::size_t>(Phase::BackwardWeight)].reset();
  ProfileCostModel costs(p);
  const Model m = small_model(8);
  EXPECT_EQ(costs.cost(op_named(m, "c1"), "v100", Optimizer::Sgd).source, CostSource::Roofline);
}

TEST(ProfileCostModel, ChecksTheModelItWasMadeFor) {
  Profile p = make_profile();
  p.model = "resnet50";
  p.dtype = DType::F16;
  ProfileCostModel costs(p, "traces/v100/resnet50-b32-fp16.json");
  try {
    costs.check_matches(Model("inception_v3", 32, DType::F32));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "profile traces/v100/resnet50-b32-fp16.json was made for model resnet50 fp16, not inception_v3 fp32");
  }
  EXPECT_NO_THROW(costs.check_matches(Model("resnet50", 64, DType::F16)));  // another batch is fine
  EXPECT_EQ(costs.describe(),
            "profile traces/v100/resnet50-b32-fp16.json (cuda on V100-SXM2-32GB, resnet50 b8 fp16), roofline where it "
            "has no entry");
}

TEST(ProfileCostModel, BatchKeyAbstractsOnlyTheBatch) {
  const Model m8 = small_model(8);
  const Model m4 = small_model(4);
  EXPECT_EQ(batch_key(op_named(m8, "c1")), batch_key(op_named(m4, "c1")));
  EXPECT_NE(op_named(m8, "c1").signature(), op_named(m4, "c1").signature());
  EXPECT_NE(batch_key(op_named(m8, "c1")), batch_key(op_named(m8, "r")));
  EXPECT_EQ(op_batch(op_named(m8, "fc")), 8);
}

}  // namespace
}  // namespace parasim::profiler
