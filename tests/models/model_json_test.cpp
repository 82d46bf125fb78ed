// parasim.model/1: round trips of every zoo model, user files, batch/dtype overrides and the
// exact messages for malformed files.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {
namespace {

const std::filesystem::path kData = PARASIM_MODELS_TEST_DATA_DIR;

std::string load_error(const std::string& text) {
  try {
    (void)model_from_json(parse_json_text(text, "bad.json"), "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// A model document with `ops` (a JSON array as text) spliced in.
std::string doc(const std::string& ops) {
  return R"({"schema": "parasim.model/1", "name": "m", "batch": 1, "dtype": "fp32", "ops": )" + ops + "}";
}

TEST(ModelJson, EveryZooModelRoundTripsExactly) {
  for (const ZooEntry& e : zoo_entries()) {
    SCOPED_TRACE(e.name);
    const Model m = build_zoo_model(e.name, ModelOptions{.batch = 2});
    const std::string text = dump_json(model_to_json(m));
    const Model back = model_from_json(parse_json_text(text, e.name), e.name);
    EXPECT_TRUE(back == m);
    EXPECT_EQ(dump_json(model_to_json(back)), text);  // and the bytes are stable
  }
}

// Decoders' self-attention is causal, BERT's is not; the file says so only where it is.
TEST(ModelJson, CausalAttentionRoundTripsAndIsWrittenOnlyWhenSet) {
  for (const auto& [name, causal] : {std::pair{"gpt2", true}, std::pair{"bert_large", false}}) {
    const Model m = build_zoo_model(name, ModelOptions{.batch = 1});
    const models::Op& core = m.op(*m.find_op("h.0.attn.core"));
    EXPECT_EQ(core.attrs.causal, causal) << name;
    const nlohmann::json j = model_to_json(m);
    for (const auto& op : j["ops"]) {
      if (op["name"] == "h.0.attn.core") {
        EXPECT_EQ(op["attrs"].contains("causal"), causal) << name;
      }
    }
  }
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8, 12]},
                                {"name": "a", "kind": "attention", "inputs": ["x"],
                                 "attrs": {"heads": 2, "causal": 1}}])")),
            "bad.json: $.ops[1].attrs.causal: expected true or false, found number 1");
}

TEST(ModelJson, GatherRoundTripsAndNeedsPositions) {
  ModelBuilder b("m", 2);
  b.cross_entropy("loss", b.gather("g", b.linear("h", b.input("x", {2, 8, 4}), 4, 4), 3));
  const Model m = b.finish();
  const nlohmann::json j = model_to_json(m);
  bool saw = false;
  for (const auto& op : j["ops"])
    if (op["kind"] == "gather") saw = op["attrs"] == nlohmann::json{{"positions", 3}};
  EXPECT_TRUE(saw);
  EXPECT_TRUE(model_from_json(j, "round trip") == m);
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8, 4]},
                                {"name": "g", "kind": "gather", "inputs": ["x"]}])")),
            "bad.json: $.ops[1]: missing required field \"attrs\"");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8, 4]},
                                {"name": "g", "kind": "gather", "inputs": ["x"], "attrs": {"positions": 0}}])")),
            "bad.json: $.ops[1].attrs.positions: expected an integer >= 1, found number 0");
}

TEST(ModelJson, AFusedLossRoundTripsAndKeepsTheLogitsNotAnFp32Copy) {
  ModelBuilder b("m", 2, DType::BF16);
  b.cross_entropy("loss", b.linear("head", b.input("x", {2, 4}), 4, 100));
  Model m = b.finish();
  const OpId loss = *m.find_op("loss");
  EXPECT_FALSE(model_to_json(m)["ops"][2].contains("attrs"));  // unfused: the file as before
  set_fused_loss(m, true);
  // 2 x 100 bf16 logits kept as they are plus an fp32 log-sum-exp per row; the backward writes a
  // bf16 gradient; nothing held beyond that in the forward.
  EXPECT_EQ(m.op(loss).activation_bytes, 2 * 100 * 2 + 2 * 4);
  EXPECT_EQ(m.op(loss).transient_fwd_bytes, 0);
  EXPECT_EQ(m.op(loss).transient_bwd_bytes, 2 * 100 * 2);
  const nlohmann::json j = model_to_json(m);
  EXPECT_EQ(j["ops"][2]["attrs"], (nlohmann::json{{"fused", true}}));
  EXPECT_TRUE(model_from_json(j, "round trip") == m);
  set_fused_loss(m, false);
  EXPECT_EQ(m.op(loss).activation_bytes, 2 * 100 * 4);  // the fp32 log-softmax again
}

TEST(ModelJson, SaveAndLoadFile) {
  const auto path = std::filesystem::temp_directory_path() / "parasim_models_test_gnmt.json";
  const Model m = build_zoo_model("gnmt", ModelOptions{.dtype = DType::BF16});
  save_model_file(m, path);
  EXPECT_TRUE(load_model_file(path) == m);
  std::filesystem::remove(path);
}

TEST(ModelJson, UserFileIsInferredNotTrusted) {
  const Model m = load_model_file(kData / "mlp.json");
  EXPECT_EQ(m.name(), "mlp");
  EXPECT_EQ(m.dataset(), "mnist");
  EXPECT_EQ(m.num_ops(), 6u);
  EXPECT_EQ(m.total_params(), 784 * 256 + 256 + 256 * 10);
  EXPECT_EQ(m.total_macs_fwd(), 32 * (784 * 256 + 256 * 10));
  const Op& fc2 = m.op(*m.find_op("fc2"));
  EXPECT_EQ(fc2.block, "head");
  EXPECT_EQ(fc2.output_shape, (Shape{32, 10}));
  EXPECT_EQ(m.op(*m.find_op("fc1")).macs_bwd_data, 0);  // fed by the input
  EXPECT_DOUBLE_EQ(m.op(*m.find_op("drop1")).attrs.p, 0.2);
}

TEST(ModelJson, BatchAndDtypeOverrides) {
  const Model m = load_model_file(kData / "mlp.json", LoadOptions{.batch = 4, .dtype = DType::F16});
  EXPECT_EQ(m.batch(), 4);
  EXPECT_EQ(m.dtype(), DType::F16);
  EXPECT_EQ(m.op(0).output_shape, (Shape{4, 784}));
  EXPECT_EQ(m.total_macs_fwd(), 4 * (784 * 256 + 256 * 10));
  // with_batch re-infers any model; for zoo models it equals building at that batch.
  for (const char* name : {"resnet50", "gpt2", "gnmt", "inception_v3"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(with_batch(build_zoo_model(name), 8) == build_zoo_model(name, ModelOptions{.batch = 8}));
  }
  EXPECT_TRUE(with_batch(build_zoo_model("tiny_cnn"), 1, DType::BF16) ==
              build_zoo_model("tiny_cnn", ModelOptions{.dtype = DType::BF16}));
}

TEST(ModelJson, WithBatchEqualsReloadingTheDocumentAtThatBatch) {
  // with_batch() rebuilds op by op instead of writing and parsing parasim.model/1; for every zoo
  // model, at a smaller and a larger batch and another dtype, the result is the loader's.
  for (const ZooEntry& entry : zoo_entries()) {
    if (entry.name == "gpt3_175b" || entry.name == "turing_530b") continue;  // same builder as gpt2, 96-105 layers
    SCOPED_TRACE(entry.name);
    const Model base = build_zoo_model(entry.name, ModelOptions{.batch = 2});
    for (const auto& [batch, dtype] : std::vector<std::pair<std::int64_t, DType>>{{1, DType::F32}, {6, DType::BF16}}) {
      const Model reloaded = model_from_json(model_to_json(base), "m", LoadOptions{.batch = batch, .dtype = dtype});
      EXPECT_TRUE(with_batch(base, batch, dtype) == reloaded) << "batch " << batch;
    }
  }
  try {
    (void)with_batch(build_zoo_model("tiny_cnn"), 0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "model tiny_cnn: batch override must be >= 1, found 0");
  }
}

TEST(ModelJson, OpsMayComeInAnyOrder) {
  const Model sorted = model_from_json(parse_json_text(doc(R"([
      {"name": "x", "kind": "input", "output_shape": [1, 8]},
      {"name": "h", "kind": "linear", "inputs": ["x"], "attrs": {"out_features": 4}},
      {"name": "loss", "kind": "cross_entropy", "inputs": ["h"]}])"), "a.json"), "a.json");
  const Model shuffled = model_from_json(parse_json_text(doc(R"([
      {"name": "loss", "kind": "cross_entropy", "inputs": ["h"]},
      {"name": "h", "kind": "linear", "inputs": ["x"], "attrs": {"out_features": 4}},
      {"name": "x", "kind": "input", "output_shape": [1, 8]}])"), "b.json"), "b.json");
  EXPECT_TRUE(sorted == shuffled);  // stored in topological order
}

TEST(ModelJson, DefaultsFollowPyTorch) {
  const Model m = model_from_json(parse_json_text(doc(R"([
      {"name": "x", "kind": "input", "output_shape": [1, 3, 8, 8]},
      {"name": "c", "kind": "conv2d", "inputs": ["x"], "attrs": {"out_channels": 4, "kernel_size": [3, 1]}},
      {"name": "p", "kind": "max_pool2d", "inputs": ["c"], "attrs": {"kernel_size": 2}},
      {"name": "d", "kind": "dropout", "inputs": ["p"]},
      {"name": "r", "kind": "reshape", "inputs": ["d"], "output_shape": [1, -1]}])"), "d.json"), "d.json");
  const Op& c = m.op(1);
  EXPECT_TRUE(c.attrs.bias);
  EXPECT_EQ(c.output_shape, (Shape{1, 4, 6, 8}));
  EXPECT_EQ(m.op(2).output_shape, (Shape{1, 4, 3, 4}));  // pool stride defaults to the kernel
  EXPECT_DOUBLE_EQ(m.op(3).attrs.p, 0.5);
  EXPECT_EQ(m.op(4).output_shape, (Shape{1, 48}));
}

TEST(ModelJsonErrors, ExactMessages) {
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "c", "kind": "conv3d", "inputs": ["x"]}])")),
            "bad.json: $.ops[1].kind: expected an op kind (one of input, conv2d, linear, matmul, batched_matmul, "
            "lstm, embedding, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm, layer_norm, relu, gelu, "
            "tanh, sigmoid, add, mul, concat, dropout, softmax, cross_entropy, sampled_softmax, reshape, "
            "attention, rms_norm, swiglu, squared_relu, rotary, experts, gather), found string \"conv3d\"");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "r", "inputs": ["x"]}])")),
            "bad.json: $.ops[1]: missing required field \"kind\"");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input"}])")),
            "bad.json: $.ops[0]: missing required field \"output_shape\"");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "r", "kind": "relu", "inputs": ["y"]}])")),
            "bad.json: $.ops[1].inputs[0]: expected the name of an op in this model, found string \"y\"");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "r", "kind": "relu", "inputs": ["x"]},
                                {"name": "x", "kind": "relu", "inputs": ["r"]}])")),
            "bad.json: $.ops[2].name: duplicate op name \"x\" (first defined at $.ops[0])");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 3, 8, 8]},
                                {"name": "c", "kind": "conv2d", "inputs": ["x"],
                                 "attrs": {"out_channels": 4, "kernel_size": 3, "stride": -1}}])")),
            "bad.json: $.ops[1].attrs.stride: expected an integer >= 1, found number -1");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 3, 8, 8]},
                                {"name": "c", "kind": "conv2d", "inputs": ["x"],
                                 "attrs": {"out_channels": 4, "kernel_size": [3, 3, 3]}}])")),
            "bad.json: $.ops[1].attrs.kernel_size: expected an integer or [height, width], found an array");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 3, 8, 8]},
                                {"name": "c", "kind": "conv2d", "inputs": ["x"],
                                 "attrs": {"out_channels": 4, "kernel_size": 3, "strides": 2}}])")),
            "bad.json: $.ops[1].attrs: unknown attribute for conv2d \"strides\"; known: out_channels, kernel_size, "
            "stride, padding, dilation, groups, bias");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8], "input": ["y"]}])")),
            "bad.json: $.ops[0]: unknown op field \"input\"; known: name, kind, block, inputs, attrs, output_shape");
  EXPECT_EQ(load_error(doc(R"([{"name": "a", "kind": "input", "output_shape": [1, 4]},
                                {"name": "b", "kind": "input", "output_shape": [1, 5]},
                                {"name": "s", "kind": "add", "inputs": ["a", "b"]}])")),
            "bad.json: $.ops[2]: add \"s\" with inputs [1, 4], [1, 5]: expected all inputs to have the same shape");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "h", "kind": "linear", "inputs": ["x"], "attrs": {"out_features": 4},
                                 "output_shape": [1, 5]}])")),
            "bad.json: $.ops[1].output_shape: expected [1, 4] (inferred from the inputs and attributes), found [1, 5]");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "d", "kind": "dropout", "inputs": ["x"], "attrs": {"p": 1.0}}])")),
            "bad.json: $.ops[1].attrs.p: expected a probability in [0, 1), found number 1.0");
  EXPECT_EQ(load_error(doc(R"([{"name": "x", "kind": "input", "output_shape": [1, 8]},
                                {"name": "h", "kind": "linear", "inputs": ["x"],
                                 "attrs": {"out_features": 4, "shares_weights_with": "nope"}}])")),
            "bad.json: $.ops[1].attrs.shares_weights_with: expected the name of another op in this model, found "
            "string \"nope\"");
  EXPECT_EQ(load_error(doc("[]")), "bad.json: $.ops: expected a non-empty array of ops, found an array");
  EXPECT_EQ(load_error(R"({"schema": "parasim.model/2", "name": "m", "batch": 1, "dtype": "fp32", "ops": []})"),
            "bad.json: $.schema: expected \"parasim.model/1\", found string \"parasim.model/2\"");
  EXPECT_EQ(load_error(R"({"schema": "parasim.model/1", "name": "m", "batch": 1, "dtype": "fp64", "ops": []})"),
            "bad.json: $.dtype: expected a dtype (fp32, fp16, bf16 or fp8), found string \"fp64\"");
  EXPECT_EQ(load_error(R"({"schema": "parasim.model/1", "name": "m", "batch": 0, "dtype": "fp32", "ops": []})"),
            "bad.json: $.batch: expected an integer >= 1, found number 0");
}

TEST(ModelJson, TiedWeightsAndTheirOrder) {
  const Model m = model_from_json(parse_json_text(doc(R"([
      {"name": "ids", "kind": "input", "output_shape": [2, 5]},
      {"name": "wte", "kind": "embedding", "inputs": ["ids"], "attrs": {"vocab": 100, "embedding_dim": 8}},
      {"name": "head", "kind": "linear", "inputs": ["wte"], "attrs": {"shares_weights_with": "wte", "bias": false}},
      {"name": "loss", "kind": "cross_entropy", "inputs": ["head"]}])"), "t.json"), "t.json");
  EXPECT_EQ(m.total_params(), 800);
  EXPECT_EQ(m.op(2).output_shape, (Shape{2, 5, 100}));
  // An embedding cannot borrow the weight of a layer that consumes it.
  EXPECT_EQ(load_error(doc(R"([
      {"name": "ids", "kind": "input", "output_shape": [2, 5]},
      {"name": "emb", "kind": "embedding", "inputs": ["ids"], "attrs": {"shares_weights_with": "head"}},
      {"name": "head", "kind": "linear", "inputs": ["emb"],
       "attrs": {"in_features": 8, "out_features": 100, "bias": false}}])")),
            "bad.json: $.ops[1].attrs.shares_weights_with: expected an op that does not depend on this one, found "
            "string \"head\"");
}

TEST(ModelJsonErrors, CycleNamesTheOps) {
  try {
    (void)load_model_file(kData / "cycle.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (kData / "cycle.json").string() + ": $.ops: model loop has a cycle: a -> b -> c -> a");
  }
  EXPECT_EQ(load_error(doc(R"([{"name": "r", "kind": "relu", "inputs": ["r"]}])")),
            "bad.json: $.ops: model m has a cycle: r -> r");
}

TEST(ModelJsonErrors, FileProblems) {
  EXPECT_THROW((void)load_model_file(kData / "does_not_exist.json"), InputError);
  const auto path = std::filesystem::temp_directory_path() / "parasim_models_test_broken.json";
  std::filesystem::remove(path);
  {
    std::ofstream out(path);
    out << "{\"schema\": \"parasim.model/1\",\n  \"ops\": [}";
  }
  try {
    (void)load_model_file(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":2:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace parasim::models
