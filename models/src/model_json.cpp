// Writing parasim.model/1 files (the reader is model_json_read.cpp).
#include "parasim/models/model_json.hpp"

#include "model_json_attrs.hpp"
#include "rebatch.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/hf_config.hpp"
#include "parasim/models/onnx_import.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::models {

namespace {

/// PyTorch style: one integer when height and width agree, [h, w] otherwise.
nlohmann::json hw_json(std::int64_t h, std::int64_t w) {
  if (h == w) return h;
  return nlohmann::json::array({h, w});
}

nlohmann::json attrs_json(const Op& op) {
  const OpAttrs& a = op.attrs;
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& key : detail::json_attr_names(op.kind)) {
    if (key == "out_channels") j[key] = a.out_features;
    else if (key == "kernel_size") j[key] = hw_json(a.kernel_h, a.kernel_w);
    else if (key == "output_size") j[key] = hw_json(a.kernel_h, a.kernel_w);
    else if (key == "stride") j[key] = hw_json(a.stride_h, a.stride_w);
    else if (key == "padding") j[key] = hw_json(a.pad_h, a.pad_w);
    else if (key == "dilation") j[key] = hw_json(a.dilation_h, a.dilation_w);
    else if (key == "groups") j[key] = a.groups;
    else if (key == "residual") {
      if (a.residual) j[key] = true;  // written only when set, so older files stay byte-equal
    } else if (key == "fused") {
      if (a.fused) j[key] = true;
    } else if (key == "bias" && op.kind == OpKind::LayerNorm) {
      if (!a.norm_bias) j[key] = false;  // written only when absent, so older files stay byte-equal
    } else if (key == "bias") j[key] = a.bias;
    else if (key == "kv_heads") {
      if (a.kv_heads != 0) j[key] = a.kv_heads;
    }
    else if (key == "ceil_mode") j[key] = a.ceil_mode;
    else if (key == "in_features") j[key] = a.in_features;
    else if (key == "out_features" || key == "embedding_dim") j[key] = a.out_features;
    else if (key == "shares_weights_with") {
      if (!a.shares_weights_with.empty()) j[key] = a.shares_weights_with;
    } else if (key == "hidden") j[key] = a.hidden;
    else if (key == "proj") j[key] = a.proj;
    else if (key == "reverse") j[key] = a.reverse;
    else if (key == "vocab") j[key] = a.vocab;
    else if (key == "num_sampled") j[key] = a.num_sampled;
    else if (key == "heads") j[key] = a.heads;
    else if (key == "additive") j[key] = a.additive;
    else if (key == "causal") {
      if (a.causal) j[key] = true;  // absent when false: files written before it stay byte-identical
    } else if (key == "axis") j[key] = a.axis;
    else if (key == "experts") j[key] = a.experts;
    else if (key == "top_k") j[key] = a.top_k;
    else if (key == "expert_width") j[key] = a.out_features;
    else if (key == "gated") j[key] = a.gated;
    else if (key == "capacity_factor") j[key] = a.capacity_factor;
    else if (key == "p") j[key] = a.p;
    else if (key == "positions") j[key] = a.positions;
  }
  return j;
}

}  // namespace

nlohmann::json model_to_json(const Model& model) {
  nlohmann::json ops = nlohmann::json::array();
  for (OpId v = 0; v < model.num_ops(); ++v) {
    const Op& op = model.op(v);
    nlohmann::json j;
    j["name"] = op.name;
    j["kind"] = to_string(op.kind);
    if (!op.block.empty()) j["block"] = op.block;
    if (op.kind != OpKind::Input) {
      nlohmann::json inputs = nlohmann::json::array();
      for (OpId u : model.inputs_of(v)) inputs.push_back(model.op(u).name);
      j["inputs"] = std::move(inputs);
    }
    nlohmann::json attrs = attrs_json(op);
    if (!attrs.empty()) j["attrs"] = std::move(attrs);
    // Required for input and reshape ops; a checked annotation for the others.
    j["output_shape"] = op.output_shape;
    ops.push_back(std::move(j));
  }
  return nlohmann::json{{"schema", kModelSchema},
                        {"name", model.name()},
                        {"batch", model.batch()},
                        {"dtype", to_string(model.dtype())},
                        {"dataset", model.dataset()},
                        {"ops", std::move(ops)}};
}

void save_model_file(const Model& model, const std::filesystem::path& path) {
  write_file_atomic(path, dump_json(model_to_json(model)));
}

Model load_model_file(const std::filesystem::path& path, const LoadOptions& options) {
  if (is_onnx_path(path)) return load_onnx_model(path, options);
  const nlohmann::json doc = read_json_file(path);
  if (is_hf_config(doc)) {
    const TransformerConfig c = transformer_from_hf_config(doc, path.string(), hf_model_name(path));
    try {
      return build_transformer(c, ModelOptions{.batch = options.batch.value_or(1),
                                               .dtype = options.dtype.value_or(DType::F32),
                                               .seq_len = options.seq_len.value_or(0)});
    } catch (const InputError& e) {
      throw InputError(path.string() + ": " + e.what());
    }
  }
  if (options.seq_len)
    throw InputError(path.string() +
                     ": a sequence length applies to zoo models and Hugging Face config.json files only; a "
                     "parasim.model/1 file fixes its shapes");
  return model_from_json(doc, path.string(), options);
}

Model with_batch(const Model& model, std::int64_t batch, std::optional<DType> dtype) {
  // What loading model_to_json(model) with LoadOptions{batch, dtype} gives (tests compare the
  // two for every zoo model), without writing and parsing the document: the same ops, in the
  // same order, through the same builder; only input and reshape shapes carry the batch.
  if (batch < 1)
    throw InputError("model " + model.name() + ": batch override must be >= 1, found " + std::to_string(batch));
  ModelBuilder b(model.name(), batch, dtype.value_or(model.dtype()));
  b.set_dataset(model.dataset());
  for (OpId v = 0; v < model.num_ops(); ++v) {
    Op op = model.op(v);
    const std::vector<OpId> inputs = model.inputs_of(v);
    if (op.kind == OpKind::Input || op.kind == OpKind::Reshape)
      detail::rebatch_shape(op, model.batch(), batch, inputs.empty() ? nullptr : &b.shape(inputs[0]));
    b.add_op(std::move(op), inputs);
  }
  return b.finish();
}

}  // namespace parasim::models
