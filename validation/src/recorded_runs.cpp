// Reading published-runs/1 files and projecting each run. Field meanings and the keyword rules for
// free-text fields are in docs/fidelity.md.
#include "parasim/validation/recorded_runs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string_view>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/median.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/hardware/kernel_model.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/search_space.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::validation {

namespace {

constexpr const char* kSpDefaultCaveat =
    "sequence parallelism not stated: parasim's default (on with selective recomputation)";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return lower(haystack).find(needle) != std::string::npos;
}

/// A positive integer field, or nullopt when absent or null (unknown). A string that is only a
/// number ("8", "1,024") is that number; other text ("16M tokens ...") is unknown as a count.
/// Anything else is an error.
std::optional<std::int64_t> optional_count(const JsonField& parent, const std::string& key) {
  auto f = parent.find(key);
  if (!f || f->raw().is_null()) return std::nullopt;
  if (f->raw().is_string()) {
    std::string digits;
    for (const char ch : f->as_string()) {
      if (std::isdigit(static_cast<unsigned char>(ch))) digits += ch;
      else if (ch != ',' && ch != ' ') return std::nullopt;
    }
    if (digits.empty() || digits.size() > 12 || std::stoll(digits) < 1) return std::nullopt;
    return std::stoll(digits);
  }
  return f->as_int(1, std::int64_t{1} << 40);
}

std::string optional_text(const JsonField& parent, const std::string& key) {
  auto f = parent.find(key);
  if (!f || f->raw().is_null()) return "";
  if (f->raw().is_string()) return f->as_string();
  if (f->raw().is_number() || f->raw().is_boolean()) return f->raw().dump();
  f->fail("a string, number or null");
}

/// A yes/no field as free text or a boolean ("true", "yes (--sequence-parallel)", "off"): its first
/// word, or nullopt when that is no answer ("unknown", "not stated", anything else).
std::optional<bool> yes_no(const std::string& text) {
  std::string word;
  for (char ch : lower(text)) {
    if (!std::isalpha(static_cast<unsigned char>(ch))) break;
    word += ch;
  }
  if (word == "true" || word == "yes" || word == "on" || word == "enabled") return true;
  if (word == "false" || word == "no" || word == "off" || word == "disabled" || word == "none") return false;
  return std::nullopt;
}

/// The digits of the number `text` starts with, commas aside ("1,536 ..." -> "1536"); `end` is
/// where the number stops.
std::string leading_digits(const std::string& text, std::size_t& end) {
  std::string digits;
  for (end = 0; end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == ','); ++end)
    if (text[end] != ',') digits += text[end];
  return digits;
}

/// A text that starts with a count (digits and commas) followed by one of `units` ("16 stages",
/// "1,536 sequences"): the count; 0 otherwise. A unit glued to the digits ("16M") is not a count.
std::int64_t leading_count_of(const std::string& text, std::initializer_list<const char*> units) {
  std::size_t i = 0;
  const std::string digits = leading_digits(text, i);
  if (digits.empty() || digits.size() > 12 || i >= text.size() || text[i] != ' ') return 0;
  std::string word;
  for (++i; i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])); ++i)
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  for (const char* u : units)
    if (word == u) return std::stoll(digits);
  return 0;
}

/// A global batch stated in tokens ("16M tokens (= 2048 x 8192)", "4,194,304 tokens"): the number
/// of sequences of `seq_len` tokens, or 0 when the text is not a token count or does not divide.
/// K/M/G read as binary multiples when only those divide by the sequence length (batch sizes in
/// tokens are powers of two times the sequence length: Llama 3's "16M" is 2^24), else decimal.
std::int64_t sequences_in_tokens(const std::string& text, std::int64_t seq_len, std::string& reading) {
  if (seq_len <= 0 || !contains(text, "token")) return 0;
  std::size_t i = 0;
  const std::string digits = leading_digits(text, i);
  if (digits.empty() || digits.size() > 12) return 0;
  const std::int64_t count = std::stoll(digits);
  int power = 0;
  if (i < text.size()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    power = unit == 'K' ? 1 : unit == 'M' ? 2 : unit == 'G' || unit == 'B' ? 3 : 0;
  }
  std::int64_t decimal = count, binary = count;
  for (int p = 0; p < power; ++p) decimal *= 1000, binary *= 1024;
  if (decimal % seq_len == 0) {
    reading = std::to_string(decimal) + " tokens";
    return decimal / seq_len;
  }
  if (power > 0 && binary % seq_len == 0) {
    reading = std::to_string(binary) + " tokens (" + std::string(1, "KMG"[power - 1]) + " = 2^" +
              std::to_string(10 * power) + ")";
    return binary / seq_len;
  }
  return 0;
}

/// a * b, or INT64_MAX when that overflows (hostile counts must not wrap).
std::int64_t product(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
}

void skip(RecordedRun& r, const std::string& why) {
  if (r.skip_reason.empty()) r.skip_reason = why;
}

/// A published global batch that the replicas cannot split evenly ("2M tokens" over 124 replicas,
/// GPT-NeoX's "1538" over 12 x 4): the batch the run must have had is a multiple of `unit`, and
/// a figure rounded for print is within a few percent of it. The nearest multiple within 5%, said
/// in the caveats; nullopt (the row is skipped) for a larger gap, which is a misread configuration
/// rather than rounding.
std::optional<std::int64_t> nearest_even_batch(RecordedRun& r, std::int64_t batch, std::int64_t unit,
                                               const std::string& what) {
  if (unit <= 0 || unit == INT64_MAX) return std::nullopt;
  if (batch % unit == 0) return batch;
  const std::int64_t below = batch / unit * unit, above = below + unit;
  const std::int64_t nearest = below > 0 && batch - below <= above - batch ? below : above;
  if (std::abs(static_cast<double>(nearest - batch)) > 0.05 * static_cast<double>(batch)) return std::nullopt;
  r.caveats.push_back("global batch " + std::to_string(batch) + " is not a multiple of " + what + " = " +
                      std::to_string(unit) + ": projected at " + std::to_string(nearest) +
                      ", the nearest (a published batch is often rounded)");
  return nearest;
}

/// config.padding {bin_size, mean_tokens}: samples of varying length (mean `mean_tokens`, at most
/// seq_len), each micro-batch padded to its longest sample and drawn from one length bin of
/// `bin_size` tokens (NVIDIA LDDL's sequence binning). A sample is then padded to the top of its
/// bin: with lengths spread evenly within bins that is half a bin on average, so every micro-batch
/// is priced at min(seq_len, mean_tokens + bin_size / 2) tokens. Pricing the mean length, not
/// each bin, undercounts attention's quadratic term a little; the caveat says both.
void read_padding(RecordedRun& r, const JsonField& c) {
  auto p = c.find("padding");
  if (!p || p->raw().is_null()) return;
  if (!p->raw().is_object()) p->fail("an object {\"bin_size\": tokens, \"mean_tokens\": tokens}");
  const std::int64_t max_len = r.seq_len > 0 ? r.seq_len : (r.zoo_model ? 0 : r.transformer.seq_len);
  if (max_len <= 0) p->fail("a row whose seq_len is stated (model.seq_len or config.seq_len)");
  const std::int64_t bin = p->at("bin_size").as_int(1, max_len);
  const double mean = p->at("mean_tokens").as_double(1.0, static_cast<double>(max_len));
  const auto padded = std::min<std::int64_t>(max_len, std::llround(mean + static_cast<double>(bin) / 2.0));
  r.padded_seq_len = padded;
  std::ostringstream note;
  note << "samples of varying length (mean " << mean << " of at most " << max_len << " tokens) binned by " << bin
       << " tokens and padded per micro-batch: priced at " << padded
       << " tokens per sample (mean + half a bin; attention's quadratic term priced at the mean)";
  r.caveats.push_back(note.str());
}

/// Lower-case letters and digits only: "ResNet-50" and "resnet_50" both read "resnet50".
std::string alnum_lower(const std::string& s) {
  std::string out;
  for (const char ch : s)
    if (std::isalnum(static_cast<unsigned char>(ch)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The text's runs of letters and digits, lower case: "images/sec" -> images, sec.
std::vector<std::string> lower_words(const std::string& s) {
  std::vector<std::string> words;
  std::string word;
  for (const char ch : s + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  return words;
}

/// The zoo model a table names in its own words ("ResNet-50", "GPT-3 175B", "Llama-3.1-405B",
/// "bert-large-uncased"): equal to a zoo name up to case and punctuation, or a name the zoo's model
/// is published under (its description's own words); nullopt otherwise.
std::optional<std::string> zoo_name_of(const std::string& written) {
  if (models::is_zoo_model(written)) return written;
  static const std::vector<std::pair<std::string, std::string>> kPublishedAs{{"resnet50v15", "resnet50"},
                                                                             {"bertlargeuncased", "bert_large"},
                                                                             {"bertlargecased", "bert_large"},
                                                                             {"gnmtv2", "gnmt"}};
  const std::string key = alnum_lower(written);
  for (const models::ZooEntry& e : models::zoo_entries())
    if (alnum_lower(e.name) == key) return e.name;
  for (const auto& [alias, name] : kPublishedAs)
    if (alias == key) return name;
  return std::nullopt;
}

void read_model(RecordedRun& r, const JsonField& m) {
  if (auto zoo = m.find("zoo_name"); zoo && !zoo->raw().is_null()) {
    const std::string written = zoo->as_string();
    const std::optional<std::string> name = zoo_name_of(written);
    if (!name) return skip(r, "model.zoo_name \"" + written + "\" is not a zoo model (`parasim models` lists them)");
    if (*name != written) r.caveats.push_back("model.zoo_name \"" + written + "\" read as " + *name);
    r.zoo_model = *name;
    if (auto s = m.find("seq_len"); s && s->raw().is_number_integer()) r.seq_len = s->as_int(1, 1 << 24);
    return;
  }
  // A shape field under its name here or the names Megatron-LM's arguments and Hugging Face
  // configs give it ("num_layers", "hidden_size", "n_head"...); absent under all, the error names
  // this schema's field.
  const auto maybe = [&](const char* key, std::initializer_list<const char*> aliases) -> std::optional<JsonField> {
    if (m.has(key)) return m.at(key);
    for (const char* alias : aliases)
      if (m.has(alias)) return m.at(alias);
    return std::nullopt;
  };
  const auto field = [&](const char* key, std::initializer_list<const char*> aliases) -> JsonField {
    if (auto f = maybe(key, aliases)) return *f;
    return m.at(key);  // InputError naming this schema's field
  };
  models::TransformerConfig& t = r.transformer;
  t.name = r.id;
  t.layers = field("layers", {"num_layers", "num_hidden_layers", "n_layer"}).as_int(1, 100000);
  t.hidden = field("hidden", {"hidden_size", "d_model", "n_embd"}).as_int(1, 1 << 20);
  const JsonField heads = field("heads", {"num_attention_heads", "n_head", "n_heads"});
  t.heads = heads.as_int(1, 1 << 16);
  if (t.hidden % t.heads != 0) heads.fail("a divisor of hidden (" + std::to_string(t.hidden) + ")");
  t.vocab = field("vocab", {"vocab_size", "padded_vocab_size"}).as_int(1, std::int64_t{1} << 24);
  const auto ffn = maybe("ffn", {"ffn_hidden_size", "intermediate_size", "n_inner", "d_ff"});
  t.ffn = ffn ? ffn->as_int(1, std::int64_t{1} << 24) : 4 * t.hidden;
  t.seq_len = field("seq_len", {"seq_length", "sequence_length"}).as_int(1, 1 << 24);
  t.max_positions = t.seq_len;
  r.seq_len = t.seq_len;
  // The blocks, from model.kv_heads and keywords of model.arch (docs/fidelity.md lists them).
  const std::string arch = optional_text(m, "arch");
  if (auto kv = maybe("kv_heads", {"num_key_value_heads", "num_query_groups", "n_kv_heads"});
      kv && !kv->raw().is_null()) {
    t.kv_heads = kv->as_int(1, t.heads);
    if (t.heads % t.kv_heads != 0) kv->fail("a divisor of heads (" + std::to_string(t.heads) + ")");
  }
  if (contains(arch, "swiglu")) t.mlp = models::MlpKind::Swiglu;
  else if (contains(arch, "squared-relu") || contains(arch, "squared relu")) t.mlp = models::MlpKind::SquaredRelu;
  if (contains(arch, "rmsnorm")) t.norm = models::NormKind::RmsNorm;
  if (contains(arch, "rope") || contains(arch, "rotary")) t.positions = models::PositionKind::Rotary;
  else if (contains(arch, "alibi")) t.positions = models::PositionKind::Alibi;
  if (contains(arch, "no bias")) t.linear_bias = false;
  if (contains(arch, "untied")) t.tied_embeddings = false;
  // Llama's blocks have neither linear biases nor dropout (Touvron et al. 2023; Meta's and NeMo's
  // configs): a row naming it gets them unless it states a dropout.
  if (contains(arch, "llama")) {
    t.linear_bias = false;
    t.dropout = 0.0;
    r.caveats.push_back("model.arch names Llama: no linear biases and no dropout");
  }
  // The Llama family's layout (Llama, Mistral, Mixtral, Qwen): the blocks a row naming one does not
  // state otherwise.
  if (contains(arch, "llama") || contains(arch, "mistral") || contains(arch, "mixtral") || contains(arch, "qwen")) {
    std::vector<std::string> implied;
    if (t.mlp == models::MlpKind::Gelu && !contains(arch, "gelu") && !contains(arch, "relu")) {
      t.mlp = models::MlpKind::Swiglu;
      implied.push_back("SwiGLU");
    }
    if (t.norm != models::NormKind::RmsNorm && !contains(arch, "layernorm") && !contains(arch, "layer norm")) {
      t.norm = models::NormKind::RmsNorm;
      implied.push_back("RMSNorm");
    }
    if (t.positions == models::PositionKind::Learned && !contains(arch, "learned") && !contains(arch, "alibi")) {
      t.positions = models::PositionKind::Rotary;
      implied.push_back("rotary positions");
    }
    const bool says_tied = contains(arch, "tied") && !contains(arch, "untied");
    if (t.tied_embeddings && !says_tied) {
      t.tied_embeddings = false;
      implied.push_back("untied embeddings");
    }
    if (!contains(arch, "llama")) {
      t.linear_bias = false;
      t.dropout = 0.0;
      implied.push_back("no linear biases, no dropout");
    }
    if (!implied.empty()) {
      std::string list;
      for (const std::string& b : implied) list += (list.empty() ? "" : ", ") + b;
      r.caveats.push_back("model.arch \"" + arch + "\" names the Llama family's layout: " + list +
                          " (what it does not state otherwise)");
    }
  }
  if (auto d = m.find("dropout"); d && !d->raw().is_null()) t.dropout = d->as_double(0.0, 0.99);
  if (auto hd = m.find("head_dim"); hd && !hd->raw().is_null()) t.head_dim = hd->as_int(1, 1 << 16);
  // Mixture of experts (Mixtral, DeepSeek): the expert bank's shape, as TransformerConfig has it.
  if (auto e = m.find("experts"); e && !e->raw().is_null()) {
    t.experts = e->as_int(1, 1 << 16);
    if (auto k = m.find("top_k"); k && !k->raw().is_null()) t.top_k = k->as_int(1, t.experts);
    if (auto w = m.find("moe_ffn"); w && !w->raw().is_null()) t.moe_ffn = w->as_int(1, std::int64_t{1} << 24);
    if (auto s = m.find("shared_experts"); s && !s->raw().is_null()) t.shared_experts = s->as_int(0, 1 << 16);
    if (auto d = m.find("moe_dense_layers"); d && !d->raw().is_null()) t.moe_dense_layers = d->as_int(0, t.layers);
    if (auto c = m.find("capacity_factor"); c && !c->raw().is_null()) t.capacity_factor = c->as_double(0.0, 64.0);
  }
}

/// model.mlm_positions: the masked positions per sample the MLM head runs on (NVIDIA's BERT:
/// max_predictions_per_seq), for a zoo model with a masked-LM head, at most the tokens a sample
/// is priced at (the padded length of config.padding, read before this, else the sequence length).
void read_mlm_positions(RecordedRun& r, const JsonField& m) {
  auto f = m.find("mlm_positions");
  if (!f || f->raw().is_null()) return;
  const std::int64_t p = f->as_int(1, std::int64_t{1} << 24);
  std::string with_head;
  for (const models::ZooEntry& e : models::zoo_entries())
    if (e.takes_mlm_positions) with_head += (with_head.empty() ? "" : ", ") + e.name;
  const std::string expected = "mlm_positions only on a zoo model with a masked-LM head (" + with_head + "; ";
  if (!r.zoo_model) f->fail(expected + "a hyperparameter row builds a GPT-layout transformer without one)");
  if (!models::zoo_entry(*r.zoo_model).takes_mlm_positions) f->fail(expected + *r.zoo_model + " has none)");
  const std::int64_t seq = r.seq_len > 0 ? r.seq_len : models::transformer_preset(*r.zoo_model).seq_len;
  if (r.padded_seq_len > 0 && p > r.padded_seq_len)
    f->fail("at most the " + std::to_string(r.padded_seq_len) + " tokens a sample is priced at (config.padding)");
  if (p > seq) f->fail("at most the sequence length " + std::to_string(seq));
  r.mlm_positions = p;
}

/// The NGC PyTorch container a source names ("pytorch:21.11 container", "PyTorch 21.11-py3", "NGC
/// 21.11"), as year * 100 + month (the latest named), or 0 where it names none.
int pytorch_container(const std::string& text) {
  const std::string t = lower(text);
  int latest = 0;
  for (const char* word : {"pytorch", "ngc"})
    for (std::size_t at = t.find(word); at != std::string::npos; at = t.find(word, at + 1)) {
      std::size_t i = at + std::string_view(word).size();
      for (int skipped = 0; i < t.size() && skipped < 2 && (t[i] == ':' || t[i] == ' ' || t[i] == '-'); ++skipped) ++i;
      int year = 0, month = 0, used = 0;
      if (std::sscanf(t.c_str() + i, "%2d.%2d%n", &year, &month, &used) == 2 && used == 5 && month >= 1 && month <= 12)
        latest = std::max(latest, year * 100 + month);
    }
  return latest;
}

/// What NVIDIA's BERT pretraining script (DeepLearningExamples PyTorch/LanguageModeling/BERT
/// run_pretraining.py; config.allreduce names its allreduce_post_accumulation flag) did by default,
/// for the facts a row leaves out. From the January 2022 release (NGC pytorch:21.11) on:
///  - phase 2 (512 tokens) draws every micro-batch from one 64-token length bin of LDDL and pads it
///    to its longest sample (README changelog; run_pretraining.sh BIN_SIZE=64). Wikipedia samples
///    of up to 512 tokens are over 50% padding (Krell et al. 2021, arXiv 2107.02027): mean 256.
///  - the masked-LM head runs on the masked positions only (dense_seq_output): 15% of a sample's
///    tokens (LDDL masked_lm_ratio), at most max_predictions_per_seq (20 at 128 tokens, 80 at 512).
///  - allreduce_post_accumulation_fp16 trains a model.half() under DDP no_sync: autograd adds each
///    micro-batch's fp16 gradients into .grad in place.
/// Earlier releases padded every sample to the sequence length and ran the head on all of them:
/// nothing is inferred for a row that names an earlier container or none. Each inference is a caveat.
void infer_nvidia_bert_recipe(RecordedRun& r, const JsonField& row) {
  const JsonField c = row.at("config");
  const std::string allreduce = lower(optional_text(c, "allreduce"));
  if (!contains(allreduce, "allreduce_post_accumulation") || !r.zoo_model ||
      !models::zoo_entry(*r.zoo_model).takes_mlm_positions)
    return;
  const int container = std::max(pytorch_container(r.source), pytorch_container(optional_text(row, "notes")));
  if (container < 2111) {
    r.caveats.push_back(
        "config.allreduce names NVIDIA's BERT run_pretraining.py, but no NGC container from pytorch:21.11 on (its "
        "sequence binning and masked-position head): every sample priced at its full length, the masked-LM head "
        "on every position");
    return;
  }
  const std::int64_t seq = r.seq_len > 0 ? r.seq_len : models::transformer_preset(*r.zoo_model).seq_len;
  double mean_tokens = static_cast<double>(seq);
  constexpr std::int64_t kBin = 64, kMeanTokens = 256, kPadded = kMeanTokens + kBin / 2;
  // (A stated head wider than the binned sample says the row's samples are not LDDL's.)
  if (seq == 512 && !(c.has("padding") && !c.at("padding").raw().is_null()) && r.mlm_positions <= kPadded) {
    mean_tokens = kMeanTokens;
    r.padded_seq_len = kPadded;
    r.caveats.push_back(
        "padding not stated: NVIDIA's BERT (pytorch:21.11 on) bins phase-2 samples by 64 tokens with LDDL and pads "
        "each micro-batch to its longest; Wikipedia samples of up to 512 tokens average at most 256 (Krell et al. "
        "2021): priced at " +
        std::to_string(r.padded_seq_len) + " tokens per sample (config.padding {bin_size: 64, mean_tokens: 256})");
  } else if (r.padded_seq_len > 0) {
    mean_tokens = c.at("padding").at("mean_tokens").as_double(1.0, static_cast<double>(seq));
  }
  if (!row.at("model").has("mlm_positions") || row.at("model").at("mlm_positions").raw().is_null()) {
    const std::int64_t max_predictions = seq <= 128 ? 20 : 80;
    r.mlm_positions = std::min<std::int64_t>(max_predictions, std::llround(0.15 * mean_tokens));
    r.caveats.push_back(
        "mlm_positions not stated: NVIDIA's BERT (pytorch:21.11 on) runs the masked-LM head on the "
        "masked positions only, 15% of a sample's " +
        std::to_string(std::llround(mean_tokens)) + " tokens (at most max_predictions_per_seq " +
        std::to_string(max_predictions) + "): " + std::to_string(r.mlm_positions) + " per sample");
  }
  if (contains(allreduce, "fp16") && !(c.has("grad_accumulation") && !c.at("grad_accumulation").raw().is_null())) {
    r.grad_accumulation = GradAccumulation::InPlace;
    r.caveats.push_back(
        "gradient accumulation not stated: NVIDIA's BERT with allreduce_post_accumulation_fp16 trains a "
        "model.half() under DDP no_sync, adding each micro-batch's gradients into .grad (in-place)");
  }
}

/// hardware.inter_node's NICs per node and their rate, where the text states them: "4 Omni-Path
/// links per node", "8x 400 Gb/s IB", "1600 Gb/s RoCE per node", "400 Gb/s per GPU". On an 8-GPU
/// NVSwitch preset whose NICs differ, the preset's nodes get those (the options ib= and nics=, with
/// Omni-Path and RoCE at the InfiniBand generation of their rate), said as a caveat. A rate that is
/// no InfiniBand generation's, or a count that does not divide 8, leaves the preset as it is.
void read_inter_node(RecordedRun& r, const JsonField& hw) {
  const std::string text = optional_text(hw, "inter_node");
  if (text.empty() || r.preset.find(':') != std::string::npos) return;  // options stated: the preset's
  const hardware::ClusterPresetInfo* info = nullptr;
  for (const auto& p : hardware::cluster_presets())
    if (p.name == r.preset) info = &p;
  if (!info || !info->takes_nics_option()) return;
  const std::vector<std::string> words = lower_words(text);
  const std::string lowered = lower(text);
  const bool per_node = contains(lowered, "per node");
  int nics = -1, gbps = -1, per_node_gbps = -1;
  for (std::size_t i = 0; i < words.size(); ++i) {
    // A count and what it counts, written apart ("400 Gb/s", "4 links") or together ("8x", "200Gb/s").
    const std::string& w = words[i];
    std::size_t digits = 0;
    while (digits < w.size() && digits < 6 && std::isdigit(static_cast<unsigned char>(w[digits]))) ++digits;
    if (digits == 0 || (digits < w.size() && std::isdigit(static_cast<unsigned char>(w[digits])))) continue;
    const int n = std::stoi(w.substr(0, digits));
    const std::string unit = digits < w.size() ? w.substr(digits) : (i + 1 < words.size() ? words[i + 1] : "");
    if (unit == "gb" || unit == "gbps" || unit == "gbit" || unit == "g") {
      if (nics < 0 && per_node) per_node_gbps = n;
      else gbps = n;
    } else if (unit == "x" || unit == "omni" || unit == "opa" || unit == "edr" || unit == "hdr" || unit == "ndr" ||
               unit == "infiniband" || unit == "ib" || unit == "roce" || unit == "links" || unit == "nics" ||
               unit == "hcas") {
      nics = n;
    }
  }
  auto names = [&](const char* word) { return std::find(words.begin(), words.end(), word) != words.end(); };
  if (gbps < 0 && per_node_gbps < 0) {  // the rate of the named link
    if (contains(lowered, "omni-path") || names("omnipath") || names("opa") || names("edr")) gbps = 100;
    else if (names("hdr")) gbps = 200;
    else if (names("ndr")) gbps = 400;
  }
  if (per_node_gbps > 0) {  // a node's total: one NIC per GPU unless a count is given
    if (nics < 0) nics = 8;
    if (nics == 0) return;
    gbps = per_node_gbps / nics;
  }
  if (nics < 0 && contains(lowered, "per gpu")) nics = 8;
  if (nics < 1 || nics > 8 || 8 % nics != 0 || gbps < 0) return;
  std::string ib;
  if (gbps == 100) ib = "edr";
  else if (gbps == 200) ib = "hdr";
  else if (gbps == 400) ib = "ndr";
  else return;
  const std::string own = lower(hardware::to_string(info->default_ib));
  if (nics == 8 && ib == own) return;
  r.nic_options = (ib == own ? "" : "ib=" + ib + ",") + "nics=" + std::to_string(nics);
  r.caveats.push_back("hardware.inter_node \"" + text + "\": the preset's nodes get " + std::to_string(nics) + " NIC" +
                      (nics > 1 ? "s" : "") + " of " + std::to_string(gbps) + " Gb/s (" + r.preset + ":" +
                      r.nic_options + "; a link of another kind at the InfiniBand rate it matches)");
}

void read_config(RecordedRun& r, const JsonField& c) {
  // A parallelism a row does not name it does not use (1): a data-parallel vendor table states no
  // tp or pp. Named but null or free text is unknown (0). An absent dp is what the GPUs leave.
  // A degree in words is its leading number ("16 stages", "8 (NVLink)", "4-way").
  auto stated = [&](const char* key) -> std::int64_t {
    if (const auto n = optional_count(c, key)) return *n;
    const std::string text = optional_text(c, key);
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == 0 || i > 9 || (i < text.size() && text[i] != ' ' && text[i] != '(' && text[i] != '-')) return 0;
    return std::stoll(text.substr(0, i));
  };
  auto degree = [&](const char* key) -> std::int64_t { return c.has(key) ? stated(key) : 1; };
  const std::int64_t tp = degree("tp"), pp = degree("pp"), cp = degree("cp"), ep = degree("ep");
  std::int64_t dp = c.has("dp") ? stated("dp") : 0;
  if (cp == 0 || ep == 0) return skip(r, "config.cp or config.ep is not a number");
  if (!c.has("dp") && tp > 0 && pp > 0) {
    const std::int64_t others = product(product(tp, pp), cp);
    if (others <= r.gpus && r.gpus % others == 0) {
      dp = r.gpus / others;
      r.caveats.push_back("config.dp not stated: gpus / (tp x pp x cp) = " + std::to_string(dp));
    }
  }
  if (dp == 0 || tp == 0 || pp == 0) return skip(r, "config.dp, tp and pp must all be known");
  if (r.gpus == 0) {
    const std::int64_t all = product(product(product(dp, tp), pp), cp);
    if (all > (1 << 22)) return skip(r, "gpus not given, and dp x tp x pp x cp is over 2^22");
    r.gpus = static_cast<int>(all);
    r.caveats.push_back("gpus not given: dp x tp x pp x cp = " + std::to_string(all));
  }
  r.strategy.dp = static_cast<int>(dp);
  r.strategy.tp = static_cast<int>(tp);
  r.strategy.mp = static_cast<int>(pp);
  r.strategy.cp = static_cast<int>(cp);
  r.strategy.ep = static_cast<int>(ep);
  const std::int64_t devices = product(product(product(dp, tp), pp), cp);
  if (devices != r.gpus)
    return skip(r, std::string(cp > 1 ? "dp x tp x pp x cp = " : "dp x tp x pp = ") +
                       (devices == INT64_MAX ? std::string("more than 2^63") : std::to_string(devices)) +
                       " is not gpus = " + std::to_string(r.gpus));

  // The training sequence length, where the model block did not give it (a zoo row).
  if (auto s = c.find("seq_len"); s && s->raw().is_number_integer() && r.seq_len == 0)
    r.seq_len = s->as_int(1, 1 << 24);
  read_padding(r, c);
  auto k = optional_count(c, "micro_batches_per_step");
  auto gb = optional_count(c, "global_batch");
  if (const std::string text = optional_text(c, "global_batch"); !gb && !text.empty()) {
    // A count of what a step trains on, in words ("1,536 sequences (3.1M tokens)"); else a batch
    // in tokens: sequences of the run's sequence length (config.seq_len, else the model's).
    std::int64_t seq = r.seq_len;
    if (auto s = c.find("seq_len"); s && s->raw().is_number_integer()) seq = s->as_int(1, 1 << 24);
    std::string reading;
    if (const std::int64_t n =
            leading_count_of(text, {"sequences", "sequence", "seqs", "samples", "sample", "images", "examples"});
        n > 0) {
      gb = n;
      r.caveats.push_back("global batch \"" + text + "\" read as " + std::to_string(n) + " samples");
    } else if (const std::int64_t sequences = sequences_in_tokens(text, seq, reading); sequences > 0) {
      gb = sequences;
      r.caveats.push_back("global batch \"" + text + "\" read as " + reading + " = " + std::to_string(sequences) +
                          " sequences of " + std::to_string(seq));
    }
  }
  if (!gb) return skip(r, "config.global_batch is not a number of samples or of tokens");
  r.global_batch = *gb;
  auto mb = optional_count(c, "micro_batch");
  if (!mb && k && *gb % product(dp, *k) == 0) mb = *gb / product(dp, *k);  // the count and the batch say it
  if (!mb && !k) {
    // Without a pipeline the micro-batch size does not shape the schedule, only memory and GEMM
    // sizes: start from the whole replica batch and halve until it fits. With one, it trades the
    // bubble against GEMM sizes, and the run's engineers tuned it: evaluate_run projects 1, 2, 4
    // and 8 samples per micro-batch and keeps the fastest that fits (and says which).
    const auto even = nearest_even_batch(r, *gb, dp, "dp");
    if (!even) return skip(r, "global_batch is not a multiple of dp (nor within 5% of one)");
    gb = *even;
    r.global_batch = *gb;
    mb = pp == 1 ? *gb / dp : 1;
    r.micro_unknown = true;
  }
  if (!mb) return skip(r, "config.micro_batch is unknown");
  const std::int64_t replica_micro = product(dp, *mb);
  if (!k) {
    const auto even = nearest_even_batch(r, *gb, replica_micro, "dp x micro_batch");
    if (!even) return skip(r, "global_batch is not a multiple of dp x micro_batch (nor within 5% of one)");
    gb = *even;
    r.global_batch = *gb;
    k = *gb / replica_micro;
  }
  if (product(replica_micro, *k) != *gb)
    return skip(r, "dp x micro_batch x micro_batches_per_step is not global_batch = " + std::to_string(*gb));
  if (*k > (1 << 20)) return skip(r, "more than 2^20 micro-batches per step");
  r.strategy.micro = static_cast<int>(*k);

  const std::string schedule = optional_text(c, "schedule");
  // Virtual stages under the names Megatron-LM and NeMo give them, when `interleave` is absent.
  const char* interleave_key = "interleave";
  for (const char* alias : {"virtual_pipeline_stages", "virtual_pipeline_model_parallel_size", "virtual_stages", "vpp"})
    if (!c.has("interleave") && c.has(alias)) interleave_key = alias;
  const std::string interleave = optional_text(c, interleave_key);
  if (pp == 1) {
    r.strategy.schedule = strategies::Schedule::None;
  } else if (contains(schedule, "interleav") || contains(schedule, "virtual")) {
    r.strategy.schedule = strategies::Schedule::Interleaved;
  } else if (schedule.empty()) {
    // Megatron-LM, NeMo and DeepSpeed pipelines run 1F1B unless told otherwise (interleaved with
    // virtual stages, below).
    r.strategy.schedule = strategies::Schedule::OneFOneB;
  } else if (contains(schedule, "1f1b") || contains(schedule, "pipedream-flush")) {
    r.strategy.schedule = strategies::Schedule::OneFOneB;
  } else if (contains(schedule, "gpipe")) {
    r.strategy.schedule = strategies::Schedule::GPipe;
  } else {
    return skip(r, "config.schedule \"" + schedule + "\" names no pipeline schedule parasim knows");
  }
  // Virtual stages per device: a number; or words that say the schedule is interleaved without
  // saying how many ("Meta custom interleaved schedule (not specified)", "not stated"), which
  // evaluate_run settles as it does an unstated micro-batch size.
  const bool unstated = interleave == "unknown" || contains(interleave, "not stated") ||
                        contains(interleave, "not specified") || contains(interleave, "unspecified");
  const bool counted = c.has(interleave_key) && c.at(interleave_key).raw().is_number_integer();
  if (counted) {
    r.strategy.interleave = static_cast<int>(c.at(interleave_key).as_int(1, 1024));
    if (r.strategy.interleave > 1 && r.strategy.schedule == strategies::Schedule::OneFOneB)
      r.strategy.schedule = strategies::Schedule::Interleaved;
  } else if (r.strategy.schedule != strategies::Schedule::None && !interleave.empty() &&
             (contains(interleave, "interleav") || contains(interleave, "virtual") ||
              (unstated && r.strategy.schedule == strategies::Schedule::Interleaved))) {
    r.strategy.schedule = strategies::Schedule::Interleaved;
    r.interleave_unknown = true;
  } else if (!interleave.empty() && !unstated && r.strategy.schedule != strategies::Schedule::None) {
    return skip(r,
                std::string("config.") + interleave_key + " \"" + interleave + "\" is not a number of virtual stages");
  }
  if (r.strategy.schedule == strategies::Schedule::Interleaved && r.strategy.interleave < 2) {
    if (counted) return skip(r, "an interleaved schedule needs config.interleave >= 2");
    r.strategy.interleave = 2;  // provisional: evaluate_run tries the counts the stages allow
    r.interleave_unknown = true;
  }
  if (schedule.empty() && pp > 1 && (interleave.empty() || !r.interleave_unknown)) {
    const bool interleaved = r.strategy.schedule == strategies::Schedule::Interleaved;
    r.caveats.push_back(std::string("config.schedule not stated: ") + (interleaved ? "interleaved 1F1B" : "1F1B") +
                        " (Megatron-LM's, NeMo's and DeepSpeed's default)");
  }

  // Recomputation: unknown, a named kind, or yes/no ("no", false: none; true: every layer, as
  // activation checkpointing flags mean).
  const std::string recompute = optional_text(c, "recompute");
  const std::optional<bool> recompute_on = yes_no(recompute);
  if (recompute == "unknown" || contains(recompute, "not stated") || contains(recompute, "not specified") ||
      contains(recompute, "unspecified")) {
    r.strategy.recompute = strategies::Recompute::None;  // the cheapest that fits: evaluate_run
    r.recompute_unknown = true;
  } else if (recompute.empty() || contains(recompute, "none") || recompute_on == false)
    r.strategy.recompute = strategies::Recompute::None;
  else if (contains(recompute, "selective")) r.strategy.recompute = strategies::Recompute::Selective;
  else if (contains(recompute, "full") || contains(recompute, "checkpoint") || recompute_on == true)
    r.strategy.recompute = strategies::Recompute::Full;
  else return skip(r, "config.recompute \"" + recompute + "\" is unknown");

  // Sequence parallelism as the run states it; sp= is set only where it differs from the default
  // pairing with selective recomputation, so the strategy column stays short.
  const std::string sp_text = optional_text(c, "sequence_parallel");
  const std::optional<bool> sp = yes_no(sp_text);
  r.sp_unknown = !sp && r.strategy.tp > 1;
  if (!sp && !sp_text.empty() && r.strategy.tp > 1) r.caveats.push_back(kSpDefaultCaveat);
  if (r.strategy.tp > 1 && sp) {
    const bool paired = r.strategy.recompute == strategies::Recompute::Selective;
    if (*sp && !paired) r.strategy.sp = strategies::SeqParallel::On;
    if (!*sp && paired) r.strategy.sp = strategies::SeqParallel::Off;
  }

  // ZeRO stages; PyTorch FSDP's FULL_SHARD is ZeRO-3 and SHARD_GRAD_OP ZeRO-2 (the same sharding).
  // Megatron-LM's distributed optimizer (--use-distributed-optimizer) shards the optimizer state
  // over the data-parallel ranks: ZeRO-1.
  const std::string zero = optional_text(c, "zero");
  const bool distributed_optimizer = contains(zero, "distributed optimizer") ||
                                     contains(zero, "distributed-optimizer") || contains(zero, "distributed_optimizer");
  if (zero.empty() || zero == "0" || contains(zero, "none") || yes_no(zero) == false) r.strategy.zero = 0;
  else if (zero[0] == '1' || contains(zero, "zero-1") || contains(zero, "zero1") || distributed_optimizer)
    r.strategy.zero = 1;
  else if (zero[0] == '2' || contains(zero, "zero-2") || contains(zero, "shard_grad_op")) r.strategy.zero = 2;
  else if (zero[0] == '3' || contains(zero, "zero-3") || contains(zero, "fsdp") || contains(zero, "full_shard"))
    r.strategy.zero = 3;
  else return skip(r, "config.zero \"" + zero + "\": expected a ZeRO stage (0-3, ZeRO-N, FSDP)");
  if (distributed_optimizer && r.strategy.zero == 1 && !contains(zero, "zero"))
    r.caveats.push_back("config.zero \"" + zero +
                        "\" read as ZeRO-1: Megatron-LM's distributed optimizer shards the optimizer state and "
                        "master weights over the data-parallel ranks");
  if (r.strategy.dp == 1) r.strategy.zero = 0;  // nothing to shard over
  // PyTorch's pipeline schedules keep an FSDP stage's parameters gathered and its gradients
  // unsynchronised until the step's last backward (set_reshard_after_backward(False),
  // set_requires_gradient_sync(False)): one all-gather and one reduce-scatter a step, full
  // weights and gradients during it, only the optimizer state sharded. That is ZeRO-1.
  const bool fsdp = contains(zero, "fsdp") || contains(zero, "full_shard") || contains(zero, "shard_grad_op");
  if (fsdp && pp > 1 && r.strategy.zero > 1) {
    r.strategy.zero = 1;
    r.caveats.push_back("config.zero \"" + zero +
                        "\" with a pipeline read as ZeRO-1: PyTorch's pipeline schedules keep an FSDP stage's "
                        "parameters gathered and its gradients unreduced until the step's last backward");
  }
  if (r.strategy.zero == 3 && (r.strategy.micro > 1 || r.micro_unknown))
    r.caveats.push_back("config.zero \"" + zero +
                        "\" read as ZeRO-3: each layer's parameters all-gathered before every micro-batch's "
                        "forward and backward, its gradients reduce-scattered after each backward (DeepSpeed, FSDP "
                        "FULL_SHARD); an FSDP that keeps parameters gathered after the forward sends less");

  const std::string precision = optional_text(c, "precision");
  if (contains(precision, "fp8") || contains(precision, "float8")) r.dtype = models::DType::FP8;
  else if (contains(precision, "bf16") || contains(precision, "bfloat16")) r.dtype = models::DType::BF16;
  else if (contains(precision, "fp16") || contains(precision, "float16") || contains(precision, "half") ||
           contains(precision, "amp") || contains(precision, "mixed"))
    r.dtype = models::DType::F16;
  else if (contains(precision, "tf32")) {
    // TF32: FP32 data, convolutions and matmuls on TF32 tensor cores (NVIDIA's "TF32" tables).
    r.dtype = models::DType::F32;
    r.fp32_math = profiler::Fp32Math::Tf32;
  } else if (contains(precision, "fp32") || contains(precision, "float32")) r.dtype = models::DType::F32;
  else return skip(r, "config.precision \"" + precision + "\" is not fp32, fp16, bf16 or fp8");
  // Eager torch.autocast: named, or PyTorch's, Composer's and Hugging Face's amp / amp_bf16 / amp_fp16.
  const std::string first_word = lower(precision.substr(0, precision.find_first_of(" (,;")));
  if (r.dtype != models::DType::F32 && r.dtype != models::DType::FP8 &&
      (contains(precision, "autocast") || first_word == "amp" || first_word == "amp_bf16" || first_word == "amp_fp16"))
    r.mixed_precision = profiler::MixedPrecision::Autocast;

  // Megatron-LM's "local" DDP and BERT's allreduce_post_accumulation reduce gradients after the
  // whole backward pass; PyTorch DDP overlaps bucketed all-reduces with it.
  const std::string ddp = optional_text(c, "ddp_impl"), allreduce = optional_text(c, "allreduce");
  if (contains(ddp, "local") || contains(allreduce, "after accumulation") || contains(allreduce, "post_accumulation"))
    r.strategy.overlap = false;

  // How micro-batch gradients are added up: stated, or what the named DDP does.
  if (auto f = c.find("grad_accumulation"); f && !f->raw().is_null()) {
    const auto a = parse_grad_accumulation(lower(optional_text(c, "grad_accumulation")));
    if (!a) f->fail("auto, in-place, fp32-buffer, buffer, fused or fused-buffer");
    r.grad_accumulation = *a;
  } else if (contains(ddp, "local")) {
    // Megatron-LM's main_grad is fp32 with --accumulate-allreduce-grads-in-fp32, which bf16
    // training forces on; fp16 training leaves it off by default, so the buffer is fp16.
    const bool fp16 = r.dtype == models::DType::F16;
    r.grad_accumulation = fp16 ? GradAccumulation::Buffer : GradAccumulation::Fp32Buffer;
    r.caveats.push_back(
        fp16 ? "gradient accumulation not stated: Megatron-LM's local DDP adds every micro-batch's gradients into its "
               "main_grad buffer, fp16 in fp16 training unless --accumulate-allreduce-grads-in-fp32 (buffer, 6 "
               "B/param; fp32: 10)"
             : "gradient accumulation not stated: Megatron-LM's local DDP adds every micro-batch's gradients into its "
               "main_grad buffer, fp32 in bf16 training (fp32-buffer)");
  } else if (contains(ddp, "torch")) {
    r.grad_accumulation = GradAccumulation::InPlace;
    r.caveats.push_back(
        "gradient accumulation not stated: PyTorch DDP's autograd adds into .grad from the second "
        "micro-batch on (in-place)");
  }

  // Tensor-parallel backward all-reduces overlapping the weight-gradient GEMMs (Megatron-LM's
  // --async-tensor-model-parallel-allreduce, late 2021 on): parasim's default; a row may say no.
  if (auto f = c.find("tp_comm_overlap"); f && !f->raw().is_null()) {
    const std::string v = lower(optional_text(c, "tp_comm_overlap"));
    if (v == "false" || v == "off" || v == "none" || contains(v, "blocking")) r.strategy.tp_overlap = false;
    else if (!(v == "true" || v == "on" || contains(v, "async"))) f->fail("true/false (or on/off, async/blocking)");
    if (r.strategy.tp == 1) r.strategy.tp_overlap = true;  // nothing to overlap
  }

  // Expert-parallel all-to-alls hidden behind another micro-batch's compute (Megatron-Core's
  // --overlap-moe-expert-parallel-comm; Megatron-Bridge recipes call it moe_a2a_overlap).
  for (const char* key : {"ep_comm_overlap", "moe_a2a_overlap"}) {
    auto f = c.find(key);
    if (!f || f->raw().is_null()) continue;
    const std::optional<bool> on = yes_no(optional_text(c, key));
    if (!on) f->fail("true or false (or on/off)");
    const bool pipelined = r.strategy.schedule == strategies::Schedule::OneFOneB ||
                           r.strategy.schedule == strategies::Schedule::Interleaved;
    r.strategy.ep_overlap = *on && r.strategy.ep > 1 && pipelined;
    if (*on && r.strategy.ep > 1 && !pipelined)
      r.caveats.push_back(std::string("config.") + key +
                          ": without a 1F1B pipeline the all-to-alls are projected unhidden (parasim merges a "
                          "steady-state forward with a backward of another micro-batch)");
  }

  // Transformer Engine's fused MoE router and permutation kernels (Megatron-Core's
  // --moe-router-fusion, --moe-permute-fusion); Megatron-Core's eager ones when not stated.
  for (const char* key : {"moe_router_fusion", "moe_permute_fusion"}) {
    auto f = c.find(key);
    if (!f || f->raw().is_null()) continue;
    const std::optional<bool> on = yes_no(optional_text(c, key));
    if (!on) f->fail("true or false (or on/off)");
    (std::string_view(key) == "moe_router_fusion" ? r.moe_kernels.fused_router : r.moe_kernels.fused_permute) = *on;
    r.moe_kernels_stated = true;
  }

  // The loss as one fused kernel (flash-attn's xentropy: LLM Foundry's default loss_fn; Megatron-Core's
  // cross-entropy fusion) keeps the 16-bit logits, not an fp32 copy of them.
  const std::string loss = lower(optional_text(c, "loss"));
  r.fused_loss = contains(loss, "fused") && !contains(loss, "unfused");

  // Fused attention kernels never write the score matrix. By the words tables use: FlashAttention
  // and its kin (PyTorch's SDPA picks a fused kernel on the GPUs parasim models; cuDNN's,
  // Transformer Engine's, xFormers') are fused; "eager", "naive", "math" and "standard" are not.
  // FlashAttention-2-generation kernels by name (FlashAttention-2, xFormers') run on Hopper at
  // about 60% of the rate of its own (FlashAttention-3, cuDNN's): flash2. MosaicML's Triton kernel
  // (LLM Foundry's attn_impl: triton) is timed by its tables as a whole score matrix: triton.
  const std::string attention = optional_text(c, "attention");
  const auto any_of_words = [&](std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&](const char* w) { return contains(attention, w); });
  };
  // "FlashAttention-2", "flash_attn 2", "FA2" -> "flashattention2", "flashattn2", "fa2"
  const std::string letters = alnum_lower(attention);
  const bool fa2_generation = contains(letters, "flashattention2") || contains(letters, "flashattn2") ||
                              contains(letters, "fa2") || any_of_words({"xformers"});
  if (any_of_words({"unfused", "not fused", "non-fused"})) {
    r.attention = profiler::AttentionKernel::Unfused;
    r.attention_stated = true;
  } else if (any_of_words({"triton"})) {
    r.attention = profiler::AttentionKernel::Triton;
    r.attention_stated = true;
    r.caveats.push_back("config.attention \"" + attention +
                        "\" read as MosaicML's Triton FlashAttention (triton: FlashAttention-2's rates on the whole "
                        "score matrix, as MosaicML's tables time it)");
  } else if (fa2_generation) {
    r.attention = profiler::AttentionKernel::Flash2;
    r.attention_stated = true;
    r.caveats.push_back("config.attention \"" + attention +
                        "\" read as FlashAttention-2-generation kernels (flash2: no Hopper TMA/wgmma)");
  } else if (any_of_words({"flash", "fused", "fmha"})) {
    r.attention = profiler::AttentionKernel::Flash;
    r.attention_stated = true;
  } else if (any_of_words({"sdpa", "scaled_dot_product", "scaled dot product", "cudnn", "memory-efficient",
                           "memory efficient", "mem_efficient", "transformer engine"})) {
    r.attention = profiler::AttentionKernel::Flash;
    r.attention_stated = true;
    r.caveats.push_back("config.attention \"" + attention + "\" read as fused (flash) attention");
  } else if (any_of_words({"eager", "naive", "math", "standard", "vanilla"})) {
    r.attention = profiler::AttentionKernel::Unfused;
    r.attention_stated = true;
  }

  // Convolution activations: NHWC (torch.channels_last, NVIDIA's AMP CNN recipes) or PyTorch's NCHW.
  if (auto f = c.find("memory_format"); f && !f->raw().is_null()) {
    const std::string v = lower(optional_text(c, "memory_format"));
    if (contains(v, "nhwc") || contains(v, "channels_last")) r.conv_layout = profiler::ConvLayout::Nhwc;
    else if (!(contains(v, "nchw") || contains(v, "contiguous"))) f->fail("nchw or nhwc (channels_last)");
  }

  const std::string opt = optional_text(c, "optimizer");
  if (contains(opt, "lamb"))
    r.caveats.push_back("LAMB modelled as Adam (same state; LAMB adds a per-tensor norm pass)");
  else if (contains(opt, "momentum")) r.optimizer = profiler::Optimizer::Momentum;  // "SGD momentum 0.875" too
  else if (contains(opt, "sgd")) r.optimizer = profiler::Optimizer::Sgd;
  // torch.optim's default implementation on CUDA, where the row says so: a pass per elementwise step.
  if (contains(opt, "foreach")) r.optimizer_kernels = profiler::OptimizerKernels::Foreach;
}

/// config.seq_len given as text ("variable, bucketed"): tokens per step are data-dependent.
bool variable_length(const JsonField& row) {
  const JsonField c = row.at("config");
  auto s = c.find("seq_len");
  return s && s->raw().is_string();
}

void read_measured(RecordedRun& r, const JsonField& row) {
  if (auto m = row.find("measured"); m && m->raw().is_object())
    if (auto p = m->find("peak_allocated_gib"); p && !p->raw().is_null()) r.measured_peak_gib = p->as_double(1e-6, 1e9);
  if (auto d = row.find("derived_step_seconds"); d && !d->raw().is_null()) {
    r.measured_step_s = d->as_double(1e-9, 1e9);
    r.measured_from = "derived_step_seconds";
    return;
  }
  const JsonField m = row.at("measured");
  const std::string metric = m.at("metric").as_string();
  double value = m.at("value").as_double(1e-12, 1e15);
  // Tables name the same figure many ways ("step_time_s", "elapsed_time_per_iteration_ms",
  // "images/sec", "tokens_per_sec_per_gpu"): read as words, a time per step or a rate.
  std::vector<std::string> words = lower_words(metric);
  // (assign(1, 's'), not = "s": GCC 12's -Wstringop-overflow misfires on the inlined copy here.)
  for (std::string& word : words)
    if (word == "sec" || word == "secs" || word == "second" || word == "seconds") word.assign(1, 's');
  // A rate per GPU (vendor tables: tokens/s/GPU) is the rate of all `gpus` of the run: "per gpu".
  std::string rate_value = "measured.value";
  for (std::size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == "per" && words[i + 1] == "gpu") {
      words.erase(words.begin() + static_cast<std::ptrdiff_t>(i), words.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      value *= r.gpus;
      rate_value = "(measured.value x gpus)";
      break;
    }
  // "per s", or "s" after what is counted ("images/s" reads "images s"), makes a rate; "s" or "ms"
  // around a step's words ("step_s", "seconds_per_step", "iteration_time_ms") a time per step.
  static const std::vector<std::string> kSamples{"sequences", "sequence", "seqs", "samples", "sample",
                                                 "images",    "image",    "img",  "imgs",    "examples"};
  static const std::vector<std::string> kTokens{"tokens", "token", "tok", "toks"};
  static const std::vector<std::string> kStep{"step", "iteration", "iter", "batch"};
  const auto in = [](const std::vector<std::string>& set, const std::string& w) {
    return std::find(set.begin(), set.end(), w) != set.end();
  };
  const auto names_any = [&](const std::vector<std::string>& set) {
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return in(set, w); });
  };
  const bool per_second = [&] {
    for (std::size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i + 1] == "s" && (words[i] == "per" || in(kSamples, words[i]) || in(kTokens, words[i]))) return true;
    return false;
  }();
  const bool per_step = names_any(kStep);
  const bool in_ms = !words.empty() && (words.back() == "ms" || words.front() == "ms");
  const bool in_s = !words.empty() && (words.back() == "s" || words.front() == "s");
  if (!per_second && per_step && (in_ms || in_s)) {
    r.measured_step_s = in_ms ? value * 1e-3 : value;
    r.measured_from = "measured.value (" + metric + ")";
  } else if (per_second && names_any(kSamples) && r.global_batch > 0) {
    r.measured_step_s = static_cast<double>(r.global_batch) / value;
    r.measured_from = "global_batch / " + rate_value + " (" + metric + ")";
  } else if (per_second && names_any(kTokens) && r.global_batch > 0 && r.seq_len > 0 && r.padded_seq_len == 0 &&
             !variable_length(row)) {
    // Every sample is seq_len tokens (pretraining packs them): tokens per step / tokens per second.
    r.measured_step_s = static_cast<double>(r.global_batch * r.seq_len) / value;
    r.measured_from = "global_batch x seq_len / " + rate_value + " (" + metric + ")";
  } else {
    skip(r, "measured." + metric + " has no step-time conversion (give derived_step_seconds)");
  }
}

bool is_preset(const std::string& name) {
  try {
    (void)hardware::make_cluster_preset_spec(name, 1);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

/// A preset named in a table's words, up to case, spaces and punctuation ("DGX A100" is dgx-a100),
/// or by the board's other name (an HGX H100 is the DGX H100's board); "" when none.
std::string preset_named(const std::string& written) {
  const std::string key = alnum_lower(written.substr(0, written.find('(')));
  for (const std::string& name : hardware::cluster_preset_names())
    if (alnum_lower(name) == key) return name;
  static const std::vector<std::pair<std::string, std::string>> kBoards{{"hgxa100", "dgx-a100"},
                                                                        {"hgxh100", "dgx-h100"},
                                                                        {"dgxh200", "hgx-h200"},
                                                                        {"hgxb200", "dgx-b200"},
                                                                        {"dgx1", "dgx1-v100"}};
  for (const auto& [board, name] : kBoards)
    if (board == key) return name;
  return "";
}

/// The preset whose nodes hold the row's GPU (SXM parts in 8-GPU boards), from hardware.gpu's
/// words; "" for a PCIe or NVL card, or a GPU no preset has.
std::string preset_of_gpu(const std::string& gpu) {
  const std::string key = alnum_lower(gpu);
  if (key.find("pcie") != std::string::npos || key.find("nvl") != std::string::npos) return "";
  for (const auto& [part, name] : std::initializer_list<std::pair<const char*, const char*>>{{"v100", "dgx1-v100"},
                                                                                             {"a100", "dgx-a100"},
                                                                                             {"h100", "dgx-h100"},
                                                                                             {"h200", "hgx-h200"},
                                                                                             {"b200", "dgx-b200"}})
    if (key.find(part) != std::string::npos) return name;
  return "";
}

// The memory variant of the preset's GPU a text names: the same part (kind up to its memory tag:
// "A100-SXM4") with the memory the text names ("A100 40GB" -> A100-SXM4-40GB; the preset's own kind
// too). A100 40GB and 80GB differ in HBM bandwidth (1,555 against 2,039 GB/s), which memory-bound
// kernels run at. Empty when the text names no variant.
std::string named_variant(const std::string& gpu, const std::string& preset_kind) {
  if (gpu.empty()) return "";
  // The text's words, a size's number joined to its unit: "A100 40 GB" -> a100 40gb.
  std::vector<std::string> words;
  for (std::string& word : lower_words(gpu)) {
    if (word == "gb" && !words.empty() && std::isdigit(static_cast<unsigned char>(words.back().back())) != 0)
      words.back() += word;
    else words.push_back(std::move(word));
  }
  for (const std::string& kind : hardware::memory_variants(preset_kind)) {
    const std::string memory = alnum_lower(kind.substr(kind.rfind('-') + 1));  // "40gb"
    if (std::find(words.begin(), words.end(), memory) != words.end()) return kind;
  }
  return "";
}

}  // namespace

RunsFile parse_runs(const nlohmann::json& doc, const std::string& origin) {
  const JsonField root{doc, origin, "$"};
  root.expect_schema("published-runs/1");
  RunsFile file;
  file.path = origin;
  for (const JsonField& row : root.at("rows").items_of_array()) {
    RecordedRun r;
    r.id = row.at("id").as_string();
    if (r.id.empty()) row.at("id").fail("a non-empty string");
    for (const RecordedRun& seen : file.runs)
      if (seen.id == r.id) row.at("id").fail("an id not used by an earlier row");
    r.source = optional_text(row, "source");
    const JsonField hw = row.at("hardware");
    const bool preset_given = hw.has("parasim_preset") && !hw.at("parasim_preset").raw().is_null();
    const std::string written_preset = preset_given ? hw.at("parasim_preset").as_string() : "";
    std::string preset = written_preset.substr(0, written_preset.find_first_of(" ("));
    if (preset_given && preset.empty()) hw.at("parasim_preset").fail("a cluster preset name");
    const bool cluster_file = preset.ends_with(".json") || preset.find('/') != std::string::npos;
    r.preset = cluster_file ? preset : lower(preset);
    if (!preset_given) {
      r.preset = preset_of_gpu(optional_text(hw, "gpu"));
      if (!r.preset.empty())
        r.caveats.push_back("hardware.parasim_preset not given: " + r.preset + ", the preset of hardware.gpu \"" +
                            optional_text(hw, "gpu") + "\"");
    } else if (!cluster_file && !is_preset(r.preset)) {
      // "DGX A100", "HGX H100 (8 per node)": a preset in the table's words.
      if (const std::string named = preset_named(written_preset); !named.empty()) {
        r.caveats.push_back("hardware.parasim_preset \"" + written_preset + "\" read as " + named);
        r.preset = named;
      }
    }
    if (auto g = hw.find("gpus_per_node"); g && !g->raw().is_null())
      r.gpus_per_node = static_cast<int>(g->as_int(1, 1024));
    // Absent or null: the product of the parallel degrees (read_config).
    if (auto g = row.find("gpus"); g && !g->raw().is_null()) r.gpus = static_cast<int>(g->as_int(1, 1 << 22));
    read_model(r, row.at("model"));
    if (auto p = row.at("model").find("params"); p && !p->raw().is_null())
      r.stated_params = p->as_int(1, std::int64_t{1} << 50);
    if (r.skip_reason.empty()) {  // a model parasim lacks leaves nothing to check the rest against
      read_config(r, row.at("config"));
      read_mlm_positions(r, row.at("model"));
      if (r.skip_reason.empty()) infer_nvidia_bert_recipe(r, row);
    }
    read_measured(r, row);
    if (r.skip_reason.empty() && r.preset.empty())
      skip(r, "hardware.parasim_preset not given, and hardware.gpu \"" + optional_text(hw, "gpu") +
                  "\" is the GPU of no preset (`parasim clusters` lists them)");
    if (r.skip_reason.empty() && cluster_file) {
      // The user's own cluster: loaded now, so a file that does not load is bad input at its field.
      std::filesystem::path path = r.preset;
      if (path.is_relative() && std::filesystem::path(origin).has_parent_path())
        path = std::filesystem::path(origin).parent_path() / path;
      r.preset = path.string();
      r.cluster_file = true;
      int devices = 0;
      try {
        devices = hardware::load_cluster_file(path).num_devices();
      } catch (const InputError& e) {
        hw.at("parasim_preset").fail(std::string("a cluster preset or a parasim.cluster/1 file (") + e.what() + ")");
      }
      if (r.gpus > devices)
        hw.at("parasim_preset")
            .fail("a cluster of at least the row's " + std::to_string(r.gpus) + " GPUs (" + r.preset + " has " +
                  std::to_string(devices) + ")");
    } else if (r.skip_reason.empty()) {
      try {
        const hardware::ClusterSpec spec = hardware::make_cluster_preset_spec(r.preset, 1);
        const std::string& preset_kind = spec.devices.front().kind;
        // The GPU's memory variant: as hardware.gpu names it, else as the system or the preset's note
        // does ("NVIDIA DGX A100 (8x A100 40GB)"); the first that names one decides.
        for (const char* field : {"gpu", "system", "parasim_preset"}) {
          const std::string text = optional_text(hw, field);
          const std::string named = named_variant(text, preset_kind);
          if (named.empty()) continue;
          if (named != preset_kind) {
            r.device_kind = named;
            r.caveats.push_back("hardware." + std::string(field) + " \"" + text + "\": the preset's " + preset_kind +
                                " devices run as " + named + " (its memory and HBM bandwidth)");
          }
          break;
        }
        read_inter_node(r, hw);
      } catch (const InputError& e) {
        // A preset parasim lacks is a row it cannot express (listed, not scored).
        skip(r, std::string("hardware.parasim_preset: ") + e.what());
      }
    }
    file.runs.push_back(std::move(r));
  }
  return file;
}

RunsFile load_runs_file(const std::string& path) { return parse_runs(read_json_file(path), path); }

RunsFile load_runs_files(const std::string& paths) {
  RunsFile all;
  all.path = paths;
  std::size_t begin = 0;
  while (begin <= paths.size()) {
    const std::size_t comma = std::min(paths.find(',', begin), paths.size());
    const std::string path = paths.substr(begin, comma - begin);
    if (path.empty()) throw InputError("runs files \"" + paths + "\": expected file names separated by commas");
    RunsFile file = load_runs_file(path);
    for (RecordedRun& r : file.runs) {
      for (const RecordedRun& seen : all.runs)
        if (seen.id == r.id)
          throw InputError(path + ": row id \"" + r.id + "\" is also a row of an earlier file of \"" + paths +
                           "\"; ids must be unique across the files");
      all.runs.push_back(std::move(r));
    }
    begin = comma + 1;
  }
  return all;
}

namespace {

/// The dense peak the run's math runs on: tensor cores in its precision (TF32 for FP32 on TF32),
/// else the FP32 pipes. 0 when the device is not known.
double peak_flops_per_s(const std::string& kind, models::DType dtype, profiler::Fp32Math math) {
  const auto spec = hardware::find_device_spec(kind);
  if (!spec) return 0;
  if (dtype == models::DType::F32)
    return 1e12 * (math == profiler::Fp32Math::Tf32 && spec->tf32_tflops > 0 ? spec->tf32_tflops : spec->fp32_tflops);
  return 1e12 * spec->peak_tflops(dtype);
}

/// Every device of the cluster is a GPU of architecture `oldest` or later.
bool every_gpu_at_least(const hardware::Cluster& cluster, std::string_view oldest) {
  for (hardware::DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const auto spec = hardware::find_device_spec(cluster.device(d).kind);
    if (!spec || !spec->arch_at_least(oldest)) return false;
  }
  return cluster.num_devices() > 0;
}
}  // namespace

RunOutcome evaluate_run(const RecordedRun& run, const EvaluateOptions& options) {
  RunOutcome out;
  out.run = run;
  if (!run.skip_reason.empty()) {
    out.note = "skipped: " + run.skip_reason;
    return out;
  }
  const models::ModelOptions mo{.batch = 1,
                                .dtype = run.dtype,
                                .seq_len = run.padded_seq_len > 0 ? run.padded_seq_len : run.seq_len,
                                .mlm_positions = run.mlm_positions};
  // A model the row's own figures cannot build (a zoo model asked for more tokens than it has
  // positions) is a row parasim cannot express: listed with the reason, the others still run.
  std::optional<models::Model> built_model;
  try {
    built_model.emplace(run.zoo_model ? models::build_zoo_model(*run.zoo_model, mo)
                                      : models::build_transformer(run.transformer, mo));
  } catch (const InputError& e) {
    out.run.skip_reason = std::string("the model cannot be built as the row states it: ") + e.what();
    out.note = "skipped: " + out.run.skip_reason;
    return out;
  }
  models::Model& model = *built_model;
  if (run.fused_loss) models::set_fused_loss(model, true);
  out.experts = models::has_experts(model);  // a zoo model's too, which the row's fields do not show
  if (out.experts && !run.moe_kernels_stated)
    out.run.caveats.push_back(
        "MoE kernels not stated: Megatron-Core's eager router and permutation, its defaults (config.moe_router_fusion "
        "and config.moe_permute_fusion for Transformer Engine's fused kernels)");
  if (run.stated_params > 0) {
    // A shape read wrongly (a field misnamed, an FFN width or vocabulary guessed) shows as a
    // parameter count other than the source's; rounding of the source's own figure stays under 0.1%.
    const std::int64_t built = model.total_params();
    const double off = 100.0 * static_cast<double>(built - run.stated_params) / static_cast<double>(run.stated_params);
    if (std::fabs(off) >= 0.1) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%+.1f%%", off);
      out.run.caveats.push_back("model.params: the source states " + std::to_string(run.stated_params) +
                                " parameters, parasim builds " + std::to_string(built) + " from the row's shape (" +
                                pct + ")");
    }
  }
  const int nodes = (run.gpus + run.gpus_per_node - 1) / run.gpus_per_node;
  // hardware.gpu's variant of the preset's GPU as the preset's own option (dgx-a100:gpu=A100-SXM4-40GB).
  std::string preset = run.preset;
  for (const std::string& option : {run.device_kind.empty() ? "" : "gpu=" + run.device_kind, run.nic_options})
    if (!option.empty()) preset += (preset.find(':') == std::string::npos ? ":" : ",") + option;
  const hardware::Cluster cluster =
      run.cluster_file ? hardware::load_cluster_file(run.preset) : hardware::make_cluster_preset(preset, nodes);
  out.device_kind = cluster.device_kinds().front();
  // A run on nodes of another size than the preset's (4 A100s a node on Perlmutter or Polaris):
  // its GPUs fill the preset's nodes in order, so groups that span its nodes span fewer here.
  if (const int per_node = cluster.max_devices_per_node();
      per_node != run.gpus_per_node && (run.gpus > run.gpus_per_node || run.gpus_per_node > per_node))
    out.run.caveats.push_back("hardware.gpus_per_node " + std::to_string(run.gpus_per_node) + ": " + run.preset +
                              " nodes hold " + std::to_string(per_node) +
                              " GPUs, and the run's GPUs fill them in order "
                              "(its intra- and inter-node groups are not the measured run's)");
  auto project = [&](const strategies::Strategy& strategy, profiler::AttentionKernel attention) {
    profiler::RooflineCostModel costs;
    costs.set_kernel_factors(options.calibration.kernels);
    costs.set_attention_kernel(attention);
    costs.set_fp32_math(run.fp32_math);
    costs.set_conv_layout(run.conv_layout);
    costs.set_optimizer_kernels(run.optimizer_kernels);
    costs.set_mixed_precision(run.mixed_precision);
    costs.set_moe_kernels(run.moe_kernels);
    strategies::StepSetup setup{.model = &model,
                                .cluster = &cluster,
                                .strategy = strategy,
                                .global_batch = run.global_batch,
                                .costs = &costs,
                                .optimizer = run.optimizer,
                                .dtype = run.dtype,
                                .granularity = strategies::Granularity::Op,
                                .symmetry = strategies::Symmetry::DataAndTensor,
                                .calibration = options.calibration,
                                .data_loading = options.data_loading,
                                .grad_accumulation = run.grad_accumulation};
    try {
      const simulator::EngineOptions engine{.collectives = simulator::CollectiveMode::Analytic};
      if (options.lowering == nullptr) return strategies::simulate_strategy(setup, engine);
      std::string key =
          strategies::to_string(strategy) + ";attention " + std::to_string(static_cast<int>(attention)) + ";kernels";
      for (const auto& [kind, f] : options.calibration.kernels) {
        char factors[64];
        std::snprintf(factors, sizeof factors, " %a %a", f.matrix, f.memory);  // exact: hexadecimal
        key += " " + kind + factors;
      }
      if (options.lowering->key == key) return strategies::simulate_lowered(setup, options.lowering->step, engine);
      strategies::StrategyResult r = strategies::simulate_strategy(setup, engine);
      options.lowering->key = std::move(key);
      options.lowering->step = std::move(r.lowered);  // the outcome reads nothing of it
      return r;
    } catch (const InputError& e) {
      // A combination the lowering refuses (ep > 1 on a dense model, fp8 on an A100): not simulated.
      strategies::StrategyResult refused;
      refused.simulated = false;
      refused.infeasible_reason = e.what();
      return refused;
    }
  };
  try {
    // The strategy's own consistency rules (zero=3 not with ep > 1, ...), as --strategy applies them.
    (void)strategies::parse_strategy(strategies::to_string(run.strategy), "the row's strategy");
  } catch (const InputError& e) {
    out.note = std::string("not simulated: ") + e.what();
    return out;
  }
  // A measured run fit in memory. What the row leaves open is settled the way its engineers would
  // have: the cheapest recomputation that fits; then, without a pipeline, the largest micro-batch
  // that fits, and with one the fastest fitting micro-batch size and number of virtual stages
  // (a pipeline's engineers tune both against the bubble); then - only when the row names no
  // attention kernel and the GPUs have one - a fused attention kernel where unfused attention
  // cannot fit. Each inference is stated in the caveats.
  std::vector<strategies::Recompute> recomputes{run.strategy.recompute};
  if (run.recompute_unknown)
    recomputes = {strategies::Recompute::None, strategies::Recompute::Selective, strategies::Recompute::Full};
  const bool pipelined = run.strategy.mp > 1;
  const std::int64_t per_replica = run.global_batch / run.strategy.dp;
  std::vector<int> micros{run.strategy.micro};  // micro-batches per step
  std::vector<std::int64_t> tried_sizes;        // samples per micro-batch, as the caveat lists them
  if (run.micro_unknown && !pipelined) {
    for (std::int64_t k = 2; k <= per_replica && k <= 1024; k *= 2)
      if (per_replica % k == 0) micros.push_back(static_cast<int>(k));
  } else if (run.micro_unknown) {
    micros.clear();
    for (std::int64_t size = 1; size <= 8 && size <= per_replica; size *= 2)
      if (per_replica % size == 0) {
        micros.push_back(static_cast<int>(per_replica / size));
        tried_sizes.push_back(size);
      }
  }
  // The model's layers and pipeline units, for the counts a row leaves open (found once, only then).
  const std::optional<strategies::ModelFacts> facts =
      run.interleave_unknown || run.recompute_unknown
          ? std::optional<strategies::ModelFacts>(strategies::model_facts(model, run.gpus_per_node))
          : std::nullopt;
  std::vector<int> interleaves{run.strategy.interleave};
  if (run.interleave_unknown) {
    // Megatron-LM gives each virtual stage the same number of layers: the divisors of a stage's
    // layers (the largest stage's where they do not divide evenly), as the planner's search space
    // counts them (transformer layers, else the units a partition may cut between).
    const int mp = run.strategy.mp;
    const int per_stage = (facts->layers + mp - 1) / mp;
    interleaves.clear();
    for (int v = 2; v <= per_stage && v <= 16; ++v)
      if (per_stage % v == 0 && static_cast<std::int64_t>(mp) * v <= facts->pipeline_units) interleaves.push_back(v);
    if (interleaves.empty()) interleaves.push_back(2);
  }
  const bool pick_fastest = pipelined && (run.micro_unknown || run.interleave_unknown);
  // Every count the row leaves open that was projected, with its step: what the choice of the
  // fastest is worth, said beside it (a user reads the spread, not only the best case).
  std::vector<OpenCount> open_counts;
  auto note_open = [&](const strategies::Strategy& s, const strategies::StrategyResult& c) {
    if (pick_fastest) open_counts.push_back({s.micro, s.interleave, static_cast<double>(c.step_time) * 1e-9});
  };
  // Attention the row does not name: fused on Hopper and later, where every framework that runs
  // on them does (Transformer Engine's cuDNN attention, PyTorch's SDPA from 2.0, FlashAttention);
  // unfused on older GPUs, whose published runs largely predate fused kernels (Megatron-LM to 2022).
  profiler::AttentionKernel base_attention = run.attention;
  const bool has_attention = models::has_dot_product_attention(model);
  if (!run.attention_stated && has_attention && every_gpu_at_least(cluster, "hopper")) {
    base_attention = profiler::AttentionKernel::Flash;
    out.run.caveats.push_back(
        "attention not stated: fused (flash), as frameworks run it on Hopper GPUs (Transformer Engine's cuDNN "
        "attention, PyTorch's scaled_dot_product_attention)");
  }
  const bool may_fuse = !run.attention_stated && base_attention == profiler::AttentionKernel::Unfused &&
                        every_gpu_at_least(cluster, "ampere");  // FlashAttention-2 runs on sm80+ (Dao 2023)
  strategies::StrategyResult r;
  strategies::StrategyResult first;
  std::string unfused_reason;  // why the chosen configuration did not fit with unfused attention
  bool found = false, have_first = false;
  // Full recomputation the row does not state may be partial: Megatron-LM's block method reruns the
  // first N transformer layers of each pipeline chunk and keeps the rest, and engineers who must
  // recompute pick the fewest layers that fit. Each (micro, interleave) tries N = 1, 2, ... up to
  // every layer; more layers only add compute, so the first that fits is that shape's fastest.
  // Otherwise the run's own count: every layer (0), or what calibrate settled it at.
  auto layer_counts = [&](strategies::Recompute recompute, int interleave) {
    std::vector<int> counts;
    if (!run.recompute_unknown) return std::vector<int>{run.strategy.recompute_layers};
    if (recompute == strategies::Recompute::Full) {
      const int chunks = std::max(1, run.strategy.mp) * std::max(1, interleave);
      const int per_chunk = (facts->layers + chunks - 1) / chunks;
      for (int n = 1; n < per_chunk; ++n) counts.push_back(n);
    }
    counts.push_back(0);  // every layer
    return counts;
  };
  for (std::size_t ri = 0; ri < recomputes.size() && !found; ++ri) {
    for (std::size_t mi = 0; mi < micros.size() && !(found && !pick_fastest); ++mi) {
      for (std::size_t vi = 0; vi < interleaves.size() && !(found && !pick_fastest); ++vi) {
        strategies::Strategy s = run.strategy;
        s.recompute = recomputes[ri];
        s.micro = micros[mi];
        s.interleave = interleaves[vi];
        profiler::AttentionKernel attention = base_attention;
        strategies::StrategyResult candidate;
        std::string reason;
        for (int layers : layer_counts(s.recompute, s.interleave)) {
          s.recompute_layers = layers;
          s.sp = run.strategy.sp;
          attention = base_attention;
          reason.clear();
          candidate = project(s, attention);
          if (candidate.simulated && !candidate.feasible && may_fuse) {
            strategies::StrategyResult fused = project(s, profiler::AttentionKernel::Flash);
            if (fused.simulated && fused.feasible) {
              reason = candidate.infeasible_reason;
              attention = profiler::AttentionKernel::Flash;
              candidate = std::move(fused);
            }
          }
          // Sequence parallelism the row does not state, where it alone makes the run fit: it shards
          // the norms' and residuals' activations and costs no more than the all-reduces it
          // replaces, so engineers short of memory turn it on before recomputing more.
          if (candidate.simulated && !candidate.feasible && run.sp_unknown && !s.sequence_parallel()) {
            strategies::Strategy sharded = s;
            sharded.sp = strategies::SeqParallel::On;
            strategies::StrategyResult with_sp = project(sharded, attention);
            if (with_sp.simulated && with_sp.feasible) {
              s = sharded;
              candidate = std::move(with_sp);
            }
          }
          // A count the lowering refuses (more layers than a chunk of this shape has) tries the next.
          if (candidate.simulated && candidate.feasible) break;
        }
        // The first candidate is the fallback when nothing fits; moved, not copied (its task graph
        // can hold millions of tasks), and only when it is not the result already.
        const bool is_first = !have_first;
        have_first = true;
        // A refusal by the lowering ends a plain search (the note says why) but not a search over
        // counts, where another count may be expressible (interleaving needs micro-batches in
        // multiples of the stages).
        if ((!candidate.simulated && pick_fastest) || (candidate.simulated && !candidate.feasible)) {
          if (is_first) first = std::move(candidate);
          continue;
        }
        note_open(s, candidate);
        if (found && candidate.step_time >= r.step_time) continue;  // found: the fallback is not needed
        found = true;
        out.run.strategy = s;
        out.run.attention = attention;
        unfused_reason = reason;
        r = std::move(candidate);
      }
    }
  }
  if (found && out.run.attention != base_attention)
    out.run.caveats.push_back("attention: with unfused attention the run " + unfused_reason +
                              "; the measured run fit, so it is projected with fused (flash) attention");
  if (!found) {
    // Nothing fits parasim's memory model, yet the run fit: project what the row leaves open the
    // way that needs least memory (full recomputation; sequence parallelism, which shards the
    // norms' and residuals' activations over the TP ranks; a fused attention kernel) and its tuned
    // counts at the fastest. The note says it was projected as if it fit.
    r = std::move(first);
    strategies::Strategy tight = run.strategy;
    if (run.recompute_unknown) tight.recompute = strategies::Recompute::Full;
    const bool shard_sequence = run.sp_unknown && !tight.sequence_parallel();
    if (shard_sequence) tight.sp = strategies::SeqParallel::On;
    const profiler::AttentionKernel attention = may_fuse ? profiler::AttentionKernel::Flash : base_attention;
    bool have = false;
    for (int micro : micros)
      for (int interleave : interleaves) {
        if (have && !pick_fastest) break;
        strategies::Strategy s = tight;
        s.micro = micro;
        s.interleave = interleave;
        strategies::StrategyResult candidate = project(s, attention);
        if (!candidate.simulated) continue;
        note_open(s, candidate);
        if (have && candidate.step_time >= r.step_time) continue;
        have = true;
        out.run.strategy = s;
        out.run.attention = attention;
        r = std::move(candidate);
      }
    if (have && (run.recompute_unknown || may_fuse || pick_fastest || run.micro_unknown || shard_sequence))
      out.run.caveats.push_back("nothing fits parasim's memory model; the measured run fit, so it is projected with " +
                                strategies::to_string(out.run.strategy) +
                                (may_fuse ? " and fused (flash) attention" : "") +
                                (run.recompute_unknown ? ", the recomputation that needs least memory" : "") +
                                (shard_sequence ? ", sequence parallelism (not stated)" : "") +
                                (pick_fastest ? ", its unstated counts at the fastest" : ""));
  }
  if (found && run.sp_unknown && out.run.strategy.sp != run.strategy.sp) {
    std::erase(out.run.caveats, std::string(kSpDefaultCaveat));
    out.run.caveats.push_back(
        "sequence parallelism not stated: on, without which the run does not fit parasim's memory model (it "
        "shards the norms' and residuals' activations over the TP ranks at no extra communication)");
  }
  if (run.recompute_unknown && found) {
    const strategies::Strategy& chosen = out.run.strategy;
    out.run.caveats.push_back(
        "recomputation not stated: " +
        (chosen.recompute_layers > 0
             ? "full on the first " + std::to_string(chosen.recompute_layers) + " transformer layer" +
                   (chosen.recompute_layers == 1 ? "" : "s") +
                   " of each pipeline chunk (recompute_layers; Megatron-LM's --recompute-method block), the rest "
                   "kept"
             : strategies::to_string(chosen.recompute)) +
        ", the cheapest that fits");
  }
  auto listed = [](const auto& values) {
    std::string text;
    for (std::size_t i = 0; i < values.size(); ++i)
      text += (i == 0 ? "" : i + 1 == values.size() ? " and " : ", ") + std::to_string(values[i]);
    return text;
  };
  if (run.micro_unknown && found) {
    const std::int64_t size = run.global_batch / run.strategy.dp / out.run.strategy.micro;
    const std::string per_step = " (" + std::to_string(out.run.strategy.micro) + " micro-batch" +
                                 (out.run.strategy.micro > 1 ? "es" : "") + " per step)";
    out.run.caveats.push_back(pipelined
                                  ? "micro-batch size not stated: " + std::to_string(size) + per_step +
                                        ", the fastest that fits of " + listed(tried_sizes) + " samples per micro-batch"
                                  : "micro-batch size not stated: " + std::to_string(size) +
                                        " per replica, the largest that fits" + per_step);
  }
  if (run.interleave_unknown && found)
    out.run.caveats.push_back("virtual stages not stated: interleave=" + std::to_string(out.run.strategy.interleave) +
                              ", the fastest that fits of " + listed(interleaves));
  out.cost_source = r.cost_source;
  if (!r.simulated) {
    out.note = "not simulated: " + r.infeasible_reason;
    return out;
  }
  out.scored = true;
  out.projected_step_s = static_cast<double>(r.step_time) * 1e-9;
  out.error_pct = 100.0 * (out.projected_step_s - run.measured_step_s) / run.measured_step_s;
  if (open_counts.size() > 1) {
    std::stable_sort(open_counts.begin(), open_counts.end(),
                     [](const OpenCount& a, const OpenCount& b) { return a.projected_step_s < b.projected_step_s; });
    out.open_counts = open_counts;
    const double slowest = open_counts.back().projected_step_s;
    std::string each;
    for (const OpenCount& c : open_counts) {
      char line[96];
      std::snprintf(line, sizeof line, "%s%.3f s at micro=%d,interleave=%d", each.empty() ? "" : "; ",
                    c.projected_step_s, c.micro, c.interleave);
      each += line;
    }
    char tail[96];
    std::snprintf(tail, sizeof tail, ": the slowest is %+.1f%% on the chosen, an error of %+.1f%%",
                  100.0 * (slowest - out.projected_step_s) / out.projected_step_s,
                  100.0 * (slowest - run.measured_step_s) / run.measured_step_s);
    out.run.caveats.push_back("the counts the row leaves open, each projected: " + each + tail);
  }
  TimeNs compute = 0, exposed = 0;
  for (const auto& d : r.devices)
    if (d.compute + d.exposed_comm > compute + exposed) compute = d.compute, exposed = d.exposed_comm;
  out.compute_s = static_cast<double>(compute) * 1e-9;
  out.exposed_comm_s = static_cast<double>(exposed) * 1e-9;
  out.bubble_s = static_cast<double>(r.bubble_time) * 1e-9;
  Bytes peak_bytes = 0;
  for (const auto& d : r.devices) peak_bytes = std::max(peak_bytes, d.peak_memory);
  out.projected_peak_gib = static_cast<double>(peak_bytes) / static_cast<double>(GiB);
  if (run.measured_peak_gib > 0)
    out.memory_error_pct = 100.0 * (out.projected_peak_gib - run.measured_peak_gib) / run.measured_peak_gib;
  if (!r.feasible) out.note = "projected as if it fit: " + r.infeasible_reason;
  // MFU both ways, and a measured step faster than the device's GEMMs can do the stated work: the
  // run did less work per sample than the row says (padding it trimmed, shorter sequences).
  const double peak = peak_flops_per_s(out.device_kind, run.dtype, run.fp32_math) * run.gpus;
  out.model_flops_per_step = profiler::matmul_flops_per_sample(model) * static_cast<double>(run.global_batch);
  if (peak > 0) {
    out.measured_mfu_pct = 100.0 * out.model_flops_per_step / (peak * run.measured_step_s);
    out.projected_mfu_pct = 100.0 * out.model_flops_per_step / (peak * out.projected_step_s);
    const auto spec = hardware::find_device_spec(out.device_kind);
    const hardware::KernelModel kernels = hardware::kernel_model(*spec);
    const bool tensor_cores = run.dtype != models::DType::F32 || run.fp32_math == profiler::Fp32Math::Tf32;
    const double ceiling = 100.0 * (tensor_cores ? kernels.tensor_core_fraction : kernels.cuda_core_fraction);
    if (out.measured_mfu_pct > ceiling) {
      char text[320];
      std::snprintf(text, sizeof text,
                    "the measured step means %.1f%% MFU for the work as stated (%.3g FLOPs a step), more than the "
                    "%.1f%% of peak the device's matrix products sustain in parasim's kernel model: the run likely "
                    "did less work per sample than the row states (unpadded or shorter sequences)",
                    out.measured_mfu_pct, out.model_flops_per_step, ceiling);
      out.run.caveats.push_back(text);
    }
  }
  return out;
}

/// Count, median and max |error| (and whose) over the outcomes `error` gives a value for.
template <typename ErrorOf>
void summarise_errors(const RunsReport& report, ErrorOf error, int& count, double& median_abs, double& max_abs,
                      std::string& worst) {
  std::vector<double> errors;
  worst.clear();
  max_abs = 0;
  for (const RunOutcome& o : report.outcomes) {
    const std::optional<double> e = error(o);
    if (!e) continue;
    errors.push_back(std::fabs(*e));
    if (worst.empty() || errors.back() > max_abs) max_abs = errors.back(), worst = o.run.id;
  }
  count = static_cast<int>(errors.size());
  median_abs = median(std::move(errors));
}

void summarise(RunsReport& report) {
  summarise_errors(
      report, [](const RunOutcome& o) { return o.scored ? std::optional(o.error_pct) : std::nullopt; }, report.scored,
      report.median_abs_error_pct, report.max_abs_error_pct, report.worst_id);
  summarise_errors(
      report,
      [](const RunOutcome& o) {
        return o.scored && o.run.measured_peak_gib > 0 ? std::optional(o.memory_error_pct) : std::nullopt;
      },
      report.memory_scored, report.median_abs_memory_error_pct, report.max_abs_memory_error_pct,
      report.worst_memory_id);
}

RunsReport evaluate_runs(const RunsFile& runs, const EvaluateOptions& options) {
  RunsReport report;
  report.path = runs.path;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    report.outcomes.push_back(evaluate_run(runs.runs[i], options));
    if (options.progress) options.progress(i + 1, runs.runs.size());
  }
  summarise(report);
  return report;
}

nlohmann::json runs_report_to_json(const RunsReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RunOutcome& o : report.outcomes) {
    nlohmann::json j{{"id", o.run.id},
                     {"scored", o.scored},
                     {"measured_step_s", o.run.measured_step_s},
                     {"measured_from", o.run.measured_from},
                     {"gpus", o.run.gpus},
                     {"strategy", strategies::to_string(o.run.strategy)},
                     {"global_batch", o.run.global_batch},
                     {"cluster", o.run.preset},
                     {"dtype", models::to_string(o.run.dtype)},
                     {"attention", profiler::to_string(o.run.attention)},
                     {"optimizer", parasim::to_string(o.run.optimizer)},
                     {"optimizer_kernels", parasim::to_string(o.run.optimizer_kernels)},
                     {"mixed_precision", profiler::to_string(o.run.mixed_precision)},
                     {"loss", o.run.fused_loss ? "fused" : "unfused"},
                     {"grad_accumulation", describe(o.run.grad_accumulation, o.run.dtype)}};
    if (o.run.dtype == models::DType::F32) j["fp32_math"] = profiler::to_string(o.run.fp32_math);
    if (o.experts) j["moe_kernels"] = profiler::to_string(o.run.moe_kernels);
    if (o.scored) {
      j["projected_step_s"] = o.projected_step_s;
      j["error_pct"] = o.error_pct;
      j["compute_s"] = o.compute_s;
      j["exposed_comm_s"] = o.exposed_comm_s;
      j["bubble_s"] = o.bubble_s;
      j["model_flops_per_step"] = o.model_flops_per_step;
      j["measured_mfu_pct"] = o.measured_mfu_pct;
      j["projected_mfu_pct"] = o.projected_mfu_pct;
      j["cost_source"] = o.cost_source;
      j["projected_peak_gib"] = o.projected_peak_gib;
      if (!o.open_counts.empty()) {
        nlohmann::json open = nlohmann::json::array();
        for (const OpenCount& c : o.open_counts)
          open.push_back({{"micro", c.micro}, {"interleave", c.interleave}, {"projected_step_s", c.projected_step_s}});
        j["open_counts"] = std::move(open);
      }
      if (o.run.measured_peak_gib > 0) {
        j["measured_peak_gib"] = o.run.measured_peak_gib;
        j["memory_error_pct"] = o.memory_error_pct;
      }
    }
    if (!o.note.empty()) j["note"] = o.note;
    j["caveats"] = o.run.caveats;
    rows.push_back(std::move(j));
  }
  return {{"schema", "parasim.runs-validation/1"},
          {"runs_file", report.path},
          {"scored", report.scored},
          {"median_abs_error_pct", report.median_abs_error_pct},
          {"max_abs_error_pct", report.max_abs_error_pct},
          {"worst", report.worst_id},
          {"memory_scored", report.memory_scored},
          {"median_abs_memory_error_pct", report.median_abs_memory_error_pct},
          {"max_abs_memory_error_pct", report.max_abs_memory_error_pct},
          {"worst_memory", report.worst_memory_id},
          {"rows", rows}};
}

}  // namespace parasim::validation
