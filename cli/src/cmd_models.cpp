// `parasim models`: the model zoo as a table (or JSON), and `parasim models show` for the
// per-op shapes and costs of one zoo model or parasim.model/1 file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::cli {

namespace {

using namespace parasim::models;

/// 25557032 -> "25,557,032": exact counts stay readable.
std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

/// A plain-text table: left-aligned text columns, right-aligned number columns.
class Table {
 public:
  Table(std::vector<std::string> header, std::vector<bool> right_aligned)
      : header_(std::move(header)), right_(std::move(right_aligned)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const {
    std::vector<std::size_t> width(header_.size());
    for (std::size_t c = 0; c < header_.size(); ++c) {
      width[c] = header_[c].size();
      for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
    }
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (std::size_t c = 0; c < r.size(); ++c) {
        const std::string pad(width[c] - r[c].size(), ' ');
        const bool last = c + 1 == r.size();
        s += right_[c] ? pad + r[c] : (last ? r[c] : r[c] + pad);
        if (!last) s += "  ";
      }
      out << s << "\n";
    };
    line(header_);
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// ------------------------------------------------------------------ parasim models

void list_models(bool as_json) {
  nlohmann::json list = nlohmann::json::array();
  Table table({"name", "params", "MACs/sample", "layers", "ops", "dataset", "description"},
              {false, true, true, true, true, false, false});
  for (const ZooEntry& e : zoo_entries()) {
    const Model m = build_zoo_model(e.name, {});
    if (as_json) {
      list.push_back({{"name", e.name},
                      {"description", e.description},
                      {"dataset", e.dataset},
                      {"params", m.total_params()},
                      {"macs_per_sample", m.macs_per_sample()},
                      {"weighted_layers", m.num_weighted_layers()},
                      {"ops", m.num_ops()}});
    } else {
      table.add({e.name, with_commas(m.total_params()), format_count(static_cast<double>(m.macs_per_sample())),
                 std::to_string(m.num_weighted_layers()), std::to_string(m.num_ops()),
                 e.dataset.empty() ? "-" : e.dataset, e.description});
    }
  }
  if (as_json) {
    std::cout << dump_json(list);
    return;
  }
  table.print(std::cout);
  std::cout << "\nMACs are multiply-accumulates of one forward pass per sample (image or sequence); FLOPs = 2 x MACs.\n"
               "`parasim models show NAME` lists a model's ops.\n";
}

// ------------------------------------------------------------------ parasim models show

constexpr std::int64_t kNotGiven = -1;

struct ShowOptions {
  std::string target;
  std::int64_t batch = kNotGiven;
  std::string dtype;
  std::int64_t image_size = kNotGiven;
  std::int64_t seq_len = kNotGiven;
  bool json = false;
  std::string output;
};

bool looks_like_file(const std::string& target) {
  std::error_code ec;
  return target.find('/') != std::string::npos || target.ends_with(".json") || target.ends_with(".onnx") ||
         std::filesystem::exists(target, ec);
}

Model load_target(const ShowOptions& o) {
  auto check = [](const char* flag, std::int64_t v) {
    if (v != kNotGiven && v < 1)
      throw InputError(std::string(flag) + ": expected an integer >= 1, found " + std::to_string(v));
  };
  check("--batch", o.batch);
  check("--image-size", o.image_size);
  check("--seq-len", o.seq_len);
  std::optional<DType> dtype;
  if (!o.dtype.empty()) {
    dtype = parse_dtype(o.dtype);
    if (!dtype) throw InputError("--dtype: expected fp32, fp16, bf16 or fp8, found \"" + o.dtype + "\"");
  }
  if (!is_zoo_model(o.target) && looks_like_file(o.target)) {
    if (o.image_size != kNotGiven)
      throw InputError("--image-size applies to zoo models only; " + o.target +
                       " fixes its shapes (use --batch and --dtype)");
    LoadOptions load;
    if (o.batch > 0) load.batch = o.batch;
    load.dtype = dtype;
    if (o.seq_len > 0) load.seq_len = o.seq_len;  // config.json only: the loader rejects it for model files
    return load_model_file(o.target, load);
  }
  ModelOptions options;
  if (o.batch > 0) options.batch = o.batch;
  if (dtype) options.dtype = *dtype;
  if (o.image_size > 0) options.image_size = o.image_size;
  if (o.seq_len > 0) options.seq_len = o.seq_len;
  return build_zoo_model(o.target, options);  // lists the known names if o.target is none of them
}

nlohmann::json show_json(const Model& m) {
  nlohmann::json ops = nlohmann::json::array();
  for (OpId v = 0; v < m.num_ops(); ++v) {
    const Op& op = m.op(v);
    nlohmann::json inputs = nlohmann::json::array();
    for (OpId u : m.inputs_of(v)) inputs.push_back(m.op(u).name);
    ops.push_back({{"name", op.name},
                   {"kind", to_string(op.kind)},
                   {"block", op.block},
                   {"inputs", inputs},
                   {"output_shape", op.output_shape},
                   {"params", op.params},
                   {"macs_fwd", op.macs_fwd},
                   {"macs_bwd_data", op.macs_bwd_data},
                   {"macs_bwd_weight", op.macs_bwd_weight},
                   {"bytes_read", op.bytes_read},
                   {"bytes_written", op.bytes_written},
                   {"activation_bytes", op.activation_bytes},
                   {"signature", op.signature()}});
  }
  return {{"name", m.name()},
          {"batch", m.batch()},
          {"dtype", to_string(m.dtype())},
          {"dataset", m.dataset()},
          {"params", m.total_params()},
          {"macs_per_sample", m.macs_per_sample()},
          {"macs_fwd", m.total_macs_fwd()},
          {"activation_bytes", m.total_activation_bytes()},
          {"weighted_layers", m.num_weighted_layers()},
          {"num_ops", m.num_ops()},
          {"ops", ops}};
}

void show_table(const Model& m) {
  Table table({"op", "kind", "output shape", "params", "MACs fwd", "activations"},
              {false, false, false, true, true, true});
  std::int64_t bwd = 0;
  for (OpId v = 0; v < m.num_ops(); ++v) {
    const Op& op = m.op(v);
    bwd += op.macs_bwd_data + op.macs_bwd_weight;
    table.add({op.name, to_string(op.kind), to_string(op.output_shape), with_commas(op.params),
               with_commas(op.macs_fwd), format_bytes(op.activation_bytes)});
  }
  std::cout << "model " << m.name() << "  batch " << m.batch() << "  " << to_string(m.dtype())
            << (m.dataset().empty() ? "" : "  dataset " + m.dataset()) << "\n\n";
  table.print(std::cout);
  const auto macs = static_cast<double>(m.total_macs_fwd());
  std::cout << "\nops              " << m.num_ops() << " (" << m.num_weighted_layers() << " with weights)\n"
            << "parameters       " << with_commas(m.total_params()) << " ("
            << format_bytes(m.total_params() * dtype_size(m.dtype())) << ")\n"
            << "MACs forward     " << format_count(macs) << " per batch, "
            << format_count(static_cast<double>(m.macs_per_sample())) << " per sample\n"
            << "MACs backward    " << format_count(static_cast<double>(bwd)) << " per batch\n"
            << "activations      " << format_bytes(m.total_activation_bytes()) << " kept for backward\n";
}

void show_model(const ShowOptions& o) {
  const Model m = load_target(o);
  if (o.json) std::cout << dump_json(show_json(m));
  else show_table(m);
  if (!o.output.empty()) {
    save_model_file(m, o.output);
    std::cerr << "wrote " << o.output << " (" << kModelSchema << ", " << m.num_ops() << " ops)\n";
  }
}

}  // namespace

void register_models(CLI::App& app) {
  auto* models = app.add_subcommand("models", "List the model zoo, or show one model's ops, shapes and costs");
  models->require_subcommand(0, 1);
  auto list_json = std::make_shared<bool>(false);
  models->add_flag("--json", *list_json, "Print the zoo as a JSON list");

  auto opts = std::make_shared<ShowOptions>();
  auto* show = models->add_subcommand("show", "Per-op table of a zoo model, a model file or an ONNX graph");
  show->add_option("model", opts->target,
                   "Zoo model name (see `parasim models`), parasim.model/1 file, config.json or .onnx")
      ->required();
  show->add_option("--batch", opts->batch, "Samples per batch (default: 1, or the file's batch)");
  show->add_option("--dtype", opts->dtype, "fp32, fp16, bf16 or fp8 (default: fp32, or the file's dtype)");
  show->add_option("--image-size", opts->image_size, "Image height = width for zoo image models");
  show->add_option("--seq-len", opts->seq_len, "Tokens per sample for zoo sequence models and config.json files");
  show->add_flag("--json", opts->json, "Print {name, params, macs_per_sample, ops: [...]} as JSON");
  show->add_option("-o,--output", opts->output, "Also write the model as parasim.model/1 JSON to this file");
  show->callback([opts] { show_model(*opts); });

  models->callback([models, show, list_json] {
    if (!models->got_subcommand(show)) list_models(*list_json);
  });
}

}  // namespace parasim::cli
