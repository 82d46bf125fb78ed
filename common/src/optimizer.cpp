#include "parasim/common/optimizer.hpp"

namespace parasim {

std::string to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Momentum: return "momentum";
    case Optimizer::Adam: return "adam";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(std::string_view s) {
  for (Optimizer o : {Optimizer::Sgd, Optimizer::Momentum, Optimizer::Adam})
    if (to_string(o) == s) return o;
  return std::nullopt;
}

std::string to_string(OptimizerKernels k) { return k == OptimizerKernels::Fused ? "fused" : "foreach"; }

std::optional<OptimizerKernels> parse_optimizer_kernels(std::string_view s) {
  for (OptimizerKernels k : {OptimizerKernels::Fused, OptimizerKernels::Foreach})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

}  // namespace parasim
