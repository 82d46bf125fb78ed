// The phase rule shared by the kernels, the roofline and the profiler (kernels/op_phases.hpp).
#include "parasim/kernels/op_phases.hpp"

#include <gtest/gtest.h>

#include "parasim/models/builder.hpp"

namespace parasim::kernels {
namespace {

using models::DType;
using models::ModelBuilder;

TEST(OpPhases, PhaseNamesRoundTrip) {
  for (Phase p : kPhases) EXPECT_EQ(parse_phase_key(phase_key(p)), p);
  EXPECT_EQ(phase_key(Phase::BackwardWeight), "bwd_weight");
  EXPECT_FALSE(parse_phase_key("backward").has_value());
}

TEST(OpPhases, WhichPhasesAnOpHas) {
  ModelBuilder b("phases", 2, DType::F32);
  auto x = b.input("x", {2, 3, 8, 8});
  auto c1 = b.conv2d("c1", x, 4, 3, 1, 1);  // fed by the data: no data gradient
  auto r = b.relu("r", c1);
  auto c2 = b.conv2d("c2", r, 4, 3, 1, 1);
  auto bn = b.batch_norm("bn", c2);
  auto s = b.add("s", {bn, r});
  auto f = b.flatten("f", s);
  b.cross_entropy("loss", f);
  models::Model m = b.finish();
  auto op = [&](const char* name) { return m.op(*m.find_op(name)); };

  EXPECT_FALSE(op_has_phase(op("x"), Phase::Forward));
  EXPECT_FALSE(op_has_phase(op("f"), Phase::Forward));
  EXPECT_TRUE(op_has_phase(op("c1"), Phase::Forward));
  EXPECT_FALSE(op_has_phase(op("c1"), Phase::BackwardData));
  EXPECT_TRUE(op_has_phase(op("c1"), Phase::BackwardWeight));
  EXPECT_TRUE(op_has_phase(op("c2"), Phase::BackwardData));
  EXPECT_TRUE(op_has_phase(op("r"), Phase::BackwardData));
  EXPECT_FALSE(op_has_phase(op("r"), Phase::BackwardWeight));
  EXPECT_FALSE(op_has_phase(op("r"), Phase::Update));
  // BatchNorm's one backward kernel yields the parameter gradients too.
  EXPECT_TRUE(op_has_phase(op("bn"), Phase::BackwardData));
  EXPECT_FALSE(op_has_phase(op("bn"), Phase::BackwardWeight));
  EXPECT_TRUE(op_has_phase(op("bn"), Phase::Update));
  EXPECT_FALSE(op_has_phase(op("s"), Phase::BackwardData));
  EXPECT_TRUE(op_has_phase(op("loss"), Phase::BackwardData));
}

}  // namespace
}  // namespace parasim::kernels
