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

}  // namespace parasim
