#include "parasim/profiler/cpu_profiler.hpp"

#include <gtest/gtest.h>

#include "parasim/models/zoo.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

TEST(CpuProfiler, ProfilesEverySignatureOfAModel) {
  if (!PARASIM_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN";
  const models::Model model = models::build_zoo_model("tiny_cnn", models::ModelOptions{.batch = 2});
  CpuProfileOptions opt;
  opt.warmup = 1;
  opt.repetitions = 3;
  opt.command = "test";
  std::size_t progress_calls = 0;
  opt.on_progress = [&](std::size_t done, std::size_t total) {
    ++progress_calls;
    EXPECT_LE(done, total);
  };
  const Profile p = profile_model_on_cpu(model, opt);
  EXPECT_EQ(p.backend, "cpu-onednn");
  EXPECT_EQ(p.source, CostSource::MeasuredCpu);
  EXPECT_EQ(p.model, "tiny_cnn");
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.device.threads, 1);
  EXPECT_FALSE(p.device.onednn.empty());
  EXPECT_EQ(p.device.kind.rfind("cpu-", 0), 0u);
  EXPECT_EQ(progress_calls, p.ops.size());
  for (const auto& e : p.ops) {
    SCOPED_TRACE(e.signature);
    EXPECT_TRUE(e.has(Phase::Forward)) << e.note;
    EXPECT_EQ(e.phase(Phase::Forward).reps, 3);
    EXPECT_GT(e.phase(Phase::Forward).median_ns, 0);
    EXPECT_FALSE(e.batch_key.empty());
    EXPECT_EQ(e.batch, 2);
  }

  // Saved and loaded, it prices every op of the model from measurements.
  const auto path = testing_fixtures::temp_file("tiny_cnn_cpu.json");
  save_profile(p, path);
  ProfileCostModel costs(path);
  costs.check_matches(model);
  for (models::OpId v = 0; v < model.num_ops(); ++v) {
    const OpCost c = costs.cost(model.op(v), p.device.kind, Optimizer::Sgd);
    EXPECT_TRUE(is_measured(c.source)) << model.op(v).name;
  }
  EXPECT_EQ(costs.counts().roofline, 0);
  EXPECT_EQ(costs.counts().measured, static_cast<std::int64_t>(model.num_ops()));
}

TEST(CpuProfiler, ProfilesARecurrentModel) {
  if (!PARASIM_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN";
  const models::Model model = models::build_zoo_model("tiny_lstm", models::ModelOptions{.batch = 2});
  CpuProfileOptions opt;
  opt.warmup = 0;
  opt.repetitions = 1;
  opt.optimizer = Optimizer::Adam;
  const Profile p = profile_model_on_cpu(model, opt);
  for (const auto& e : p.ops) EXPECT_TRUE(e.has(Phase::Forward)) << e.signature << ": " << e.note;
}

// GNMT's decoder embeds with the encoder's table, and comes first in topological order: the
// signature's measured op must be the table's owner, or the owner's update goes unmeasured.
TEST(CpuProfiler, ASharedTablesOwnerIsTheOneMeasured) {
  if (!PARASIM_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN";
  const models::Model model = models::build_zoo_model("gnmt", models::ModelOptions{.batch = 1, .seq_len = 2});
  const models::Op& owner = model.op(*model.find_op("encoder.embedder"));
  const models::Op& user = model.op(*model.find_op("decoder.embedder"));
  ASSERT_EQ(owner.signature(), user.signature());
  ASSERT_GT(owner.params, 0);
  ASSERT_EQ(user.params, 0);
  CpuProfileOptions opt;
  opt.warmup = 0;
  opt.repetitions = 1;
  const Profile p = profile_model_on_cpu(model, opt);
  const ProfileEntry* e = p.find(owner.signature());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->names.front(), "decoder.embedder");  // named in topological order, as before
  EXPECT_TRUE(e->has(Phase::Update)) << e->note;
  const auto path = testing_fixtures::temp_file("gnmt_cpu.json");
  save_profile(p, path);
  ProfileCostModel costs(path);
  EXPECT_GT(costs.cost(owner, p.device.kind, Optimizer::Sgd).update, 0);
  EXPECT_EQ(costs.cost(user, p.device.kind, Optimizer::Sgd).update, 0);
  EXPECT_EQ(costs.counts().roofline, 0);
}

}  // namespace
}  // namespace parasim::profiler
