// Internal: memory sizes in the planner's messages and explanations ("13.2 GiB").
#pragma once

#include <cstdio>
#include <string>

#include "parasim/common/units.hpp"

namespace parasim::strategies::detail {

inline std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / static_cast<double>(GiB));
  return buf;
}

}  // namespace parasim::strategies::detail
