// Reading parasim.model/1: parse every op, resolve names, reject cycles, then rebuild the model
// through ModelBuilder so shapes and costs are inferred exactly as for zoo models.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "model_json_attrs.hpp"
#include "rebatch.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/model_json.hpp"

namespace parasim::models {

namespace {

/// One op as written in the file, before inference.
struct Record {
  JsonField field;
  Op op;  // name, kind, block, attrs, output_shape (as given)
  std::vector<JsonField> input_fields;
  std::vector<std::size_t> inputs;  // record indices
  bool has_output_shape = false;
  std::optional<JsonField> shares_field;
};

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string known_kinds() {
  std::vector<std::string> names;
  for (OpKind k : all_op_kinds()) names.push_back(to_string(k));
  return join(names);
}

void reject_unknown_keys(const JsonField& f, const std::vector<std::string>& known, const std::string& what) {
  for (const auto& [key, value] : f.raw().items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw InputError(f.file() + ": " + f.path() + ": unknown " + what + " \"" + key +
                       "\"; known: " + (known.empty() ? std::string("none") : join(known)));
  }
}

/// An integer or a [height, width] pair, each >= min.
std::pair<std::int64_t, std::int64_t> read_hw(const JsonField& f, std::int64_t min) {
  if (f.is_array()) {
    if (f.array_size() != 2) f.fail("an integer or [height, width]");
    return {f.at(std::size_t{0}).as_int(min), f.at(std::size_t{1}).as_int(min)};
  }
  if (!f.raw().is_number()) f.fail("an integer or [height, width]");
  const std::int64_t v = f.as_int(min);
  return {v, v};
}

Shape read_shape(const JsonField& f) {
  Shape s;
  for (const JsonField& d : f.items_of_array()) s.push_back(d.as_int(-1));
  return s;
}

void read_attrs(Record& r) {
  const std::optional<JsonField> found = r.field.find("attrs");
  OpAttrs& a = r.op.attrs;
  const OpKind kind = r.op.kind;
  // PyTorch's defaults where a field is optional (bias = true, pool stride = kernel size).
  if (kind == OpKind::Conv2d || kind == OpKind::Linear || kind == OpKind::Lstm) a.bias = true;
  if (kind == OpKind::Dropout) a.p = 0.5;
  if (!found) {
    // Kinds with required attributes report the missing "attrs" object itself.
    if (!detail::json_attr_names(kind).empty() && kind != OpKind::Concat && kind != OpKind::Dropout &&
        kind != OpKind::LayerNorm && kind != OpKind::Add && kind != OpKind::CrossEntropy)
      (void)r.field.at("attrs");
    return;
  }
  const JsonField& f = *found;
  if (!f.is_object()) f.fail("an object of attributes");
  reject_unknown_keys(f, detail::json_attr_names(kind), "attribute for " + to_string(kind));
  const bool shared = f.has("shares_weights_with");
  if (shared) {
    r.shares_field = f.at("shares_weights_with");
    a.shares_weights_with = r.shares_field->as_string();
  }
  auto opt_int = [&](const char* key, std::int64_t min, std::int64_t& out) {
    if (auto v = f.find(key)) out = v->as_int(min);
  };
  auto req_int = [&](const char* key, std::int64_t min, std::int64_t& out) { out = f.at(key).as_int(min); };
  auto opt_bool = [&](const char* key, bool& out) {
    if (auto v = f.find(key)) out = v->as_bool();
  };
  auto hw = [&](const char* key, std::int64_t min, std::int64_t& h, std::int64_t& w, bool required) {
    std::optional<JsonField> v = required ? std::optional<JsonField>(f.at(key)) : f.find(key);
    if (v) std::tie(h, w) = read_hw(*v, min);
  };
  switch (kind) {
    case OpKind::Conv2d:
      req_int("out_channels", 1, a.out_features);
      hw("kernel_size", 1, a.kernel_h, a.kernel_w, true);
      hw("stride", 1, a.stride_h, a.stride_w, false);
      hw("padding", 0, a.pad_h, a.pad_w, false);
      hw("dilation", 1, a.dilation_h, a.dilation_w, false);
      opt_int("groups", 1, a.groups);
      opt_bool("bias", a.bias);
      break;
    case OpKind::Linear:
      // A tied layer may leave its sizes to the shared weight.
      if (shared) opt_int("out_features", 1, a.out_features);
      else req_int("out_features", 1, a.out_features);
      opt_int("in_features", 1, a.in_features);
      opt_bool("bias", a.bias);
      break;
    case OpKind::Lstm:
      req_int("hidden", 1, a.hidden);
      opt_int("proj", 0, a.proj);
      opt_bool("bias", a.bias);
      opt_bool("reverse", a.reverse);
      break;
    case OpKind::Embedding:
      if (shared) {
        opt_int("vocab", 1, a.vocab);
        opt_int("embedding_dim", 1, a.out_features);
      } else {
        req_int("vocab", 1, a.vocab);
        req_int("embedding_dim", 1, a.out_features);
      }
      break;
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
      hw("kernel_size", 1, a.kernel_h, a.kernel_w, true);
      a.stride_h = a.kernel_h, a.stride_w = a.kernel_w;
      hw("stride", 1, a.stride_h, a.stride_w, false);
      hw("padding", 0, a.pad_h, a.pad_w, false);
      opt_bool("ceil_mode", a.ceil_mode);
      break;
    case OpKind::AdaptiveAvgPool2d: hw("output_size", 1, a.kernel_h, a.kernel_w, true); break;
    case OpKind::Concat: opt_int("axis", INT64_MIN, a.axis); break;
    case OpKind::Dropout:
      if (auto v = f.find("p")) {
        a.p = v->as_double(0.0, 1.0);
        if (a.p >= 1.0) v->fail("a probability in [0, 1)");
      }
      break;
    case OpKind::SampledSoftmax:
      req_int("vocab", 1, a.vocab);
      req_int("num_sampled", 1, a.num_sampled);
      break;
    case OpKind::Attention:
      req_int("heads", 1, a.heads);
      opt_int("kv_heads", 1, a.kv_heads);
      opt_bool("additive", a.additive);
      opt_bool("causal", a.causal);
      if (auto v = f.find("p")) {  // dropout on the attention probabilities
        a.p = v->as_double(0.0, 1.0);
        if (a.p >= 1.0) v->fail("a probability in [0, 1)");
      }
      break;
    case OpKind::Rotary:
      req_int("heads", 1, a.heads);
      opt_int("kv_heads", 1, a.kv_heads);
      break;
    case OpKind::LayerNorm: opt_bool("bias", a.norm_bias); break;
    case OpKind::Add: opt_bool("residual", a.residual); break;
    case OpKind::CrossEntropy: opt_bool("fused", a.fused); break;
    case OpKind::Experts:
      req_int("experts", 1, a.experts);
      req_int("top_k", 1, a.top_k);
      req_int("expert_width", 1, a.out_features);
      opt_bool("gated", a.gated);
      if (auto v = f.find("capacity_factor")) a.capacity_factor = v->as_double(0.0, 1e6);
      break;
    case OpKind::Gather: req_int("positions", 1, a.positions); break;
    default: break;
  }
}

Record read_op(const JsonField& f) {
  if (!f.is_object()) f.fail("an op object");
  reject_unknown_keys(f, {"name", "kind", "block", "inputs", "attrs", "output_shape"}, "op field");
  Record r{f, Op{}, {}, {}, false, std::nullopt};
  const JsonField name = f.at("name");
  r.op.name = name.as_string();
  if (r.op.name.empty()) name.fail("a non-empty op name");
  const JsonField kind = f.at("kind");
  const std::optional<OpKind> k = parse_op_kind(kind.as_string());
  if (!k) kind.fail("an op kind (one of " + known_kinds() + ")");
  r.op.kind = *k;
  if (auto block = f.find("block")) r.op.block = block->as_string();
  if (r.op.kind == OpKind::Input) {
    if (auto inputs = f.find("inputs")) r.input_fields = inputs->items_of_array();
  } else {
    r.input_fields = f.at("inputs").items_of_array();
  }
  std::optional<JsonField> shape = f.find("output_shape");
  if (r.op.kind == OpKind::Input || r.op.kind == OpKind::Reshape) shape = f.at("output_shape");
  if (shape) {
    r.op.output_shape = read_shape(*shape);
    r.has_output_shape = true;
  }
  read_attrs(r);
  return r;
}

/// Lowest-index-first topological order over data inputs and weight owners: file order when
/// the file is sorted. Returns fewer than n entries if the dependencies are circular.
std::vector<std::size_t> processing_order(const std::vector<Record>& records,
                                          const std::vector<std::optional<std::size_t>>& owners) {
  const std::size_t n = records.size();
  std::vector<std::vector<std::size_t>> dependents(n);
  std::vector<std::size_t> pending(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t u : records[i].inputs) dependents[u].push_back(i), ++pending[i];
    if (owners[i]) dependents[*owners[i]].push_back(i), ++pending[i];
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t d : dependents[i])
      if (--pending[d] == 0) ready.push(d);
  }
  return order;
}

}  // namespace

Model model_from_json(const nlohmann::json& doc, const std::string& file, const LoadOptions& options) {
  const JsonField root{doc, file, "$"};
  root.expect_schema(kModelSchema);
  reject_unknown_keys(root, {"schema", "name", "batch", "dtype", "dataset", "ops", "description"}, "field");
  const std::string name = root.at("name").as_string();
  if (name.empty()) root.at("name").fail("a non-empty model name");
  const std::int64_t file_batch = root.at("batch").as_int(1);
  const JsonField dtype_field = root.at("dtype");
  const std::optional<DType> file_dtype = parse_dtype(dtype_field.as_string());
  if (!file_dtype) dtype_field.fail("a dtype (fp32, fp16, bf16 or fp8)");
  std::string dataset;
  if (auto d = root.find("dataset")) dataset = d->as_string();
  const std::int64_t batch = options.batch.value_or(file_batch);
  if (batch < 1) throw InputError(file + ": batch override must be >= 1, found " + std::to_string(batch));

  // 1. Parse every op.
  const JsonField ops = root.at("ops");
  std::vector<Record> records;
  std::unordered_map<std::string, std::size_t> index;
  for (const JsonField& f : ops.items_of_array()) {
    Record r = read_op(f);
    const auto [it, inserted] = index.emplace(r.op.name, records.size());
    if (!inserted)
      throw InputError(file + ": " + f.path() + ".name: duplicate op name \"" + r.op.name + "\" (first defined at " +
                       records[it->second].field.path() + ")");
    records.push_back(std::move(r));
  }
  if (records.empty()) ops.fail("a non-empty array of ops");

  // 2. Resolve names: inputs and weight owners.
  std::vector<std::optional<std::size_t>> owners(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    for (const JsonField& in : r.input_fields) {
      auto it = index.find(in.as_string());
      if (it == index.end()) in.fail("the name of an op in this model");
      r.inputs.push_back(it->second);
    }
    if (r.shares_field) {
      auto it = index.find(r.op.attrs.shares_weights_with);
      if (it == index.end() || it->second == i) r.shares_field->fail("the name of another op in this model");
      owners[i] = it->second;
      // A tied op may leave its sizes to the owner's weight matrix.
      const OpAttrs& oa = records[it->second].op.attrs;
      const bool owner_is_embedding = records[it->second].op.kind == OpKind::Embedding;
      const std::int64_t rows = owner_is_embedding ? oa.vocab : oa.out_features;
      const std::int64_t cols = owner_is_embedding ? oa.out_features : oa.in_features;
      OpAttrs& a = r.op.attrs;
      if (r.op.kind == OpKind::Linear) {
        if (a.out_features == 0) a.out_features = rows;
        if (a.in_features == 0) a.in_features = cols;
      } else {
        if (a.vocab == 0) a.vocab = rows;
        if (a.out_features == 0) a.out_features = cols;
      }
    }
  }

  // 3. Reject cycles, naming the ops on one.
  {
    Model skeleton(name, batch, *file_dtype);
    for (const Record& r : records) {
      Op op;
      op.name = r.op.name;
      boost::add_vertex(op, skeleton.graph());
    }
    for (std::size_t i = 0; i < records.size(); ++i)
      for (std::size_t u : records[i].inputs) boost::add_edge(u, i, Tensor{}, skeleton.graph());
    try {
      (void)skeleton.topological_order();
    } catch (const InputError& e) {
      throw InputError(file + ": " + ops.path() + ": " + e.what());
    }
  }
  const std::vector<std::size_t> order = processing_order(records, owners);
  if (order.size() != records.size()) {
    for (std::size_t i = 0; i < records.size(); ++i)
      if (std::find(order.begin(), order.end(), i) == order.end() && records[i].shares_field)
        records[i].shares_field->fail("an op that does not depend on this one");
  }

  // 4. Rebuild through the builder: the same inference and costs as the zoo.
  ModelBuilder b(name, batch, options.dtype.value_or(*file_dtype));
  b.set_dataset(dataset);
  std::vector<OpId> ids(records.size());
  for (std::size_t i : order) {
    Record& r = records[i];
    Op op = r.op;
    const bool shape_is_input = op.kind == OpKind::Input || op.kind == OpKind::Reshape;
    std::vector<OpId> inputs;
    for (std::size_t u : r.inputs) inputs.push_back(ids[u]);
    if (shape_is_input && options.batch)
      detail::rebatch_shape(op, file_batch, batch, inputs.empty() ? nullptr : &b.shape(inputs[0]));
    try {
      ids[i] = b.add_op(std::move(op), inputs);
    } catch (const InputError& e) {
      throw InputError(file + ": " + r.field.path() + ": " + e.what());
    }
    const Shape& inferred = b.shape(ids[i]);
    if (r.has_output_shape && !shape_is_input && !options.batch && inferred != r.op.output_shape)
      throw InputError(file + ": " + r.field.path() + ".output_shape: expected " + to_string(inferred) +
                       " (inferred from the inputs and attributes), found " + to_string(r.op.output_shape));
  }
  return b.finish();
}

}  // namespace parasim::models
