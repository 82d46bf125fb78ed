// The graph core: dtypes, kind names, shapes, signatures, orders, cycles, longest path, equality.
#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {
namespace {

TEST(DType, SizesNamesAndParsing) {
  EXPECT_EQ(dtype_size(DType::F32), 4);
  EXPECT_EQ(dtype_size(DType::F16), 2);
  EXPECT_EQ(dtype_size(DType::BF16), 2);
  EXPECT_EQ(to_string(DType::BF16), "bf16");
  EXPECT_EQ(parse_dtype("float32"), DType::F32);
  EXPECT_EQ(parse_dtype("f16"), DType::F16);
  EXPECT_EQ(parse_dtype("half"), DType::F16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  // fp8: FP8 matmuls with bf16 tensors between ops, so bf16's element size.
  EXPECT_EQ(parse_dtype("fp8"), DType::FP8);
  EXPECT_EQ(to_string(DType::FP8), "fp8");
  EXPECT_EQ(dtype_size(DType::FP8), 2);
  EXPECT_EQ(parse_dtype("fp64"), std::nullopt);
}

TEST(OpKindNames, SnakeCaseAndRoundTrip) {
  EXPECT_EQ(to_string(OpKind::Conv2d), "conv2d");
  EXPECT_EQ(to_string(OpKind::BatchedMatmul), "batched_matmul");
  EXPECT_EQ(to_string(OpKind::AdaptiveAvgPool2d), "adaptive_avg_pool2d");
  EXPECT_EQ(to_string(OpKind::CrossEntropy), "cross_entropy");
  EXPECT_EQ(to_string(OpKind::SampledSoftmax), "sampled_softmax");
  EXPECT_EQ(to_string(OpKind::Gather), "gather");
  EXPECT_EQ(all_op_kinds().size(), 31u);
  for (OpKind k : all_op_kinds()) EXPECT_EQ(parse_op_kind(to_string(k)), k);
  EXPECT_EQ(parse_op_kind("conv3d"), std::nullopt);
}

TEST(Shape, ElementsAndErrors) {
  EXPECT_EQ(num_elements({32, 3, 224, 224}), 32 * 3 * 224 * 224);
  EXPECT_EQ(num_elements({}), 1);  // a scalar
  EXPECT_EQ(to_string(Shape{2, 3}), "[2, 3]");
  EXPECT_EQ(to_string(Shape{}), "[]");
  try {
    (void)num_elements({2, -1});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "shape [2, -1] has a negative dimension");
  }
  try {
    (void)num_elements({1LL << 40, 1LL << 40});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "shape [1099511627776, 1099511627776] has more elements than fit in a 64-bit integer");
  }
}

TEST(Signature, KindDtypeShapesAndRelevantAttrs) {
  ModelBuilder b("sig", 2);
  OpId x = b.input("x", {2, 3, 8, 8});
  OpId c1 = b.conv2d("c1", x, 4, 3, 1, 1);
  OpId c2 = b.conv2d("c2", c1, 4, 3, 1, 1);
  OpId c3 = b.conv2d("c3", c2, 4, 3, 1, 1);
  EXPECT_EQ(b.op(c2).signature(), "conv2d|fp32|[2, 4, 8, 8]|[2, 4, 8, 8]|k=3x3,s=1x1,p=1x1,d=1x1,g=1,bias=1");
  EXPECT_EQ(b.op(c2).signature(), b.op(c3).signature());  // same cost, different names
  // The first layer skips its data gradient, so its backward is cheaper: a different key.
  EXPECT_EQ(b.op(c1).signature(), "conv2d|fp32|[2, 3, 8, 8]|[2, 4, 8, 8]|k=3x3,s=1x1,p=1x1,d=1x1,g=1,bias=1|no_dgrad");
}

// A causal self-attention costs less with fused kernels: its own key, and the key profiles taken
// before the mask was an attribute recorded it under (parasim's kernels compute the whole matrix).
TEST(Signature, CausalAttentionHasItsOwnKeyAndTheUnmaskedOne) {
  ModelBuilder b("sig", 2);
  const OpId qkv = b.input("qkv", {2, 16, 3 * 32});
  const OpId full = b.attention("full", qkv, 4);
  const OpId causal = b.attention("causal", qkv, 4, 0, 0.0, /*causal=*/true);
  EXPECT_EQ(b.op(full).signature(), "attention|fp32|[2, 16, 96]|[2, 16, 32]|heads=4,additive=0|no_dgrad");
  EXPECT_EQ(b.op(causal).signature(), "attention|fp32|[2, 16, 96]|[2, 16, 32]|heads=4,additive=0,causal=1|no_dgrad");
  EXPECT_EQ(b.op(causal).signature_unmasked(), b.op(full).signature());
  EXPECT_EQ(b.op(full).signature_unmasked(), b.op(full).signature());
}

/// A model assembled by hand (no builder), so tests can make any shape of graph.
Model hand_graph(const std::string& name, const std::vector<std::string>& ops,
                 const std::vector<std::pair<int, int>>& edges) {
  Model m(name, 1, DType::F32);
  for (const std::string& n : ops) {
    Op op;
    op.name = n;
    boost::add_vertex(op, m.graph());
  }
  int index = 0;
  for (auto [u, v] : edges) {
    Tensor t;
    t.input_index = index++;
    boost::add_edge(static_cast<OpId>(u), static_cast<OpId>(v), t, m.graph());
  }
  return m;
}

void expect_topological(const Model& m, const std::vector<OpId>& order) {
  ASSERT_EQ(order.size(), m.num_ops());
  std::vector<std::size_t> pos(m.num_ops());
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  for (auto [e, end] = boost::edges(m.graph()); e != end; ++e)
    EXPECT_LT(pos[boost::source(*e, m.graph())], pos[boost::target(*e, m.graph())]);
}

TEST(TopologicalOrder, ValidForHandGraphAndZoo) {
  // Vertices deliberately out of order: d -> c -> b -> a, plus d -> a.
  const Model m = hand_graph("rev", {"a", "b", "c", "d"}, {{3, 2}, {2, 1}, {1, 0}, {3, 0}});
  expect_topological(m, m.topological_order());
  EXPECT_EQ(m.topological_order().front(), 3u);
  const Model r = build_zoo_model("inception_v3");
  expect_topological(r, r.topological_order());
}

TEST(Cycle, TopologicalOrderNamesTheOpsOnTheCycle) {
  const Model m = hand_graph("loopy", {"in", "a", "b", "c"}, {{0, 1}, {1, 2}, {2, 3}, {3, 1}});
  EXPECT_EQ(m.find_cycle(), (std::vector<OpId>{1, 2, 3}));
  try {
    (void)m.topological_order();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "model loopy has a cycle: a -> b -> c -> a");
  }
  const Model self = hand_graph("self", {"x"}, {{0, 0}});
  EXPECT_EQ(self.find_cycle(), (std::vector<OpId>{0}));
  EXPECT_THROW((void)self.topological_order(), InputError);
  EXPECT_TRUE(build_zoo_model("resnet50").find_cycle().empty());
}

TEST(LongestPath, VertexWeightedDiamond) {
  // a(1) -> b(5) -> d(1) -> e(2), and a -> c(2) -> d: the path through b is the heavier one.
  const Model m = hand_graph("diamond", {"a", "b", "c", "d", "e"}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
  const std::vector<std::int64_t> w{1, 5, 2, 1, 2};
  auto by_name = [&](const Op& op) { return w[static_cast<std::size_t>(op.name[0] - 'a')]; };
  EXPECT_EQ(m.longest_path(by_name), (std::vector<OpId>{0, 1, 3, 4}));
  // Double weights work too, and a heavier c changes the path.
  auto heavy_c = [](const Op& op) { return op.name == "c" ? 9.5 : 1.0; };
  EXPECT_EQ(m.longest_path(heavy_c), (std::vector<OpId>{0, 2, 3, 4}));
  EXPECT_TRUE(Model().longest_path(by_name).empty());
}

TEST(LongestPath, ResNetCriticalPathByMacsEndsAtTheLoss) {
  const Model m = build_zoo_model("resnet50");
  const auto path = m.longest_path([](const Op& op) { return op.macs_fwd; });
  EXPECT_EQ(m.op(path.front()).name, "images");
  EXPECT_EQ(m.op(path.back()).name, "loss");
  std::int64_t macs = 0;
  for (OpId v : path) macs += m.op(v).macs_fwd;
  // Every op but the four projection shortcuts lies on it (the main branch is heavier).
  std::int64_t shortcuts = 0;
  for (OpId v = 0; v < m.num_ops(); ++v)
    if (m.op(v).name.ends_with("downsample.0")) shortcuts += m.op(v).macs_fwd;
  EXPECT_EQ(macs, m.total_macs_fwd() - shortcuts);
}

// consumers_of() searches its list linearly up to 16 consumers and through a set beyond: both
// keep each consumer once, in edge order. inputs_of() orders by input index.
TEST(Model, ManyConsumersEachOnceInOrder) {
  ModelBuilder b("fan", 1);
  const OpId x = b.input("x", {1, 4});
  std::vector<OpId> expected;
  for (int i = 0; i < 20; ++i) {
    expected.push_back(i % 2 == 0 ? b.relu("relu" + std::to_string(i), x)
                                  : b.add("sum" + std::to_string(i), {x, x, x}));  // x three times
  }
  const OpId last = b.add("last", {expected[3], x, expected[19], x});
  expected.push_back(last);
  const Model m = b.finish();
  EXPECT_EQ(m.consumers_of(x), expected);
  EXPECT_EQ(m.inputs_of(last), (std::vector<OpId>{expected[3], x, expected[19], x}));
  EXPECT_EQ(m.inputs_of(expected[1]), (std::vector<OpId>{x, x, x}));
}

TEST(Model, InputsConsumersAndEquality) {
  ModelBuilder b("eq", 1);
  OpId x = b.input("x", {1, 4});
  OpId y = b.input("y", {1, 4});
  OpId s = b.concat("cat", {y, x}, 1);
  b.add("sum", {x, x});
  Model m = b.finish();
  EXPECT_EQ(m.inputs_of(s), (std::vector<OpId>{y, x}));
  EXPECT_EQ(m.consumers_of(x).size(), 2u);  // cat and sum (sum uses it twice)
  EXPECT_EQ(m.find_op("sum"), std::optional<OpId>(3));
  EXPECT_EQ(m.find_op("nope"), std::nullopt);

  Model copy = m;
  EXPECT_TRUE(copy == m);
  copy.op(2).attrs.axis = 0;
  EXPECT_FALSE(copy == m);
  Model other = m;
  other.set_dataset("cifar-10");
  EXPECT_FALSE(other == m);
  Model extra_edge = m;
  boost::add_edge(0, 3, Tensor{}, extra_edge.graph());
  EXPECT_FALSE(extra_edge == m);
}

TEST(Model, AMoveTakesTheGraphAndACopyIsDeep) {
  ModelBuilder b("mv", 2);
  const OpId x = b.input("x", {2, 4});
  b.relu("act", x);
  Model m = b.finish();
  const Graph* graph = &m.graph();
  const Model copy = m;
  EXPECT_NE(&copy.graph(), graph);  // its own ops
  Model moved = std::move(m);
  EXPECT_EQ(&moved.graph(), graph);  // the same ops, not copied
  EXPECT_TRUE(moved == copy);
  EXPECT_EQ(m.num_ops(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from model reads as empty
  m = moved;                   // and takes a copy again
  EXPECT_TRUE(m == copy);
  moved.op(1).name = "renamed";
  EXPECT_EQ(m.op(1).name, "act");
  EXPECT_EQ(Model().num_ops(), 0u);
}

TEST(Model, Totals) {
  const Model m = build_zoo_model("tiny_cnn", ModelOptions{.batch = 4});
  EXPECT_EQ(m.total_params(), 25578);
  EXPECT_EQ(m.total_macs_fwd(), 4 * m.macs_per_sample());
  EXPECT_EQ(m.num_weighted_layers(), 3);  // conv1, conv2, fc
  std::int64_t act = 0;
  for (OpId v = 0; v < m.num_ops(); ++v) act += m.op(v).activation_bytes;
  EXPECT_EQ(m.total_activation_bytes(), act);
}

}  // namespace
}  // namespace parasim::models
