// `parasim profile show`: a profile as a human table or its JSON twin.
//
// One row per (entry, phase): op (first name, "+N" more sharing the signature), kind, phase,
// min / median / max, spread = (max - min) / median, launches, note; then per-phase totals for
// one training iteration = sum over entries of median x number of ops sharing the signature.
//
// Example:
//   std::cout << render_profile_table(load_profile("traces/cpu/resnet50-b4-fp32.json"));
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {

struct ProfileTotals {
  std::array<TimeNs, 4> per_phase{};  // sum of median x ops, indexed by Phase
  std::int64_t entries = 0;
  std::int64_t ops = 0;
  std::int64_t unmeasured = 0;        // entries without any phase (their note says why)
  /// Sum of the four phases, saturating at INT64_MAX.
  TimeNs total() const;
};
ProfileTotals profile_totals(const Profile& p);

std::string render_profile_table(const Profile& p);
/// {"model", "device", ..., "rows": [{op, ops, kind, phase, min_ns, median_ns, max_ns, spread,
/// launches, note}], "totals": {"fwd": ns, ..., "total": ns}}
nlohmann::json profile_table_json(const Profile& p);

}  // namespace parasim::profiler
