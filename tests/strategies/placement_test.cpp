// Where ops go: the layer partition (optimal, checked against brute force), branch placement
// on multi-branch graphs, explicit placement files and the device mapping.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <random>

#include "lowering_fixtures.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/branch_placement.hpp"
#include "parasim/strategies/device_mapping.hpp"
#include "parasim/strategies/partition.hpp"
#include "parasim/strategies/placement_file.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;

/// The best bottleneck over every way of cutting `units` into `parts` non-empty chunks.
TimeNs brute_force(int units, int parts, const ChunkCost& cost) {
  TimeNs best = std::numeric_limits<TimeNs>::max();
  std::vector<int> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds.back() = units;
  std::function<void(int, int)> cut = [&](int p, int start) {
    if (p == parts) {
      TimeNs worst = 0;
      for (int c = 0; c < parts; ++c)
        worst = std::max(worst, cost(c, bounds[static_cast<std::size_t>(c)], bounds[static_cast<std::size_t>(c) + 1]));
      best = std::min(best, worst);
      return;
    }
    for (int i = start + 1; i <= units - (parts - p); ++i) {
      bounds[static_cast<std::size_t>(p)] = i;
      cut(p + 1, i);
    }
  };
  cut(1, 0);
  return best;
}

TEST(LayerPartition, DynamicProgramIsOptimalAgainstBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int units = 2 + static_cast<int>(rng() % 9);
    const int parts = 1 + static_cast<int>(rng() % static_cast<unsigned>(units));
    std::vector<TimeNs> w(static_cast<std::size_t>(units)), cutc(static_cast<std::size_t>(units) + 1);
    for (auto& x : w) x = static_cast<TimeNs>(rng() % 100);
    for (auto& x : cutc) x = static_cast<TimeNs>(rng() % 40);
    // Different speed per chunk (a heterogeneous pipeline) and a cost on each cut.
    const ChunkCost cost = [&](int c, int b, int e) {
      TimeNs t = std::accumulate(w.begin() + b, w.begin() + e, TimeNs{0}) * (1 + c % 2);
      return t + (b > 0 ? cutc[static_cast<std::size_t>(b)] : 0) + (e < units ? cutc[static_cast<std::size_t>(e)] : 0);
    };
    const Partition p = partition_contiguous(units, parts, cost);
    EXPECT_EQ(p.bottleneck, brute_force(units, parts, cost)) << "trial " << trial;
    // With the compute as a lower bound the program prunes, and must cut at the same places.
    const ChunkCost compute = [&](int c, int b, int e) {
      return std::accumulate(w.begin() + b, w.begin() + e, TimeNs{0}) * (1 + c % 2);
    };
    const Partition pruned = partition_contiguous(units, parts, cost, compute);
    EXPECT_EQ(pruned.bounds, p.bounds) << "trial " << trial;
    EXPECT_EQ(pruned.bottleneck, p.bottleneck) << "trial " << trial;
    TimeNs worst = 0;
    for (int c = 0; c < parts; ++c)
      worst =
          std::max(worst, cost(c, p.bounds[static_cast<std::size_t>(c)], p.bounds[static_cast<std::size_t>(c) + 1]));
    EXPECT_EQ(worst, p.bottleneck);
  }
}

TEST(LayerPartition, CutsWhereTheTransferIsCheap) {
  // relu -> fc1 (1000->1000) -> fc2 (1000->10) -> fc3 (10->1000) -> fc4 (1000->1000) -> loss, batch 1.
  // Equal compute cut after fc2 or fc3 would balance 2 | 2; the activation after fc2 is 10 floats
  // (40 B: 20 ns each way at 2 GB/s), after fc3 1000 floats (4000 B: 2,000 ns each way), so the
  // cut goes after fc2.
  models::ModelBuilder b("narrow", 1);
  models::OpId x = b.relu("relu", b.input("x", {1, 1000}));
  x = b.linear("fc1", x, 1000, 1000, false);
  x = b.linear("fc2", x, 1000, 10, false);
  x = b.linear("fc3", x, 10, 1000, false);
  x = b.linear("fc4", x, 1000, 1000, false);
  b.cross_entropy("loss", x);
  const models::Model model = b.finish();
  const hardware::Cluster cluster = star_cluster(2, 0, 2.0);
  FakeCosts costs;
  const LoweredStep step = lower_step({.model = &model, .cluster = &cluster, .strategy = parse_strategy("mp=2"),
                                       .global_batch = 1, .costs = &costs});
  EXPECT_EQ(step.op_stage, (std::vector<int>{0, 0, 0, 0, 1, 1, 1}));
}

TEST(BranchPlacement, InceptionBranchesGoToDifferentDevices) {
  const models::Model model = models::build_zoo_model("inception_v3_noaux", {.batch = 1});
  const hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
  const profiler::RooflineCostModel roofline;
  const LoweredStep step = lower_step({.model = &model, .cluster = &cluster,
                                       .strategy = parse_strategy("mp=2,placement=branches"), .global_batch = 1,
                                       .costs = &roofline});
  for (const std::string block : {"Mixed_5b", "Mixed_6b", "Mixed_7b"}) {
    std::set<int> devices;
    for (models::OpId v = 0; v < model.num_ops(); ++v) {
      const std::string& b = model.op(v).block;
      if (b.rfind(block + "/branch", 0) == 0) devices.insert(step.op_stage[v]);
    }
    EXPECT_EQ(devices.size(), 2u) << block;
  }
  // Each branch stays on one device.
  std::map<std::string, std::set<int>> per_branch;
  for (models::OpId v = 0; v < model.num_ops(); ++v)
    if (model.op(v).block.find("/branch") != std::string::npos) per_branch[model.op(v).block].insert(step.op_stage[v]);
  for (const auto& [branch, devices] : per_branch) EXPECT_EQ(devices.size(), 1u) << branch;
}

TEST(BranchPlacement, TwoBranchesOfAHandMadeModel) {
  // x -> relu -> {a1 -> a2, b1} -> add -> loss: the a-branch costs 20, the b-branch 10; LPT puts
  // them apart.
  models::ModelBuilder b("fork", 1);
  const models::OpId x = b.relu("relu", b.input("x", {1, 100}));
  models::OpId a = b.linear("a1", x, 100, 100, false);
  a = b.linear("a2", a, 100, 100, false);
  const models::OpId c = b.linear("b1", x, 100, 100, false);
  b.cross_entropy("loss", b.add("add", {a, c}));
  const models::Model model = b.finish();
  std::vector<std::vector<TimeNs>> cost(2, std::vector<TimeNs>(model.num_ops(), 0));
  for (auto& row : cost) row[2] = row[3] = row[4] = 10;
  const std::vector<int> slot = place_branches(model, cost, 2);
  EXPECT_EQ(slot[2], slot[3]);
  EXPECT_NE(slot[2], slot[4]);
  EXPECT_EQ(slot[5], slot[4]);  // the join goes to the less loaded side
}

TEST(PlacementFile, ValidatesOpsAndDevices) {
  const models::Model model = chain_model(2);
  auto doc = [](const std::string& ops) {
    return nlohmann::json::parse(R"({"schema": "parasim.placement/1", "ops": )" + ops + "}");
  };
  const auto ok = placement_from_json(doc(R"({"relu": 0, "fc1": 0, "fc2": 1, "loss": 1})"), "p.json", model, 2);
  EXPECT_EQ(ok, (std::vector<int>{-1, 0, 0, 1, 1}));
  EXPECT_NE(input_error([&] { placement_from_json(doc(R"({"relu": 0, "fc9": 0})"), "p.json", model, 2); })
                .find("p.json: $.ops.fc9: unknown op \"fc9\""),
            std::string::npos);
  EXPECT_NE(input_error([&] {
              placement_from_json(doc(R"({"relu": 0, "fc1": 2, "fc2": 1, "loss": 1})"), "p.json", model, 2);
            }).find("$.ops.fc1"),
            std::string::npos);
  EXPECT_EQ(input_error([&] { placement_from_json(doc(R"({"relu": 0, "fc1": 1})"), "p.json", model, 2); }),
            "p.json: $.ops: missing 2 ops (fc2, loss); every op that does work needs a device in [0, 1]");
}

TEST(PlacementFile, DrivesTheLowering) {
  const models::Model model = chain_model(2);
  const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
  const auto path = std::filesystem::temp_directory_path() / "parasim_placement_test.json";
  std::ofstream(path) << R"({"schema": "parasim.placement/1", "ops": {"relu": 1, "fc1": 1, "fc2": 0, "loss": 0}})";
  FakeCosts costs;
  const LoweredStep step = lower_step({.model = &model, .cluster = &cluster,
                                       .strategy = parse_strategy("mp=2,placement=" + path.string()),
                                       .global_batch = 1, .costs = &costs});
  EXPECT_EQ(step.op_stage, (std::vector<int>{1, 1, 1, 0, 0}));
  std::filesystem::remove(path);
}

TEST(DeviceMapping, DefaultKeepsTensorThenPipelineInsideANode) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100", 2);
  const DeviceMapping m(parse_strategy("dp=2,mp=2,tp=4"), c);
  EXPECT_EQ(m.device(0, 0, 3), 3);
  EXPECT_EQ(m.device(0, 1, 0), 4);
  EXPECT_EQ(m.device(1, 0, 0), 8);  // the next replica is on the next node
  EXPECT_EQ(m.coords(13), (RankCoords{1, 1, 1}));
  const DeviceMapping dp_inside(parse_strategy("dp=2,mp=2,tp=4,mapping=dp-tp-mp"), c);
  EXPECT_EQ(dp_inside.device(1, 0, 0), 1);
  EXPECT_EQ(dp_inside.device(0, 1, 0), 8);
}

TEST(DeviceMapping, TooFewDevicesSaysHowManyNodes) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx1-v100");
  EXPECT_EQ(input_error([&] { DeviceMapping(parse_strategy("dp=4,mp=4"), c); }),
            "dp=4,mp=4 needs 16 devices; cluster dgx1-v100 x1 has 8 - add --nodes 2 (or use fewer devices)");
}

}  // namespace
}  // namespace parasim::strategies
