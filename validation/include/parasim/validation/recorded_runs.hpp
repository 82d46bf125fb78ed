// Recorded runs: measured step times of real training runs (papers, vendor tables, a user's own
// cluster) and parasim's projection of each, side by side. No execution: this is how parasim is
// checked against runs at a scale no test machine has. The file format is the one of
// shared/data/published_runs.json ("schema": "published-runs/1"); docs/fidelity.md describes it.
//
// Example:
//   RunsFile runs = load_runs_file("published_runs.json");       // InputError naming file and field
//   RunsReport report = evaluate_runs(runs, {});                     // the default model
//   for (const RunOutcome& o : report.outcomes) std::cout << o.run.id << " " << o.error_pct << "\n";
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/calibration.hpp"
#include "parasim/common/data_loading.hpp"
#include "parasim/common/grad_accumulation.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::validation {

/// One recorded run, as parasim can express it. `skip_reason` is set when some field the run
/// depends on is unknown or names something parasim does not model; such runs are listed, never
/// scored.
struct RecordedRun {
  std::string id;
  std::string source;
  std::optional<std::string> zoo_model;        // a zoo name, or else `transformer`
  models::TransformerConfig transformer;       // hyperparameters when no zoo model is named
  std::int64_t seq_len = 0;                    // 0: the model's default
  /// Tokens every micro-batch is priced at when samples vary in length and are padded per
  /// micro-batch (config.padding); 0: seq_len, every sample padded to the full length.
  std::int64_t padded_seq_len = 0;
  std::int64_t mlm_positions = 0;              // model.mlm_positions: masked positions the MLM head runs on
  /// model.params: the parameter count the source states (0: none); evaluate_run says when
  /// parasim's build of the row's shape differs from it.
  std::int64_t stated_params = 0;
  std::string preset;                          // cluster preset (first word of parasim_preset)
  /// parasim_preset names a parasim.cluster/1 file: `preset` is its path (relative ones resolved
  /// against the runs file's folder), loaded as it is, whatever the row's node count.
  bool cluster_file = false;
  /// hardware.gpu's variant of the preset's GPU ("A100 40GB" on dgx-a100): the kind the preset runs
  /// its devices as (the preset option gpu=KIND: memory and HBM bandwidth); empty: the preset's own.
  std::string device_kind;
  /// hardware.inter_node's NICs where they differ from the preset's ("4 Omni-Path links per node"):
  /// the preset options that give its nodes those NICs ("ib=edr,nics=4"); empty: the preset's own.
  std::string nic_options;
  int gpus = 0;
  int gpus_per_node = 8;
  strategies::Strategy strategy;
  std::int64_t global_batch = 0;
  models::DType dtype = models::DType::F16;
  profiler::Optimizer optimizer = profiler::Optimizer::Adam;
  profiler::AttentionKernel attention = profiler::AttentionKernel::Unfused;  // config.attention
  profiler::Fp32Math fp32_math = profiler::Fp32Math::PyTorch;                // config.precision tf32: Tf32
  bool attention_stated = false;                                             // config.attention named a kernel
  bool fused_loss = false;  // config.loss names a fused cross entropy (models::set_fused_loss)
  profiler::ConvLayout conv_layout = profiler::ConvLayout::Nchw;             // config.memory_format
  profiler::OptimizerKernels optimizer_kernels = profiler::OptimizerKernels::Fused;  // config.optimizer "foreach"
  profiler::MixedPrecision mixed_precision = profiler::MixedPrecision::Native;       // config.precision (autocast)
  profiler::MoeKernels moe_kernels;  // config.moe_router_fusion / moe_permute_fusion (Megatron-Core's flags)
  bool moe_kernels_stated = false;   // either flag given
  /// config.grad_accumulation, else from config.ddp_impl (Megatron-LM's local DDP: buffer in fp16
  /// training, fp32-buffer otherwise; PyTorch DDP: in-place), else auto.
  GradAccumulation grad_accumulation = GradAccumulation::Auto;
  /// config.micro_batch not stated: without a pipeline the largest that fits; with one the
  /// fastest that fits of 1, 2, 4 and 8 samples (the bubble against GEMM sizes, as its engineers tuned it).
  bool micro_unknown = false;
  /// An interleaved schedule with no number of virtual stages: the fastest that fits of the
  /// divisors (>= 2) of the layers per stage.
  bool interleave_unknown = false;
  bool recompute_unknown = false;              // config.recompute not stated: the cheapest that fits
  /// config.sequence_parallel absent or neither yes nor no, with tp > 1: parasim's default pairing
  /// (on with selective recomputation), or on where nothing fits otherwise.
  bool sp_unknown = false;
  double measured_step_s = 0;                  // the measured figure, as a step time
  /// measured.peak_allocated_gib: the busiest GPU's peak of allocated memory
  /// (torch.cuda.max_memory_allocated, GiB); 0: not measured.
  double measured_peak_gib = 0;
  std::string measured_from;                   // how: "derived_step_seconds", "global_batch / sequences_per_s"
  std::vector<std::string> caveats;            // differences parasim does not model, stated
  std::string skip_reason;
};

struct RunsFile {
  std::string path;
  std::vector<RecordedRun> runs;
};

/// Reads a published-runs/1 file. Free-text fields (schedule, recompute, precision) are matched by
/// keyword; numeric fields are checked. InputError naming the file, the JSON path and what was
/// expected on anything malformed.
RunsFile load_runs_file(const std::string& path);
/// Several files, comma-separated ("a.json,b.json"): their rows in order, as one RunsFile whose
/// path is `paths`. InputError on an empty name or a row id used by an earlier file.
RunsFile load_runs_files(const std::string& paths);
RunsFile parse_runs(const nlohmann::json& doc, const std::string& origin);

/// One choice of the pipeline counts a row leaves open (micro-batches per step, virtual stages)
/// and its projected step.
struct OpenCount {
  int micro = 0;
  int interleave = 0;
  double projected_step_s = 0;
};

/// What parasim projects for one run.
struct RunOutcome {
  RecordedRun run;
  bool scored = false;          // false: skipped (run.skip_reason) or infeasible (note says why)
  std::string device_kind;      // the GPU kind of the run's cluster preset (empty when skipped)
  double projected_step_s = 0;
  double error_pct = 0;         // 100 (projected - measured) / measured
  double compute_s = 0;         // busiest simulated device
  double exposed_comm_s = 0;
  double bubble_s = 0;
  /// Model FLOPs utilisation: the matrix-product FLOPs of one step's forward and backward passes
  /// (recomputation not counted; a mixture of experts' active experts only) over the GPUs' dense
  /// peak in the run's precision for the measured and the projected step (0 when unknown).
  double model_flops_per_step = 0;
  double measured_mfu_pct = 0;
  double projected_mfu_pct = 0;
  /// The busiest device's projected peak memory (GiB), and its error against a measured peak.
  double projected_peak_gib = 0;
  double memory_error_pct = 0;  // 100 (projected - measured) / measured; 0 without a measured peak
  std::string cost_source;
  bool experts = false;  // the built model has a mixture-of-experts bank (its moe_kernels apply)
  std::string note;
  /// When the row leaves its pipeline's counts open and the fastest is projected: every choice
  /// projected (two or more), fastest first; empty otherwise.
  std::vector<OpenCount> open_counts;
};

struct RunsReport {
  std::string path;
  std::vector<RunOutcome> outcomes;
  int scored = 0;
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  std::string worst_id;
  /// Over the scored rows with a measured peak memory.
  int memory_scored = 0;
  double median_abs_memory_error_pct = 0;
  double max_abs_memory_error_pct = 0;
  std::string worst_memory_id;
};

/// One run's lowered step, kept between projections that differ only in what the simulation alone
/// reads (the calibration's communication factors and step overhead): calibrate's slopes in those.
struct RunLowering {
  std::string key;  // what the step was lowered for: strategy, attention kernel, kernel factors
  strategies::LoweredStep step;
};

struct EvaluateOptions {
  /// Applied on top of the default GPU kernel model and NCCL collective costs.
  Calibration calibration{};
  DataLoading data_loading{};  // the host data loader of every run (off by default)
  /// Called after each run (for a progress bar); may be empty.
  std::function<void(std::size_t done, std::size_t total)> progress;
  /// evaluate_run only, for one run and data loading: a projection for the same strategy, attention
  /// and kernel factors as the step held here simulates it again instead of lowering it; any other
  /// is lowered and kept here. nullptr: every projection is lowered.
  RunLowering* lowering = nullptr;
};

/// Projects one run's step (op granularity, so that every tensor-parallel collective sits where it
/// runs; analytic collectives; one representative replica and TP rank, as the planner simulates).
RunOutcome evaluate_run(const RecordedRun& run, const EvaluateOptions& options);
RunsReport evaluate_runs(const RunsFile& runs, const EvaluateOptions& options);

/// Median and max |error| over the scored outcomes (fills the summary fields).
void summarise(RunsReport& report);

nlohmann::json runs_report_to_json(const RunsReport& report);

}  // namespace parasim::validation
