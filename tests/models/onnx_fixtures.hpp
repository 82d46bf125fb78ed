// ONNX models written in C++ the way torch.onnx exports them, for the ONNX import tests.
//
// OnnxGraph wraps onnx::ModelProto with one call per node; the functions below build the
// networks the tests compare with the zoo. Weights are declared as external data (dims only, as
// exporters do for models over 2 GiB), so a ResNet-50 file stays a few tens of kilobytes; the
// MLP stores its weights inline to cover that path too.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parasim::test {

/// A graph input dimension: a fixed size or a symbol ("N").
using OnnxDim = std::variant<std::int64_t, std::string>;

class OnnxGraph {
 public:
  explicit OnnxGraph(std::int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("parasim-tests");
    auto* op_set = model_.add_opset_import();
    op_set->set_domain("");
    op_set->set_version(opset);
    model_.mutable_graph()->set_name("main_graph");
  }

  void input(const std::string& name, const std::vector<OnnxDim>& dims, int elem_type = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    for (const OnnxDim& d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (const auto* v = std::get_if<std::int64_t>(&d)) dim->set_dim_value(*v);
      else dim->set_dim_param(std::get<std::string>(d));
    }
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }

  /// A float weight stored as external data: dims only.
  void weight(const std::string& name, const std::vector<std::int64_t>& dims) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
  }
  /// A float weight stored inline (float_data), all zeros.
  void inline_weight(const std::string& name, const std::vector<std::int64_t>& dims) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t n = 1;
    for (std::int64_t d : dims) t->add_dims(d), n *= d;
    for (std::int64_t i = 0; i < n; ++i) t->add_float_data(0.0f);
  }
  /// An int64 initializer (shape arguments, axes).
  void ints(const std::string& name, const std::vector<std::int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
  }
  void scalar(const std::string& name, float value) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }

  onnx::NodeProto& node(const std::string& op_type, const std::string& name, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  static void attr(onnx::NodeProto& n, const std::string& key, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, float v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const {
    std::string s;
    model_.SerializeToString(&s);
    return s;
  }

 private:
  onnx::ModelProto model_;
};

/// Conv (no bias) -> BatchNormalization [-> Relu], torch.onnx-named under `scope`; returns the output.
inline std::string conv_bn(OnnxGraph& g, const std::string& scope, const std::string& conv, const std::string& bn,
                           const std::string& x, std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                           std::int64_t pad) {
  const std::string w = scope + conv + ".weight";
  g.weight(w, {out, in, k, k});
  auto& c = g.node("Conv", "/" + scope + "/" + conv + "/Conv", {x, w}, {scope + conv + "_out"});
  OnnxGraph::attr(c, "kernel_shape", std::vector<std::int64_t>{k, k});
  OnnxGraph::attr(c, "strides", std::vector<std::int64_t>{stride, stride});
  OnnxGraph::attr(c, "pads", std::vector<std::int64_t>{pad, pad, pad, pad});
  OnnxGraph::attr(c, "dilations", std::vector<std::int64_t>{1, 1});
  OnnxGraph::attr(c, "group", std::int64_t{1});
  const std::string p = scope + bn;
  for (const char* s : {".weight", ".bias", ".running_mean", ".running_var"}) g.weight(p + s, {out});
  auto& b = g.node("BatchNormalization", "/" + scope + "/" + bn + "/BatchNormalization",
                   {scope + conv + "_out", p + ".weight", p + ".bias", p + ".running_mean", p + ".running_var"},
                   {p + "_out"});
  OnnxGraph::attr(b, "epsilon", 1e-5f);
  OnnxGraph::attr(b, "momentum", 0.9f);
  return p + "_out";
}

inline std::string relu(OnnxGraph& g, const std::string& name, const std::string& x) {
  g.node("Relu", name, {x}, {name + "_out"});
  return name + "_out";
}

/// torchvision.models.resnet50 as torch.onnx.export writes it (opset 17): Conv without bias +
/// BatchNormalization + Relu, MaxPool, residual Add, GlobalAveragePool, Flatten, Gemm. Batch `batch`
/// (a symbol "N" when empty). Node names put each op in the zoo's block: "/stem/...", "/layer1.0/...".
inline OnnxGraph resnet50_onnx(const OnnxDim& batch = std::string("N")) {
  OnnxGraph g;
  g.input("images", {batch, std::int64_t{3}, std::int64_t{224}, std::int64_t{224}});
  std::string x = conv_bn(g, "stem", "conv1", "bn1", "images", 3, 64, 7, 2, 3);
  x = relu(g, "/stem/relu/Relu", x);
  auto& pool = g.node("MaxPool", "/stem/maxpool/MaxPool", {x}, {"maxpool_out"});
  OnnxGraph::attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxGraph::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  OnnxGraph::attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  OnnxGraph::attr(pool, "ceil_mode", std::int64_t{0});
  x = "maxpool_out";
  const int blocks[] = {3, 4, 6, 3};
  const std::int64_t widths[] = {64, 128, 256, 512};
  std::int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string s = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const std::int64_t w = widths[stage], stride = (i == 0 && stage > 0) ? 2 : 1;
      std::string y = conv_bn(g, s, "conv1", "bn1", x, in, w, 1, 1, 0);
      y = relu(g, "/" + s + "/relu/Relu", y);
      y = conv_bn(g, s, "conv2", "bn2", y, w, w, 3, stride, 1);
      y = relu(g, "/" + s + "/relu_1/Relu", y);
      y = conv_bn(g, s, "conv3", "bn3", y, w, 4 * w, 1, 1, 0);
      std::string shortcut = x;
      if (i == 0) shortcut = conv_bn(g, s, "downsample.0", "downsample.1", x, in, 4 * w, 1, stride, 0);
      g.node("Add", "/" + s + "/Add", {y, shortcut}, {s + "_sum"});
      x = relu(g, "/" + s + "/relu_2/Relu", s + "_sum");
      in = 4 * w;
    }
  }
  g.node("GlobalAveragePool", "avgpool", {x}, {"avgpool_out"});
  auto& flat = g.node("Flatten", "flatten", {"avgpool_out"}, {"flatten_out"});
  OnnxGraph::attr(flat, "axis", std::int64_t{1});
  g.weight("fc.weight", {1000, 2048});
  g.weight("fc.bias", {1000});
  auto& fc = g.node("Gemm", "fc", {"flatten_out", "fc.weight", "fc.bias"}, {"logits"});
  OnnxGraph::attr(fc, "alpha", 1.0f);
  OnnxGraph::attr(fc, "beta", 1.0f);
  OnnxGraph::attr(fc, "transB", std::int64_t{1});
  g.output("logits");
  return g;
}

/// An MLP over a 1 x side x side image (784-256-10 by default): Flatten, Gemm, Relu, Gemm, with
/// its weights inline.
inline OnnxGraph mlp_onnx(std::int64_t side = 28, std::int64_t hidden = 256, std::int64_t classes = 10) {
  OnnxGraph g;
  g.input("x", {std::string("batch"), std::int64_t{1}, side, side});
  g.node("Flatten", "flatten", {"x"}, {"flat"});
  g.inline_weight("fc1.weight", {hidden, side * side});
  g.inline_weight("fc1.bias", {hidden});
  OnnxGraph::attr(g.node("Gemm", "fc1", {"flat", "fc1.weight", "fc1.bias"}, {"h"}), "transB", std::int64_t{1});
  g.node("Relu", "act", {"h"}, {"a"});
  g.inline_weight("fc2.weight", {classes, hidden});
  g.inline_weight("fc2.bias", {classes});
  OnnxGraph::attr(g.node("Gemm", "fc2", {"a", "fc2.weight", "fc2.bias"}, {"logits"}), "transB", std::int64_t{1});
  g.output("logits");
  return g;
}

/// The zoo's tiny_lstm as torch exports nn.Embedding + 2 x nn.LSTM(batch_first) + nn.Linear:
/// Gather, a time-major Transpose around each ONNX LSTM, Squeeze of the direction axis, and the
/// decoder as MatMul + Add (a Linear over a rank-3 input). `direction` "bidirectional" doubles it.
inline OnnxGraph tiny_lstm_onnx(const std::string& direction = "forward") {
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
  OnnxGraph g;
  g.input("tokens", {std::string("batch"), std::int64_t{16}}, onnx::TensorProto::INT64);
  g.weight("embedding.weight", {1000, 64});
  g.node("Gather", "/embedding/Gather", {"embedding.weight", "tokens"}, {"emb"});
  OnnxGraph::attr(g.node("Transpose", "/Transpose", {"emb"}, {"emb_t"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  std::string x = "emb_t";
  std::int64_t in = 64;
  for (int l = 0; l < 2; ++l) {
    const std::string n = "lstm." + std::to_string(l);
    g.weight(n + ".W", {dirs, 512, in});
    g.weight(n + ".R", {dirs, 512, 128});
    g.weight(n + ".B", {dirs, 1024});
    auto& node = g.node("LSTM", "/" + n + "/LSTM", {x, n + ".W", n + ".R", n + ".B"}, {n + "_y", n + "_h", n + "_c"});
    OnnxGraph::attr(node, "hidden_size", std::int64_t{128});
    OnnxGraph::attr(node, "direction", direction);
    if (dirs == 1) {
      g.ints(n + ".axes", {1});
      g.node("Squeeze", "/" + n + "/Squeeze", {n + "_y", n + ".axes"}, {n + "_out"});
    } else {
      // [T, 2, B, 128] -> [T, B, 2, 128] -> [T, B, 256], as torch does for a bidirectional layer.
      OnnxGraph::attr(g.node("Transpose", "/" + n + "/Transpose", {n + "_y"}, {n + "_yt"}), "perm",
                      std::vector<std::int64_t>{0, 2, 1, 3});
      g.ints(n + ".shape", {0, 0, -1});
      g.node("Reshape", "/" + n + "/Reshape", {n + "_yt", n + ".shape"}, {n + "_out"});
    }
    x = n + "_out";
    in = 128 * dirs;
  }
  OnnxGraph::attr(g.node("Transpose", "/Transpose_1", {x}, {"out_bt"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  g.weight("decoder.weight_t", {128 * dirs, 1000});
  g.weight("decoder.bias", {1000});
  g.node("MatMul", "/decoder/MatMul", {"out_bt", "decoder.weight_t"}, {"dec"});
  g.node("Add", "/decoder/Add", {"decoder.bias", "dec"}, {"logits"});
  g.output("logits");
  return g;
}

/// One self-attention block as torch.onnx writes an eager nn.Module (BERT-style): q, k, v as
/// MatMul + Add, heads split by Reshape [0, 0, H, hd] + Transpose, MatMul, Div by sqrt(hd),
/// Softmax, Dropout, MatMul, heads merged by Transpose + Reshape, then the output projection.
inline OnnxGraph attention_onnx(std::int64_t t = 8, std::int64_t d = 16, std::int64_t heads = 4) {
  OnnxGraph g;
  g.input("x", {std::string("batch"), t, d});
  auto linear = [&](const std::string& name, const std::string& in) {
    g.weight(name + ".weight_t", {d, d});
    g.weight(name + ".bias", {d});
    g.node("MatMul", "/attn/" + name + "/MatMul", {in, name + ".weight_t"}, {name + "_mm"});
    g.node("Add", "/attn/" + name + "/Add", {name + ".bias", name + "_mm"}, {name + "_out"});
    return name + "_out";
  };
  g.ints("split_shape", {0, 0, heads, d / heads});
  auto split = [&](const std::string& name, const std::string& in, const std::vector<std::int64_t>& perm) {
    g.node("Reshape", "/attn/Reshape_" + name, {in, "split_shape"}, {name + "_4d"});
    OnnxGraph::attr(g.node("Transpose", "/attn/Transpose_" + name, {name + "_4d"}, {name + "_heads"}), "perm", perm);
    return name + "_heads";
  };
  const std::string q = split("q", linear("q", "x"), {0, 2, 1, 3});
  const std::string k = split("k", linear("k", "x"), {0, 2, 3, 1});
  const std::string v = split("v", linear("v", "x"), {0, 2, 1, 3});
  g.node("MatMul", "/attn/MatMul", {q, k}, {"scores"});
  g.scalar("sqrt_hd", 2.0f);
  g.node("Div", "/attn/Div", {"scores", "sqrt_hd"}, {"scaled"});
  OnnxGraph::attr(g.node("Softmax", "/attn/Softmax", {"scaled"}, {"probs"}), "axis", std::int64_t{-1});
  g.scalar("ratio", 0.1f);
  g.node("Dropout", "/attn/dropout/Dropout", {"probs", "ratio"}, {"probs_d"});
  g.node("MatMul", "/attn/MatMul_1", {"probs_d", v}, {"context"});
  OnnxGraph::attr(g.node("Transpose", "/attn/Transpose_out", {"context"}, {"context_t"}), "perm",
                  std::vector<std::int64_t>{0, 2, 1, 3});
  g.ints("merge_shape", {0, 0, d});
  g.node("Reshape", "/attn/Reshape_out", {"context_t", "merge_shape"}, {"merged"});
  g.output(linear("out", "merged"));
  return g;
}

}  // namespace parasim::test
