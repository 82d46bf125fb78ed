// The one place where an unknown enum name becomes an error: the libraries' parse_x() return
// nullopt (common convention: std::optional<T> parse_x(std::string_view)), and the CLI, which
// knows which option the text came from, throws InputError (exit 2) with the message users see.
#pragma once

#include <string>

#include "parasim/common/error.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/validation/validate.hpp"

namespace parasim::cli {

inline profiler::Optimizer optimizer_arg(const std::string& s) {
  if (const auto o = profiler::parse_optimizer(s)) return *o;
  throw InputError("unknown optimizer \"" + s + "\"; expected sgd, momentum or adam");
}

inline strategies::Granularity granularity_arg(const std::string& s) {
  if (const auto g = strategies::parse_granularity(s)) return *g;
  throw InputError("--granularity: expected op or stage, found \"" + s + "\"");
}

inline validation::Backend backend_arg(const std::string& s) {
  if (const auto b = validation::parse_backend(s)) return *b;
  throw InputError("--backend: " + s + ": expected cpu or cuda");
}

inline simulator::CollectiveMode collective_mode_arg(const std::string& s) {
  if (const auto m = simulator::parse_collective_mode(s)) return *m;
  throw InputError("simulate: --collectives must be expanded or analytic, found \"" + s + "\"");
}

}  // namespace parasim::cli
