// Statistical efficiency: how many epochs a model needs to reach its target quality when trained
// with global batch B, and the end-to-end time to train that follows.
//
//   critical-batch  E(B) = E_min * (1 + B / B_crit)   (McCandlish et al. 2018, "An Empirical Model
//                   of Large-Batch Training", eq. 2.11 written in epochs)
//   table           measured (batch, epochs|steps) points, interpolated log-log, extrapolated with the
//                   critical-batch form fitted to the points
//   none            E(B) = E_ref: perfect scaling, no statistical-efficiency loss
//
//   time_to_train = E(B) * ceil(dataset_samples / B) * step_time  +  E(B) * per_epoch_overhead
//
// Example:
//   auto eff = default_efficiency("resnet50");            // critical-batch, ImageNet defaults
//   double e = eff.epochs(8192);                           // epochs to converge at B = 8192
//   TimeNs t = time_to_train(eff, dataset("imagenet-1k"), 8192, step_time);
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::strategies {

struct Dataset {
  std::string name;
  std::int64_t samples = 0;  // training samples per epoch (images, sentence pairs, sequences)
  std::string unit;          // "images", "sentence pairs", "sequences of 20 tokens"
  std::string source;
};

/// Known datasets: imagenet-1k, cifar-10, wmt16-en-de, lm1b, openwebtext, gpt3-300b-tokens, synthetic.
const std::vector<Dataset>& datasets();
/// InputError listing known names if unknown.
const Dataset& dataset(const std::string& name);

enum class EfficiencyKind : std::uint8_t { CriticalBatch, Table, None };

struct EfficiencyPoint {
  double batch = 0;
  double epochs = 0;
};

class StatisticalEfficiency {
 public:
  /// E(B) = e_min (1 + B / b_crit).
  static StatisticalEfficiency critical_batch(double e_min, double b_crit, std::string source);
  /// Perfect scaling at `epochs` regardless of batch.
  static StatisticalEfficiency none(double epochs, std::string source);
  /// Measured points (at least 2, strictly increasing batches, positive epochs).
  static StatisticalEfficiency table(std::vector<EfficiencyPoint> points, std::string source);
  /// Reads a CSV with a header "batch,epochs" or "batch,steps" (steps are converted with
  /// `dataset_samples`: epochs = steps * batch / samples). Lines starting with '#' are comments.
  /// InputError naming file:line for anything malformed.
  static StatisticalEfficiency table_from_csv(const std::filesystem::path& csv, std::int64_t dataset_samples);

  EfficiencyKind kind() const { return kind_; }
  /// Epochs to converge at global batch `batch` (> 0). InputError naming the source when the
  /// result is not a positive finite number (a table extrapolated past the double range).
  double epochs(double batch) const;
  /// Parameters of the critical-batch form (for `table`, those fitted for extrapolation).
  double e_min() const { return e_min_; }
  double b_crit() const { return b_crit_; }
  const std::vector<EfficiencyPoint>& points() const { return points_; }
  const std::string& source() const { return source_; }
  /// "critical-batch E_min=88.6 B_crit=16384 (source)".
  std::string describe() const;

 private:
  double epochs_unchecked(double batch) const;

  EfficiencyKind kind_ = EfficiencyKind::None;
  double e_min_ = 1;
  double b_crit_ = 0;
  std::vector<EfficiencyPoint> points_;
  std::string source_;
};

/// Per-model defaults (critical-batch) with their sources; falls back to an "assumed" default for
/// models without a published figure. `model` is a zoo name.
struct ModelTrainingDefaults {
  std::string model;
  std::string dataset;
  double ref_batch = 0;    // batch of the reference recipe
  double ref_epochs = 0;   // epochs of the reference recipe at ref_batch
  double b_crit = 0;       // critical batch (samples)
  std::string source;
};
const std::vector<ModelTrainingDefaults>& model_training_defaults();
/// Defaults for `model` (exact zoo name); a generic "assumed" entry if unknown.
ModelTrainingDefaults training_defaults_for(const std::string& model);
/// critical-batch efficiency for `model` from its defaults: E_min chosen so that E(ref_batch) = ref_epochs.
StatisticalEfficiency default_efficiency(const std::string& model);

/// Parses the CLI's --efficiency value: "critical-batch", "critical-batch:E_MIN:B_CRIT", "none",
/// "table:FILE.csv". Defaults come from `model`.
StatisticalEfficiency parse_efficiency(const std::string& spec, const std::string& model, std::int64_t dataset_samples);

struct TimeToTrain {
  double epochs = 0;
  std::int64_t steps_per_epoch = 0;
  double total_steps = 0;
  TimeNs step_time = 0;
  TimeNs total = 0;
};

/// E(B) * ceil(samples / B) * step_time + E(B) * per_epoch_overhead.
TimeToTrain time_to_train(const StatisticalEfficiency& eff, std::int64_t dataset_samples, std::int64_t global_batch,
                          TimeNs step_time, TimeNs per_epoch_overhead = 0);

}  // namespace parasim::strategies
