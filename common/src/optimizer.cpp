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

}  // namespace parasim
