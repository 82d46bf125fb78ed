#include "parasim/strategies/efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::strategies {

namespace {

std::vector<Dataset> make_datasets() {
  return {
      {"imagenet-1k", 1'281'167, "images",
       "ILSVRC-2012 training set (Russakovsky et al. 2015, IJCV): 1,281,167 images"},
      {"cifar-10", 50'000, "images", "CIFAR-10 training set (Krizhevsky 2009): 50,000 images"},
      {"wmt16-en-de", 4'500'000, "sentence pairs",
       "WMT16 English-German news translation training data (Bojar et al. 2016): ~4.5M sentence pairs"},
      {"lm1b", 38'432'444, "sequences of 20 tokens",
       "One Billion Word benchmark (Chelba et al. 2013): 768,648,884 training tokens / 20-token sequences"},
      {"openwebtext", 8'789'062, "sequences of 1024 tokens",
       "OpenWebText (Gokaslan & Cohen 2019): ~9.0B GPT-2 tokens / 1024-token sequences"},
      {"gpt3-300b-tokens", 146'484'375, "sequences of 2048 tokens",
       "GPT-3 training budget (Brown et al. 2020): 300B tokens / 2048-token sequences"},
      {"synthetic", 100'000, "samples", "assumed: a nominal 100k-sample dataset for test models"},
  };
}

double clamp_positive(double v, const char* what) {
  if (!std::isfinite(v) || v <= 0)
    throw InputError(std::string("statistical efficiency: ") + what + " must be a positive finite number");
  return v;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

// Least-squares fit of E = a + b*B (a = E_min, b = E_min/B_crit). Falls back to "no loss" when the
// points show no growth with batch (b <= 0) or the fit is not finite.
void fit_critical_batch(const std::vector<EfficiencyPoint>& pts, double& e_min, double& b_crit) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(pts.size());
  for (const auto& p : pts) {
    sx += p.batch;
    sy += p.epochs;
    sxx += p.batch * p.batch;
    sxy += p.batch * p.epochs;
  }
  const double den = n * sxx - sx * sx;
  const double slope = den != 0 ? (n * sxy - sx * sy) / den : 0;
  const double intercept = (sy - slope * sx) / n;
  // Sums past the double range (batches near 1e300) leave NaN or inf: no usable growth either.
  if (!(slope > 0) || !(intercept > 0) || !std::isfinite(slope) || !std::isfinite(intercept)) {
    e_min = pts.front().epochs;
    b_crit = 0;  // 0 means "no growth" in extrapolation
    return;
  }
  e_min = intercept;
  b_crit = intercept / slope;
}

}  // namespace

const std::vector<Dataset>& datasets() {
  static const std::vector<Dataset> d = make_datasets();
  return d;
}

const Dataset& dataset(const std::string& name) {
  for (const auto& d : datasets())
    if (d.name == name) return d;
  std::string known;
  for (const auto& d : datasets()) known += (known.empty() ? "" : ", ") + d.name;
  throw InputError("unknown dataset \"" + name + "\"; known datasets: " + known);
}

StatisticalEfficiency StatisticalEfficiency::critical_batch(double e_min, double b_crit, std::string source) {
  StatisticalEfficiency e;
  e.kind_ = EfficiencyKind::CriticalBatch;
  e.e_min_ = clamp_positive(e_min, "E_min");
  e.b_crit_ = clamp_positive(b_crit, "B_crit");
  e.source_ = std::move(source);
  return e;
}

StatisticalEfficiency StatisticalEfficiency::none(double epochs, std::string source) {
  StatisticalEfficiency e;
  e.kind_ = EfficiencyKind::None;
  e.e_min_ = clamp_positive(epochs, "epochs");
  e.source_ = std::move(source);
  return e;
}

StatisticalEfficiency StatisticalEfficiency::table(std::vector<EfficiencyPoint> points, std::string source) {
  if (points.size() < 2) throw InputError(source + ": an efficiency table needs at least 2 (batch, epochs) points");
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i].batch) || points[i].batch <= 0 || !std::isfinite(points[i].epochs) ||
        points[i].epochs <= 0)
      throw InputError(source + ": point " + std::to_string(i + 1) +
                       ": batch and epochs must be positive finite numbers");
    if (i > 0 && points[i].batch <= points[i - 1].batch)
      throw InputError(source + ": point " + std::to_string(i + 1) + ": batches must be strictly increasing");
  }
  StatisticalEfficiency e;
  e.kind_ = EfficiencyKind::Table;
  e.points_ = std::move(points);
  e.source_ = std::move(source);
  fit_critical_batch(e.points_, e.e_min_, e.b_crit_);
  return e;
}

StatisticalEfficiency StatisticalEfficiency::table_from_csv(const std::filesystem::path& csv,
                                                            std::int64_t dataset_samples) {
  const std::string text = read_text_file(csv);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool header_seen = false;
  bool in_steps = false;
  std::vector<EfficiencyPoint> pts;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto comma = line.find(',');
    const std::string where = csv.string() + ":" + std::to_string(lineno);
    if (comma == std::string::npos)
      throw InputError(where + ": expected two comma-separated columns, found \"" + line + "\"");
    const std::string a = trim(line.substr(0, comma));
    const std::string b = trim(line.substr(comma + 1));
    if (!header_seen) {
      if (a != "batch" || (b != "epochs" && b != "steps"))
        throw InputError(where + ": expected the header \"batch,epochs\" or \"batch,steps\", found \"" + line + "\"");
      in_steps = b == "steps";
      if (in_steps && dataset_samples <= 0)
        throw InputError(where + ": a batch,steps table needs the dataset size to convert steps to epochs");
      header_seen = true;
      continue;
    }
    double batch = 0, value = 0;
    try {
      std::size_t ia = 0, ib = 0;
      batch = std::stod(a, &ia);
      value = std::stod(b, &ib);
      if (ia != a.size() || ib != b.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw InputError(where + ": expected two numbers, found \"" + line + "\"");
    }
    if (!std::isfinite(batch) || !std::isfinite(value) || batch <= 0 || value <= 0)
      throw InputError(where + ": batch and " + std::string(in_steps ? "steps" : "epochs") +
                       " must be positive finite numbers, found \"" + line + "\"");
    const double epochs = in_steps ? value * batch / static_cast<double>(dataset_samples) : value;
    pts.push_back({batch, epochs});
  }
  if (!header_seen)
    throw InputError(csv.string() + ": empty efficiency table; expected a \"batch,epochs\" header and points");
  return table(std::move(pts), csv.string());
}

double StatisticalEfficiency::epochs(double batch) const {
  const double e = epochs_unchecked(batch);
  // Extreme tables (epochs near DBL_MAX, batches near 0) can extrapolate past the double range.
  if (!std::isfinite(e) || !(e > 0)) {
    std::ostringstream msg;
    msg << source_ << ": the epoch count at global batch " << batch << " is " << e
        << ", not a positive finite number; check the table's batches and epochs";
    throw InputError(msg.str());
  }
  return e;
}

double StatisticalEfficiency::epochs_unchecked(double batch) const {
  if (!(batch > 0)) throw InputError("statistical efficiency: global batch must be positive");
  switch (kind_) {
    case EfficiencyKind::None: return e_min_;
    case EfficiencyKind::CriticalBatch: return e_min_ * (1.0 + batch / b_crit_);
    case EfficiencyKind::Table: {
      const auto& p = points_;
      auto grow = [&](double b) { return b_crit_ > 0 ? 1.0 + b / b_crit_ : 1.0; };
      if (batch <= p.front().batch) return p.front().epochs * grow(batch) / grow(p.front().batch);
      if (batch >= p.back().batch) return p.back().epochs * grow(batch) / grow(p.back().batch);
      for (std::size_t i = 1; i < p.size(); ++i) {
        if (batch <= p[i].batch) {
          // log-log interpolation: a power law between neighbouring measurements.
          const double t = std::log(batch / p[i - 1].batch) / std::log(p[i].batch / p[i - 1].batch);
          return std::exp(std::log(p[i - 1].epochs) + t * (std::log(p[i].epochs) - std::log(p[i - 1].epochs)));
        }
      }
      return p.back().epochs;
    }
  }
  return e_min_;
}

std::string StatisticalEfficiency::describe() const {
  std::ostringstream s;
  s.precision(4);
  switch (kind_) {
    case EfficiencyKind::None: s << "none (perfect scaling, " << e_min_ << " epochs)"; break;
    case EfficiencyKind::CriticalBatch: s << "critical-batch E_min=" << e_min_ << " B_crit=" << b_crit_; break;
    case EfficiencyKind::Table:
      s << "table of " << points_.size() << " points, extrapolated with E_min=" << e_min_ << " B_crit=" << b_crit_;
      break;
  }
  if (!source_.empty()) s << " [" << source_ << "]";
  return s.str();
}

const std::vector<ModelTrainingDefaults>& model_training_defaults() {
  // ref_batch/ref_epochs: the model's standard recipe; b_crit: critical batch. E_min follows from
  // E(ref_batch) = ref_epochs. Nothing here is tuned to make any projection come out a certain way.
  static const std::string imagenet_bcrit =
      "B_crit 16384: McCandlish et al. 2018 put ImageNet's critical batch in the tens of thousands late in training; "
      "Goyal et al. 2017 keep 90-epoch accuracy up to batch 8k";
  static const std::vector<ModelTrainingDefaults> d = {
      {"resnet50", "imagenet-1k", 256, 90, 16384, "90 epochs at batch 256 (Goyal et al. 2017); " + imagenet_bcrit},
      {"inception_v3", "imagenet-1k", 256, 90, 16384,
       "assumed: the same 90-epoch ImageNet recipe as ResNet-50 (Goyal et al. 2017); " + imagenet_bcrit},
      {"inception_v3_noaux", "imagenet-1k", 256, 90, 16384, "as inception_v3"},
      {"googlenet", "imagenet-1k", 256, 90, 16384, "assumed: 90-epoch ImageNet recipe; " + imagenet_bcrit},
      {"vgg16", "imagenet-1k", 256, 74, 16384, "74 epochs at batch 256 (Simonyan & Zisserman 2015); " + imagenet_bcrit},
      {"googlenet_cifar", "cifar-10", 128, 200, 2048,
       "assumed: 200 epochs at batch 128 (common CIFAR-10 recipe); B_crit 2048 assumed, McCandlish et al. 2018 report "
       "CIFAR-10 noise scales in the low thousands"},
      {"vgg16_cifar", "cifar-10", 128, 200, 2048, "as googlenet_cifar"},
      {"resnet50_cifar", "cifar-10", 128, 200, 2048, "as googlenet_cifar"},
      {"gnmt", "wmt16-en-de", 1024, 6, 8192,
       "assumed: ~6 epochs at batch 1024 sentence pairs (MLPerf GNMT reference order of magnitude); B_crit 8192 "
       "assumed"},
      {"biglstm", "lm1b", 4096, 5, 32768,
       "assumed: ~5 epochs at batch 4096 sequences (Jozefowicz et al. 2016 scale); B_crit 32768 sequences (~650k "
       "tokens) assumed, McCandlish et al. 2018 find Billion Word noise scales of order 10^5-10^6 tokens"},
      {"gpt2", "openwebtext", 512, 1, 2048,
       "assumed: one pass over OpenWebText at 512 x 1024 tokens; B_crit ~2M tokens (Kaplan et al. 2020, B_crit at "
       "loss ~3)"},
      {"bert_large", "openwebtext", 256, 1, 2048, "assumed, as gpt2"},
      {"megatron_22b", "gpt3-300b-tokens", 1536, 1, 2048,
       "assumed: 300B tokens at 1536 x 2048 (Brown et al. 2020 batch 3.2M tokens); B_crit 4M tokens (Kaplan et al. "
       "2020)"},
      {"gpt3_175b", "gpt3-300b-tokens", 1536, 1, 2048,
       "as megatron_22b: 300B tokens, batch 3.2M tokens (Brown et al. 2020)"},
      {"turing_530b", "gpt3-300b-tokens", 1920, 1, 2048,
       "assumed: 270B-token budget class (Smith et al. 2022 batch 1920); B_crit 4M tokens (Kaplan et al. 2020)"},
      {"megatron_1t", "gpt3-300b-tokens", 3072, 1, 2048, "assumed (Narayanan et al. 2021 batch 3072)"},
      {"tiny_cnn", "synthetic", 64, 10, 4096, "assumed (test model)"},
      {"tiny_lstm", "synthetic", 64, 10, 4096, "assumed (test model)"},
  };
  return d;
}

ModelTrainingDefaults training_defaults_for(const std::string& model) {
  for (const auto& d : model_training_defaults())
    if (d.model == model) return d;
  return {model, "synthetic", 256, 90, 16384, "assumed: generic 90 epochs at batch 256, B_crit 16384"};
}

StatisticalEfficiency default_efficiency(const std::string& model) {
  const auto d = training_defaults_for(model);
  const double e_min = d.ref_epochs / (1.0 + d.ref_batch / d.b_crit);
  return StatisticalEfficiency::critical_batch(e_min, d.b_crit, d.source);
}

StatisticalEfficiency parse_efficiency(const std::string& spec, const std::string& model,
                                       std::int64_t dataset_samples) {
  if (spec.empty() || spec == "critical-batch") return default_efficiency(model);
  if (spec == "none") {
    const auto d = training_defaults_for(model);
    return StatisticalEfficiency::none(d.ref_epochs, "perfect scaling at the reference " +
                                                         std::to_string(static_cast<int>(d.ref_epochs)) + " epochs");
  }
  if (spec.rfind("table:", 0) == 0) return StatisticalEfficiency::table_from_csv(spec.substr(6), dataset_samples);
  if (spec.rfind("critical-batch:", 0) == 0) {
    const std::string rest = spec.substr(15);
    const auto colon = rest.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("format");
      std::size_t i1 = 0, i2 = 0;
      const std::string a = rest.substr(0, colon), b = rest.substr(colon + 1);
      const double e_min = std::stod(a, &i1);
      const double b_crit = std::stod(b, &i2);
      if (i1 != a.size() || i2 != b.size()) throw std::invalid_argument("format");
      return StatisticalEfficiency::critical_batch(e_min, b_crit, "given on the command line");
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
    throw InputError("--efficiency " + spec + ": expected critical-batch:E_MIN:B_CRIT with two positive numbers");
  }
  throw InputError("--efficiency " + spec +
                   ": expected critical-batch, critical-batch:E_MIN:B_CRIT, table:FILE.csv or none");
}

TimeToTrain time_to_train(const StatisticalEfficiency& eff, std::int64_t dataset_samples, std::int64_t global_batch,
                          TimeNs step_time, TimeNs per_epoch_overhead) {
  if (global_batch <= 0) throw InputError("time to train: global batch must be positive");
  if (dataset_samples <= 0) throw InputError("time to train: dataset size must be positive");
  TimeToTrain t;
  t.epochs = eff.epochs(static_cast<double>(global_batch));
  t.steps_per_epoch = (dataset_samples + global_batch - 1) / global_batch;
  t.total_steps = t.epochs * static_cast<double>(t.steps_per_epoch);
  t.step_time = step_time;
  const double total =
      t.total_steps * static_cast<double>(step_time) + t.epochs * static_cast<double>(per_epoch_overhead);
  // Past ~292 years the nanoseconds leave int64 (llround is undefined there): saturate, so that
  // such a row ranks last instead of wrapping to a negative time that would win a plan.
  t.total = total < 9.2e18 ? static_cast<TimeNs>(std::llround(total)) : std::numeric_limits<TimeNs>::max();
  return t;
}

}  // namespace parasim::strategies
