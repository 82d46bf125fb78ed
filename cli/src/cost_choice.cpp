#include "cost_choice.hpp"

#include <filesystem>

#include <CLI/CLI.hpp>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/profiler/trace_library.hpp"

namespace parasim::cli {

namespace {
CostChoice choose_cost_source(const std::string& profile, const std::string& traces_dir, bool traces_given,
                              const models::Model& model, const std::vector<std::string>& device_kinds);
}  // namespace

CostChoice choose_costs(const std::string& profile, const std::string& traces_dir, bool traces_given,
                        const models::Model& model, const std::vector<std::string>& device_kinds) {
  for (const auto& k : device_kinds) hardware::require_dtype_support(k, model.dtype());
  CostChoice c = choose_cost_source(profile, traces_dir, traces_given, model, device_kinds);
  if (model.dtype() == models::DType::FP8) c.note += "; " + profiler::fp8_overheads_note();
  return c;
}

namespace {

CostChoice choose_cost_source(const std::string& profile, const std::string& traces_dir, bool traces_given,
                              const models::Model& model, const std::vector<std::string>& device_kinds) {
  CostChoice c;
  if (!profile.empty() && traces_given)
    throw InputError("--traces: only used without --profile (which names the costs already), found both");
  if (profile == "none") {
    c.costs = std::make_unique<profiler::RooflineCostModel>();
    c.note = "roofline (--profile none)";
    return c;
  }
  if (!profile.empty()) {
    auto measured = std::make_unique<profiler::ProfileCostModel>(std::filesystem::path(profile));
    measured->check_matches(model);
    c.note = "profile " + profile + " (--profile)";
    // Costs are looked up per device kind: a profile of another device is loaded but never used.
    auto canonical = [](const std::string& k) {
      const auto spec = hardware::find_device_spec(k);
      return spec ? spec->kind : k;
    };
    const std::string measured_on = canonical(measured->profile().device.kind);
    bool used = false;
    for (const auto& k : device_kinds)  // as ProfileCostModel compares: "cpu" stands for any cpu-... host
      used = used || canonical(k) == measured_on || (k == "cpu" && measured_on.rfind("cpu", 0) == 0);
    if (!used && !device_kinds.empty())
      c.note += "; measured on " + measured->profile().device.kind +
                ", which the cluster does not have: the roofline answers for its devices";
    c.costs = std::move(measured);
    return c;
  }
  std::string kinds;
  for (const auto& k : device_kinds) kinds += (kinds.empty() ? "" : ", ") + k;
  const std::string what = model.name() + " " + models::to_string(model.dtype());
  if (const auto m = profiler::find_trace_profile(traces_dir, device_kinds, model.name(), model.dtype())) {
    auto measured = std::make_unique<profiler::ProfileCostModel>(m->file);
    measured->check_matches(model);
    c.costs = std::move(measured);
    c.note = "profile " + m->file.generic_string() + " by default: measured on the cluster's " + m->device_kind +
             " for " + what + " (--profile none for the roofline)";
    return c;
  }
  c.costs = std::make_unique<profiler::RooflineCostModel>();
  c.note = "roofline (fallback): no profile in " + traces_dir + "/ for " + what + " on " + kinds +
           " (measure one with `parasim profile` or scripts/gpu_check.sh)";
  return c;
}

}  // namespace

void add_kernel_choice_options(CLI::App& cmd, KernelChoice& k, const std::string& prefix) {
  cmd.add_option("--attention", k.attention,
                 prefix +
                     "GPU attention kernels: auto (flash for a 16- or 8-bit model when every GPU is Ampere or "
                     "newer, else unfused), "
                     "unfused (score matrix in memory, as eager frameworks), flash "
                     "(fused, the GPU's own: FlashAttention-3/cuDNN on Hopper+, FlashAttention-2 on Ampere), "
                     "flash2 (FlashAttention-2-generation kernels: FlashAttention-2, xFormers) or triton "
                     "(MosaicML's 2023 Triton kernel: FlashAttention-2's rates, no causal saving)")
      ->capture_default_str();
  cmd.add_option("--fp32-math", k.fp32_math,
                 prefix +
                     "FP32 convolutions and matmuls on GPUs with TF32 tensor cores (Ampere+): pytorch (TF32 "
                     "convolutions, FP32 matmuls: PyTorch's defaults), tf32 (both) or fp32 (neither)")
      ->capture_default_str();
  cmd.add_option("--conv-layout", k.conv_layout,
                 prefix +
                     "Convolution activations on GPUs: nchw (PyTorch's default; cuDNN transposes them around "
                     "tensor-core kernels) or nhwc (channels_last)")
      ->capture_default_str();
  cmd.add_option("--optimizer-kernels", k.optimizer_kernels,
                 prefix +
                     "How the optimizer update runs on GPUs: fused (one multi-tensor kernel: apex, Megatron-LM, "
                     "DeepSpeed, torch.optim fused=True) or foreach (torch.optim's default: one pass per "
                     "elementwise step over fp32 tensors)")
      ->capture_default_str();
  cmd.add_option("--mixed-precision", k.mixed_precision,
                 prefix +
                     "How 16-bit training runs on GPUs: native (every activation in the training dtype: "
                     "Megatron-LM, NeMo, DeepSpeed) or autocast (eager torch.autocast over fp32 modules: norms, "
                     "residual stream and loss in fp32, casts around them, weights cast every step)")
      ->capture_default_str();
  cmd.add_option("--loss", k.loss,
                 prefix +
                     "How the cross-entropy loss runs (memory only): unfused (in fp32 from a copy of the 16-bit "
                     "logits, kept for the backward: Megatron-LM, torch.nn.CrossEntropyLoss under autocast) or fused "
                     "(one kernel keeping the logits and a log-sum-exp per row: flash-attn's xentropy, LLM Foundry's "
                     "default; Megatron-Core's --cross-entropy-loss-fusion)")
      ->capture_default_str();
  cmd.add_option("--moe-kernels", k.moe_kernels,
                 prefix +
                     "The kernels around a mixture-of-experts layer's GEMMs (router, token permutation): eager "
                     "(Megatron-Core's defaults, an op per kernel: about 29 forward and 20 backward a layer), fused "
                     "(Transformer Engine's fused router and permute kernels: --moe-router-fusion "
                     "--moe-permute-fusion), fused-router or fused-permute (one of the two)")
      ->capture_default_str();
}

bool fused_loss_arg(const KernelChoice& k) {
  if (k.loss != "unfused" && k.loss != "fused")
    throw InputError("--loss: expected unfused or fused, found \"" + k.loss + "\"");
  return k.loss == "fused";
}

void apply_loss_choice(models::Model& model, const KernelChoice& k) {
  if (fused_loss_arg(k)) models::set_fused_loss(model, true);
}

const char* first_changed_pricing_option(const KernelChoice& k) {
  const KernelChoice defaults;
  if (k.attention != defaults.attention) return "--attention";
  if (k.fp32_math != defaults.fp32_math) return "--fp32-math";
  if (k.conv_layout != defaults.conv_layout) return "--conv-layout";
  if (k.optimizer_kernels != defaults.optimizer_kernels) return "--optimizer-kernels";
  if (k.mixed_precision != defaults.mixed_precision) return "--mixed-precision";
  if (k.loss != defaults.loss) return "--loss";
  if (k.moe_kernels != defaults.moe_kernels) return "--moe-kernels";
  return nullptr;
}

profiler::AttentionKernel auto_attention_kernel(const std::vector<std::string>& device_kinds, models::DType dtype,
                                                std::string& why) {
  if (dtype == models::DType::F32) {
    why = "fp32 attention, which FlashAttention's 16-bit kernels do not run";
    return profiler::AttentionKernel::Unfused;
  }
  for (const std::string& kind : device_kinds) {
    const auto spec = hardware::find_device_spec(kind);
    if (!spec || spec->sm_count <= 1) {  // a CPU or a part parasim does not know: eager attention
      why = kind + " is not a GPU with fused attention kernels";
      return profiler::AttentionKernel::Unfused;
    }
    if (!spec->arch_at_least("ampere")) {
      why = "FlashAttention needs Ampere or newer, " + kind + " is " + spec->arch;
      return profiler::AttentionKernel::Unfused;
    }
  }
  if (device_kinds.empty()) {
    why = "no devices";
    return profiler::AttentionKernel::Unfused;
  }
  why = "every GPU is Ampere or newer, where frameworks run fused attention";
  return profiler::AttentionKernel::Flash;
}

void configure_model_costs(CostChoice& choice, const KernelChoice& kernels, const Calibration& calibration,
                           const models::Model& model, const std::vector<std::string>& device_kinds) {
  const models::DType dtype = model.dtype();
  profiler::CostModel& costs = *choice.costs;
  std::string why;
  const auto kernel = kernels.attention == "auto" ? std::optional(auto_attention_kernel(device_kinds, dtype, why))
                                                  : profiler::parse_attention_kernel(kernels.attention);
  if (!kernel)
    throw InputError("--attention: expected auto, unfused, flash, flash2 or triton, found \"" + kernels.attention +
                     "\"");
  const auto math = profiler::parse_fp32_math(kernels.fp32_math);
  if (!math) throw InputError("--fp32-math: expected pytorch, tf32 or fp32, found \"" + kernels.fp32_math + "\"");
  const auto layout = profiler::parse_conv_layout(kernels.conv_layout);
  if (!layout) throw InputError("--conv-layout: expected nchw or nhwc, found \"" + kernels.conv_layout + "\"");
  const auto optimizer = profiler::parse_optimizer_kernels(kernels.optimizer_kernels);
  if (!optimizer)
    throw InputError("--optimizer-kernels: expected fused or foreach, found \"" + kernels.optimizer_kernels + "\"");
  const auto precision = profiler::parse_mixed_precision(kernels.mixed_precision);
  if (!precision)
    throw InputError("--mixed-precision: expected native or autocast, found \"" + kernels.mixed_precision + "\"");
  if (*precision == profiler::MixedPrecision::Autocast && dtype != models::DType::F16 && dtype != models::DType::BF16)
    throw InputError(
        "--mixed-precision autocast: needs --dtype fp16 or bf16 (autocast runs fp32 modules in 16 bits), "
        "found " +
        models::to_string(dtype));
  const auto moe = profiler::parse_moe_kernels(kernels.moe_kernels);
  if (!moe)
    throw InputError("--moe-kernels: expected eager, fused, fused-router or fused-permute, found \"" +
                     kernels.moe_kernels + "\"");
  auto* priced = dynamic_cast<profiler::RooflineCostModel*>(&costs);
  // A measured profile keeps its times; what it does not time is priced by its own kernel model,
  // which takes the same choice.
  auto* measured = dynamic_cast<profiler::ProfileCostModel*>(&costs);
  if (profiler::RooflineCostModel* m = priced != nullptr ? priced : measured ? &measured->fallback() : nullptr) {
    m->set_kernel_factors(calibration.kernels);
    m->set_attention_kernel(*kernel);
    m->set_fp32_math(*math);
    m->set_conv_layout(*layout);
    m->set_optimizer_kernels(*optimizer);
    m->set_mixed_precision(*precision);
    m->set_moe_kernels(*moe);
  }
  const bool has_attention = models::has_dot_product_attention(model);
  if (has_attention && priced)
    choice.note += "; attention: " + profiler::to_string(*kernel) +
                   (kernels.attention == "auto" ? " (--attention auto: " + why + ")" : " (--attention)");
  else if (has_attention && kernels.attention != "auto")
    choice.note += "; --attention " + kernels.attention +
                   ": measured attention ops keep their measured time, the kernel model prices the others so";
  const bool has_experts = models::has_experts(model);
  if (has_experts && priced)
    choice.note +=
        "; MoE routing kernels: " + profiler::to_string(*moe) +
        (*moe == profiler::MoeKernels{}
             ? " (Megatron-Core's eager router and permutation; --moe-kernels fused for Transformer Engine's)"
             : " (--moe-kernels)");
  else if (has_experts && kernels.moe_kernels != "eager")
    choice.note += "; --moe-kernels " + kernels.moe_kernels +
                   ": measured experts ops keep their measured time, the kernel model prices the others so";
  if (*optimizer == profiler::OptimizerKernels::Foreach)
    choice.note += priced ? "; optimizer: torch.optim foreach (a pass per elementwise step over fp32 tensors)"
                          : "; --optimizer-kernels foreach: measured update phases keep their measured time";
  if (*precision == profiler::MixedPrecision::Autocast)
    choice.note += priced
                       ? "; mixed precision: torch.autocast (fp32 norms, residual stream and loss, casts around them)"
                       : "; --mixed-precision autocast: measured ops keep their measured time";
}

const char* const kGradAccumulationHelp =
    "How each micro-batch's weight gradients are added up: auto (fp32-buffer for 16/8-bit training, in-place for "
    "fp32), in-place (.grad += g from the second micro-batch on), fp32-buffer (every micro-batch into an fp32 buffer: "
    "Megatron-LM, DeepSpeed bf16), buffer (every micro-batch into a buffer of the gradient's dtype: Megatron-LM's fp16 "
    "main_grad), fused (inside the weight-gradient GEMM, into an fp32 buffer: Megatron-LM's "
    "--gradient-accumulation-fusion) or fused-buffer (the same into a buffer of the gradient's dtype: Megatron-Core's "
    "grad_reduce_in_fp32=False). The data-parallel reduction moves the buffer's dtype";

GradAccumulation grad_accumulation_arg(const std::string& value) {
  const auto a = parse_grad_accumulation(value);
  if (!a)
    throw InputError(
        "--grad-accumulation: expected auto, in-place, fp32-buffer, buffer, fused or fused-buffer, found \"" + value +
        "\"");
  return *a;
}

Calibration load_calibration_option(const std::string& path) {
  return path.empty() ? Calibration{} : hardware::with_canonical_kinds(load_calibration(path));
}

}  // namespace parasim::cli
