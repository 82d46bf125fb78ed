// ONNX import: models written in C++ as torch.onnx exports them (onnx_fixtures.hpp) against the
// zoo op by op, the training-graph and pattern rules, and every refusal naming file and node.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "onnx_fixtures.hpp"
#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/onnx_import.hpp"
#include "parasim/models/zoo.hpp"
#include "support/input_error.hpp"

namespace parasim::models {
namespace {

using test::OnnxGraph;

Model load(const OnnxGraph& g, const std::string& name, LoadOptions o = {}) {
  return onnx_model_from_bytes(g.bytes(), name + ".onnx", name, o);
}

std::string load_error(const OnnxGraph& g, LoadOptions o = {}) {
  try {
    (void)onnx_model_from_bytes(g.bytes(), "bad.onnx", "bad", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

/// Everything that makes two ops cost the same: kind, shapes, attrs, params, MACs, bytes.
void expect_same_op(const Op& a, const Op& b) {
  SCOPED_TRACE(a.name + " vs " + b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.input_shapes, b.input_shapes);
  EXPECT_EQ(a.output_shape, b.output_shape);
  EXPECT_EQ(a.attrs, b.attrs);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.macs_fwd, b.macs_fwd);
  EXPECT_EQ(a.macs_bwd_data, b.macs_bwd_data);
  EXPECT_EQ(a.macs_bwd_weight, b.macs_bwd_weight);
  EXPECT_EQ(a.bytes_read, b.bytes_read);
  EXPECT_EQ(a.bytes_written, b.bytes_written);
  EXPECT_EQ(a.activation_bytes, b.activation_bytes);
  EXPECT_EQ(a.signature(), b.signature());
}

/// Same ops in the same order with the same edges; names may differ.
void expect_same_graph(const Model& a, const Model& b) {
  ASSERT_EQ(a.num_ops(), b.num_ops());
  for (OpId v = 0; v < a.num_ops(); ++v) {
    expect_same_op(a.op(v), b.op(v));
    EXPECT_EQ(a.inputs_of(v), b.inputs_of(v)) << a.op(v).name;
  }
}

TEST(OnnxImport, BuiltWithOnnx) {
  EXPECT_TRUE(onnx_import_built());
  EXPECT_TRUE(is_onnx_path("a/b/ResNet50.ONNX"));
  EXPECT_FALSE(is_onnx_path("model.json"));
}

TEST(OnnxImport, TorchvisionResNet50MatchesTheZooOpByOp) {
  const Model m = load(test::resnet50_onnx(), "resnet50", {.batch = 2});
  const Model zoo = build_zoo_model("resnet50", {.batch = 2});
  EXPECT_EQ(m.name(), "resnet50");
  EXPECT_EQ(m.total_params(), 25'557'032);
  EXPECT_EQ(m.total_macs_fwd(), zoo.total_macs_fwd());
  EXPECT_EQ(m.macs_per_sample(), 4'089'184'256);  // 4.09 GMACs per 224x224 image, torchvision's figure
  expect_same_graph(m, zoo);
  // Blocks from the torch.onnx scopes: the zoo's, so planning groups ops the same way.
  for (OpId v = 0; v < m.num_ops(); ++v) {
    const std::string& b = m.op(v).block;
    EXPECT_EQ(b.substr(0, b.find('/')), zoo.op(v).block) << m.op(v).name;
  }
  EXPECT_EQ(m.op(1).name, "/stem/conv1/Conv");
  EXPECT_EQ(m.op(m.num_ops() - 1).name, "loss");
}

TEST(OnnxImport, ImportedModelsRoundTripThroughTheModelFile) {
  for (const Model& m : {load(test::resnet50_onnx(), "resnet50", {.batch = 4}),
                         load(test::tiny_lstm_onnx("bidirectional"), "bilstm", {.batch = 3}),
                         load(test::attention_onnx(), "attn", {.batch = 2})})
    EXPECT_EQ(model_from_json(model_to_json(m), "round trip"), m) << m.name();
  // The planner rebuilds models at each per-device batch from batch 1 (with_batch); time-major LSTM
  // views carry the batch in their second or third axis.
  for (const auto& [g, name] :
       {std::pair{test::resnet50_onnx(), "resnet50"}, std::pair{test::tiny_lstm_onnx(), "lstm"},
        std::pair{test::tiny_lstm_onnx("bidirectional"), "bilstm"}, std::pair{test::attention_onnx(), "attn"}}) {
    const Model at1 = load(g, name);
    EXPECT_EQ(with_batch(at1, 8), load(g, name, {.batch = 8})) << name;
    EXPECT_EQ(model_from_json(model_to_json(at1), "file", {.batch = 8}), load(g, name, {.batch = 8})) << name;
  }
}

TEST(OnnxImport, SymbolicOrFixedBatchFollowsTheBatchOption) {
  const Model symbolic = load(test::resnet50_onnx(), "resnet50", {.batch = 32});
  expect_same_graph(symbolic, build_zoo_model("resnet50", {.batch = 32}));
  EXPECT_EQ(load(test::resnet50_onnx(), "resnet50").batch(), 1);                 // symbolic, no option: 1
  EXPECT_EQ(load(test::resnet50_onnx(std::int64_t{4}), "resnet50").batch(), 4);  // fixed, no option: the file's
  // Exported with a fixed batch of 1: --batch 8 replaces it.
  const Model fixed = load(test::resnet50_onnx(std::int64_t{1}), "resnet50", {.batch = 8});
  expect_same_graph(fixed, build_zoo_model("resnet50", {.batch = 8}));
  const Model f16 = load(test::resnet50_onnx(), "resnet50", {.batch = 4, .dtype = DType::F16});
  expect_same_graph(f16, build_zoo_model("resnet50", {.batch = 4, .dtype = DType::F16}));
}

TEST(OnnxImport, MlpWithInlineWeightsMatchesTheBuilder) {
  const Model m = load(test::mlp_onnx(), "mlp", {.batch = 16});
  ModelBuilder b("mlp", 16);
  OpId x = b.input("x", {16, 1, 28, 28});
  x = b.flatten("flatten", x);
  x = b.linear("fc1", x, 784, 256);
  x = b.relu("act", x);
  x = b.linear("fc2", x, 256, 10);
  b.cross_entropy("loss", x);
  const Model ref = b.finish();
  EXPECT_EQ(m.total_params(), 784 * 256 + 256 + 256 * 10 + 10);  // 203,530
  EXPECT_EQ(m, ref);  // names too: the nodes are called like the builder's ops
}

TEST(OnnxImport, TinyLstmMatchesTheZooInEveryWeightedOp) {
  const Model m = load(test::tiny_lstm_onnx(), "tiny_lstm", {.batch = 4});
  const Model zoo = build_zoo_model("tiny_lstm", {.batch = 4});
  EXPECT_EQ(m.total_params(), 424'424);
  EXPECT_EQ(m.total_params(), zoo.total_params());
  EXPECT_EQ(m.total_macs_fwd(), zoo.total_macs_fwd());
  EXPECT_EQ(m.total_activation_bytes(), zoo.total_activation_bytes());
  // The time-major transposes and the squeezed direction axis are views (Reshape, no cost); every
  // other op matches the zoo's in order.
  std::vector<OpId> costed;
  for (OpId v = 0; v < m.num_ops(); ++v)
    if (m.op(v).kind != OpKind::Reshape) costed.push_back(v);
  ASSERT_EQ(costed.size(), zoo.num_ops());
  for (std::size_t i = 0; i < costed.size(); ++i) expect_same_op(m.op(costed[i]), zoo.op(i));
  EXPECT_EQ(m.op(*m.find_op("/decoder/MatMul")).attrs.bias, true);  // the Add folded in as the bias
  EXPECT_FALSE(m.find_op("/decoder/Add"));
}

TEST(OnnxImport, BidirectionalLstmIsTwoLayersConcatenated) {
  const Model m = load(test::tiny_lstm_onnx("bidirectional"), "bilstm", {.batch = 2});
  const OpId fwd = *m.find_op("/lstm.0/LSTM.forward");
  const OpId rev = *m.find_op("/lstm.0/LSTM.reverse");
  EXPECT_FALSE(m.op(fwd).attrs.reverse);
  EXPECT_TRUE(m.op(rev).attrs.reverse);
  // Per direction 4h(in + h) + 8h, as ONNX's W, R and B hold them.
  EXPECT_EQ(m.op(fwd).params, 4 * 128 * (64 + 128) + 8 * 128);
  EXPECT_EQ(m.op(*m.find_op("/lstm.1/LSTM.forward")).params, 4 * 128 * (256 + 128) + 8 * 128);
  EXPECT_EQ(m.op(*m.find_op("/lstm.0/LSTM.concat")).output_shape, (Shape{2, 16, 256}));
  EXPECT_EQ(m.total_params(), 1000 * 64 + 2 * (4 * 128 * 192 + 1024) + 2 * (4 * 128 * 384 + 1024) + 256 * 1000 + 1000);
}

TEST(OnnxImport, TrainingGraphKeepsTheForwardAndItsLoss) {
  OnnxGraph g = test::mlp_onnx();
  g.input("labels", {std::string("batch")}, onnx::TensorProto::INT64);
  g.node("SoftmaxCrossEntropyLoss", "loss", {"logits", "labels"}, {"loss_value", "log_prob"});
  // What a training export adds after the loss: gradients and the optimizer update.
  auto& grad = g.node("Gradient", "grad", {"x", "labels"}, {"fc1.weight_grad"});
  grad.set_domain("ai.onnx.preview.training");
  auto& relu_grad = g.node("ReluGrad", "act_grad", {"fc1.weight_grad", "h"}, {"h_grad"});
  relu_grad.set_domain("com.microsoft");
  auto& update = g.node("Momentum", "update", {"fc1.weight", "fc1.weight_grad"}, {"fc1.weight_new"});
  update.set_domain("ai.onnx.preview.training");
  g.output("loss_value");
  const Model m = load(g, "mlp", {.batch = 16});
  const Model inference = load(test::mlp_onnx(), "mlp", {.batch = 16});
  EXPECT_EQ(m, inference);  // the same forward; the file's own loss stands where the appended one would
  EXPECT_EQ(m.op(m.num_ops() - 1).kind, OpKind::CrossEntropy);
  EXPECT_EQ(m.num_ops(), 6u);  // the labels input is used only by the loss: no op
}

TEST(OnnxImport, TrainingGraphWithoutARecognisedLossIsRefused) {
  OnnxGraph g = test::mlp_onnx();
  g.node("ReluGrad", "act_grad", {"logits", "h"}, {"h_grad"}).set_domain("com.microsoft");
  EXPECT_EQ(load_error(g),
            "bad.onnx: a training graph (gradient or optimizer nodes) without a loss parasim recognises "
            "(SoftmaxCrossEntropyLoss or NegativeLogLikelihoodLoss)");
}

// onnxruntime's fused self-attention: unidirectional = 1 is a causal mask, which fused kernels
// price at half the work; without it the attention is bidirectional.
TEST(OnnxImport, OnnxruntimeAttentionReadsItsMask) {
  for (const std::int64_t unidirectional : {0, 1}) {
    OnnxGraph g;
    g.input("x", {std::int64_t{2}, std::int64_t{16}, std::int64_t{32}});
    g.weight("w", {32, 96});
    auto& attention = g.node("Attention", "attn", {"x", "w"}, {"y"});
    attention.set_domain("com.microsoft");
    OnnxGraph::attr(attention, "num_heads", std::int64_t{4});
    if (unidirectional) OnnxGraph::attr(attention, "unidirectional", unidirectional);
    g.output("y");
    const Model m = load(g, "ort_attention");
    EXPECT_EQ(m.op(*m.find_op("attn")).attrs.causal, unidirectional == 1);
  }
}

TEST(OnnxImport, TorchScopesBecomeBlocks) {
  OnnxGraph g;
  g.input("x", {std::int64_t{2}, std::int64_t{8}});
  g.weight("w", {8, 8});
  g.node("MatMul", "/encoder/encoder.layer.0/attention/MatMul", {"x", "w"}, {"y"});
  g.node("Relu", "/encoder/encoder.layer.0/Relu", {"y"}, {"z"});
  g.node("Relu", "plain", {"z"}, {"out"});
  g.output("out");
  const Model m = load(g, "scopes");
  EXPECT_EQ(m.op(1).block, "encoder.layer.0/attention");
  EXPECT_EQ(m.op(2).block, "encoder.layer.0");
  EXPECT_EQ(m.op(3).block, "");
}

TEST(OnnxImport, ErfGeluAndShapeArithmeticFold) {
  // torch's GELU without the Gelu op: x * 0.5 * (1 + erf(x / sqrt 2)); and a Reshape whose shape is
  // computed from Shape -> Gather -> Unsqueeze -> Concat, as dynamic-batch exports write it.
  OnnxGraph g(13);
  g.input("x", {std::string("N"), std::int64_t{4}, std::int64_t{6}});
  g.scalar("sqrt2", 1.4142135f);
  g.scalar("one", 1.0f);
  g.scalar("half", 0.5f);
  g.node("Div", "/act/Div", {"x", "sqrt2"}, {"d"});
  g.node("Erf", "/act/Erf", {"d"}, {"e"});
  g.node("Add", "/act/Add", {"e", "one"}, {"p"});
  g.node("Mul", "/act/Mul", {"x", "p"}, {"m"});
  g.node("Mul", "/act/Mul_1", {"m", "half"}, {"gelu"});
  g.node("Shape", "shape", {"gelu"}, {"s"});
  g.ints("zero", {0});
  OnnxGraph::attr(g.node("Gather", "batch_dim", {"s", "zero"}, {"n"}), "axis", std::int64_t{0});
  g.ints("minus_one", {-1});
  OnnxGraph::attr(g.node("Concat", "target", {"n", "minus_one"}, {"shape2"}), "axis", std::int64_t{0});
  g.node("Reshape", "flatten", {"gelu", "shape2"}, {"flat"});
  g.output("flat");
  const Model m = load(g, "gelu", {.batch = 3});
  ASSERT_EQ(m.num_ops(), 4u);  // x, gelu, flatten, loss
  EXPECT_EQ(m.op(1).kind, OpKind::Gelu);
  EXPECT_EQ(m.op(1).name, "/act/Mul_1");
  EXPECT_EQ(m.op(2).output_shape, (Shape{3, 24}));
}

TEST(OnnxImport, EagerAttentionBecomesOneAttentionOp) {
  const Model m = load(test::attention_onnx(), "attn", {.batch = 2});
  ModelBuilder b("attn", 2);
  const OpId x = b.input("x", {2, 8, 16});
  const OpId q = b.linear("q", x, 16, 16), k = b.linear("k", x, 16, 16), v = b.linear("v", x, 16, 16);
  Op core;
  core.kind = OpKind::Attention;
  core.name = "core";
  core.attrs.heads = 4;
  core.attrs.p = static_cast<double>(0.1f);
  const OpId a = b.add_op(core, {q, k, v});
  b.cross_entropy("loss", b.linear("out", a, 16, 16));
  const Model ref = b.finish();
  expect_same_graph(m, ref);
  EXPECT_EQ(m.op(4).name, "/attn/Softmax");
  EXPECT_EQ(m.op(4).block, "attn");
  EXPECT_EQ(m.op(4).macs_fwd, 2 * 8 * 8 * (16 + 16));  // Q K^T and P V over 4 heads of 4
  // Without the heads merged back the pattern is not attention: batched matmuls and a softmax,
  // with the same MACs.
  OnnxGraph open = test::attention_onnx();
  auto* nodes = open.proto().mutable_graph()->mutable_node();
  nodes->DeleteSubrange(nodes->size() - 4, 4);  // merge Transpose, Reshape, out MatMul, Add
  open.proto().mutable_graph()->mutable_output(0)->set_name("context");
  const Model unfused = load(open, "attn", {.batch = 2});
  EXPECT_FALSE(unfused.find_op("/attn/Softmax") &&
               unfused.op(*unfused.find_op("/attn/Softmax")).kind == OpKind::Attention);
  EXPECT_EQ(unfused.op(*unfused.find_op("/attn/MatMul")).kind, OpKind::BatchedMatmul);
  EXPECT_EQ(
      unfused.op(*unfused.find_op("/attn/MatMul")).macs_fwd + unfused.op(*unfused.find_op("/attn/MatMul_1")).macs_fwd,
      m.op(4).macs_fwd);
}

TEST(OnnxImport, GatherOfMaskedPositionsBecomesAGatherOp) {
  // BERT's masked-LM head input: index_select of 3 of 8 positions along axis 1 of [2, 8, 4].
  OnnxGraph g;
  g.input("h", {std::int64_t{2}, std::int64_t{8}, std::int64_t{4}});
  g.ints("masked", {1, 4, 6});
  OnnxGraph::attr(g.node("Gather", "select", {"h", "masked"}, {"y"}), "axis", std::int64_t{1});
  g.output("y");
  const Model m = load(g, "gather", {.batch = 2});
  const Op& op = m.op(*m.find_op("select"));
  EXPECT_EQ(op.kind, OpKind::Gather);
  EXPECT_EQ(op.attrs.positions, 3);
  EXPECT_EQ(op.output_shape, (Shape{2, 3, 4}));
  OnnxGraph axis2;
  axis2.input("h", {std::int64_t{2}, std::int64_t{8}, std::int64_t{4}});
  axis2.ints("masked", {1, 2});
  OnnxGraph::attr(axis2.node("Gather", "select", {"h", "masked"}, {"y"}), "axis", std::int64_t{2});
  axis2.output("y");
  EXPECT_EQ(load_error(axis2),
            "bad.onnx: node \"select\" (Gather): Gather from an activation other than 1-D constant indices along "
            "axis 1 of a [B, T, D] tensor is not supported (docs/models.md lists the ONNX ops parasim maps)");
  OnnxGraph outside;
  outside.input("h", {std::int64_t{2}, std::int64_t{8}, std::int64_t{4}});
  outside.ints("masked", {1, 8});
  OnnxGraph::attr(outside.node("Gather", "select", {"h", "masked"}, {"y"}), "axis", std::int64_t{1});
  outside.output("y");
  EXPECT_EQ(load_error(outside), "bad.onnx: node \"select\" (Gather): index 8 out of range for 8 positions");
}

TEST(OnnxImport, SymbolicSequenceTakesTheSequenceLength) {
  OnnxGraph g;
  g.input("tokens", {std::string("batch"), std::string("seq")}, onnx::TensorProto::INT64);
  g.weight("emb", {100, 8});
  g.node("Gather", "embed", {"emb", "tokens"}, {"e"});
  g.output("e");
  EXPECT_EQ(load_error(g),
            "bad.onnx: graph input \"tokens\": dimension 1 is symbolic (\"seq\"); give the sequence "
            "length (--seq-len) or export with a fixed shape");
  const Model m = load(g, "emb", {.batch = 2, .seq_len = 5});
  EXPECT_EQ(m.op(1).output_shape, (Shape{2, 5, 8}));
  EXPECT_EQ(load_error(test::mlp_onnx(), {.seq_len = 5}),
            "bad.onnx: a sequence length applies to ONNX graphs with a symbolic sequence dimension; this one fixes its "
            "shapes");
}

// ------------------------------------------------------------------ malformed files

TEST(OnnxImport, NotProtobufIsRefused) {
  try {
    (void)onnx_model_from_bytes("\xff\xff\xff\xff not protobuf", "junk.onnx", "junk");
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "junk.onnx: not an ONNX model (the bytes do not parse as an onnx.ModelProto protobuf)");
  }
  try {
    (void)onnx_model_from_bytes("", "empty.onnx", "empty");
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "empty.onnx: expected an ONNX model with a graph, found none");
  }
}

TEST(OnnxImport, MissingInitializerNamesTheNodeAndInput) {
  OnnxGraph g = test::mlp_onnx();
  g.proto().mutable_graph()->mutable_initializer()->DeleteSubrange(2, 1);  // fc2.weight
  EXPECT_EQ(load_error(g),
            "bad.onnx: node \"fc2\" (Gemm): input \"fc2.weight\" is missing: it is neither a graph "
            "input, an initializer nor a node's output");
}

TEST(OnnxImport, UnsupportedOpNamesTheNode) {
  OnnxGraph g = test::mlp_onnx();
  g.node("NonMaxSuppression", "nms", {"logits"}, {"boxes"});
  EXPECT_EQ(load_error(g),
            "bad.onnx: node \"nms\" (NonMaxSuppression): op NonMaxSuppression is not supported "
            "(docs/models.md lists the ONNX ops parasim maps)");
  OnnxGraph asym = test::resnet50_onnx();
  auto* pool = asym.proto().mutable_graph()->mutable_node(3);
  ASSERT_EQ(pool->op_type(), "MaxPool");
  pool->mutable_attribute(2)->set_ints(2, 0);  // pads 1, 1, 0, 1
  EXPECT_EQ(load_error(asym),
            "bad.onnx: node \"/stem/maxpool/MaxPool\" (MaxPool): asymmetric padding [1, 1, 0, 1] is "
            "not supported (docs/models.md lists the ONNX ops parasim maps)");
}

TEST(OnnxImport, BadShapesNameTheNode) {
  OnnxGraph g = test::resnet50_onnx();
  auto* w = g.proto().mutable_graph()->mutable_initializer(0);  // stem conv1.weight [64, 3, 7, 7]
  w->set_dims(1, 4);
  EXPECT_EQ(load_error(g),
            "bad.onnx: node \"/stem/conv1/Conv\" (Conv): weight W [64, 4, 7, 7] expects 4 x group (1) "
            "input channels, the input [1, 3, 224, 224] has 3");
  OnnxGraph mlp = test::mlp_onnx();
  mlp.proto().mutable_graph()->mutable_initializer(2)->set_dims(1, 100);  // fc2.weight [10, 100], no data change
  EXPECT_EQ(load_error(mlp), "bad.onnx: initializer fc2.weight: holds 2560 values, expected 1000 for dims [10, 100]");
  OnnxGraph small = test::mlp_onnx(28, 256, 10);
  small.proto()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(2)
      ->set_dim_value(27);
  EXPECT_EQ(load_error(small),
            "bad.onnx: node \"fc1\" (Gemm): weight B [256, 784] (transB) expects 784 input "
            "features, A [1, 756] has 756");
}

TEST(OnnxImport, NodesOutOfOrderOrFromTheBackwardAreNamed) {
  OnnxGraph g = test::mlp_onnx();
  auto* nodes = g.proto().mutable_graph()->mutable_node();
  nodes->SwapElements(1, 2);  // Relu before the Gemm that feeds it
  EXPECT_EQ(load_error(g),
            "bad.onnx: node \"act\" (Relu): input \"h\" is produced by this or a later node (ONNX "
            "requires nodes in topological order)");
}

TEST(OnnxImport, UnavailableOutputsAreNamedWhereUsed) {
  OnnxGraph g = test::tiny_lstm_onnx();
  // Feed the first LSTM's last hidden state on instead of its sequence output.
  g.proto().mutable_graph()->mutable_node(3)->set_input(0, "lstm.0_h");
  EXPECT_EQ(load_error(g),
            "bad.onnx: node \"/lstm.0/Squeeze\" (Squeeze): input \"lstm.0_h\" is the last hidden "
            "state Y_h of node \"/lstm.0/LSTM\" (LSTM), which parasim does not model");
}

TEST(OnnxImport, FileLoadsThroughLoadModelFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "parasim_onnx_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / "resnet50.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    out << test::resnet50_onnx().bytes();
  }
  const Model m = load_model_file(path, {.batch = 2});
  EXPECT_EQ(m.name(), "resnet50");
  EXPECT_EQ(m.total_params(), 25'557'032);
  EXPECT_EQ(test_support::input_error([&] { (void)load_model_file(dir / "missing.onnx"); }),
            (dir / "missing.onnx").string() + ": cannot open the file");
  std::filesystem::remove_all(dir);
}

// ------------------------------------------------------------------ files checked in for other tests

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OnnxImport, CheckedInFilesAreTheFixtures) {
  // tests/cli/data/*.onnx (the CLI's plan-equals-zoo and refusal cases) and the fuzz seeds are these
  // fixtures serialized; PARASIM_REGENERATE_ONNX=1 rewrites them after a fixture changes.
  const std::filesystem::path root = PARASIM_SOURCE_DIR;
  OnnxGraph unsupported = test::mlp_onnx(4, 8, 4);
  unsupported.node("NonMaxSuppression", "nms", {"logits"}, {"boxes"});
  const std::vector<std::pair<std::filesystem::path, std::string>> files = {
      {root / "tests/cli/data/resnet50.onnx", test::resnet50_onnx().bytes()},
      {root / "tests/cli/data/unsupported_op.onnx", unsupported.bytes()},
      {root / "tests/fuzz/corpus/onnx/mlp_inline.onnx", test::mlp_onnx(4, 8, 4).bytes()},
      {root / "tests/fuzz/corpus/onnx/tiny_lstm.onnx", test::tiny_lstm_onnx().bytes()},
  };
  const bool regenerate = std::getenv("PARASIM_REGENERATE_ONNX") != nullptr;
  for (const auto& [path, bytes] : files) {
    if (regenerate) {
      std::filesystem::create_directories(path.parent_path());
      std::ofstream(path, std::ios::binary) << bytes;
    }
    EXPECT_TRUE(read_bytes(path) == bytes) << path << " differs from its fixture; rerun with PARASIM_REGENERATE_ONNX=1";
  }
}

}  // namespace
}  // namespace parasim::models
