// Which per-op cost model simulate, plan and project use, and the line that says so:
//   --profile FILE    that measured profile (checked against the model)
//   --profile none    the roofline, without looking in traces/
//   neither           a profile in --traces DIR (default ./traces, where `parasim profile` and
//                     scripts/gpu_check.sh write) measured on one of the cluster's device kinds for
//                     this model and dtype, by default; else the roofline, labelled as the fallback.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parasim/common/calibration.hpp"
#include "parasim/common/grad_accumulation.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/profiler/roofline.hpp"

namespace CLI {
class App;
}

namespace parasim::cli {

/// The GPU kernels the framework runs, as the command line names them: --attention (auto,
/// unfused, flash, flash2 or triton), --fp32-math (pytorch, tf32 or fp32) and --conv-layout (nchw
/// or nhwc). Parsed, and refused with the option named, by configure_model_costs().
struct KernelChoice {
  std::string attention = "auto";
  std::string fp32_math = "pytorch";
  std::string conv_layout = "nchw";
  std::string optimizer_kernels = "fused";
  std::string mixed_precision = "native";
  std::string loss = "unfused";
  std::string moe_kernels = "eager";
};

/// Registers the options of `k` on `cmd`, each help text starting with `prefix` (simulate
/// says "Model mode: ").
void add_kernel_choice_options(CLI::App& cmd, KernelChoice& k, const std::string& prefix);
/// The first of --attention, --fp32-math, --conv-layout, --optimizer-kernels, --mixed-precision, --loss
/// and --moe-kernels set to other than its default, or nullptr: what a task graph, which carries its
/// own durations, cannot use.
const char* first_changed_pricing_option(const KernelChoice& k);

/// --loss: whether the model's cross-entropy runs as one fused kernel (true) or in fp32 from a copy
/// of the logits (false). InputError naming the option for anything but unfused or fused.
bool fused_loss_arg(const KernelChoice& k);
/// Applies --loss to `model` (what its loss keeps and holds in memory; times are unchanged).
void apply_loss_choice(models::Model& model, const KernelChoice& k);

struct CostChoice {
  std::unique_ptr<profiler::CostModel> costs;
  std::string note;  // one line for the human output: what was chosen and why
};

inline constexpr const char* kDefaultTracesDir = "traces";

/// `traces_given`: --traces was on the command line (an error together with --profile FILE or
/// --profile none, which never look there).
CostChoice choose_costs(const std::string& profile, const std::string& traces_dir, bool traces_given,
                        const models::Model& model, const std::vector<std::string>& device_kinds);

/// --attention auto: fused (flash) for a 16- or 8-bit model when every device of the cluster is a
/// GPU of the Ampere generation or newer, where every current framework runs fused attention
/// (FlashAttention-2 on sm80+, cuDNN's and FlashAttention-3's kernels on Hopper); unfused otherwise
/// (fp32 models; V100 and older, CPUs: no FlashAttention kernels). `why` gets the reason in a few words.
profiler::AttentionKernel auto_attention_kernel(const std::vector<std::string>& device_kinds, models::DType dtype,
                                                std::string& why);

/// Model-priced costs (the roofline / GPU kernel model) get the kernel choice and a calibration's
/// kernel factors; measured profiles are left as measured. The attention kernel (for a model with
/// attention; --attention auto resolved on `device_kinds`), a foreach optimizer or autocast is added
/// to the choice's note. InputError naming the option for an unknown value, or for autocast with a
/// `dtype` (the training dtype) other than fp16/bf16.
void configure_model_costs(CostChoice& choice, const KernelChoice& kernels, const Calibration& calibration,
                           const models::Model& model, const std::vector<std::string>& device_kinds);

/// --grad-accumulation's help text, and its value parsed (InputError naming the option otherwise).
extern const char* const kGradAccumulationHelp;
GradAccumulation grad_accumulation_arg(const std::string& value);

/// --calibration FILE: the file's factors with canonical device kinds; empty path: no calibration.
Calibration load_calibration_option(const std::string& path);

}  // namespace parasim::cli
