// The optimizer a training step runs: shared by the cost models (state and traffic per
// parameter, profiler/cost_model.hpp) and the kernels that run its update.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parasim {

enum class Optimizer : std::uint8_t { Sgd, Momentum, Adam };
std::string to_string(Optimizer o);
std::optional<Optimizer> parse_optimizer(std::string_view s);  // "sgd", "momentum", "adam"; nullopt otherwise

/// How the update runs: one fused multi-tensor kernel per step (apex/Megatron-LM/DeepSpeed, torch.optim's
/// fused=True) or torch.optim's default foreach implementation, one multi-tensor pass per elementwise
/// step of the algorithm over fp32 parameters, gradients and state (profiler/cost_model.hpp).
enum class OptimizerKernels : std::uint8_t { Fused, Foreach };
std::string to_string(OptimizerKernels k);
std::optional<OptimizerKernels> parse_optimizer_kernels(std::string_view s);  // "fused", "foreach"

}  // namespace parasim
