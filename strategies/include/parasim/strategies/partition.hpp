// Cutting a sequence of units (ops, or whole transformer layers, in topological order) into
// contiguous chunks so that the most expensive chunk is as cheap as possible.
//
// The cost of a chunk is whatever the caller says (placement=layers uses the chunk's compute on
// its device plus the time to move the tensors crossing its two cuts, forward and backward), so
// the dynamic program is exact for any cost: f[p][j] = min over i of max(f[p-1][i], cost(p-1, i, j)),
// O(parts x units^2) cost evaluations.
//
// Example:
//   std::vector<TimeNs> c = {4, 1, 1, 2, 2};
//   Partition p = partition_contiguous(5, 2, [&](int, int b, int e) {
//     return std::accumulate(c.begin() + b, c.begin() + e, TimeNs{0}); });
//   // p.bounds == {0, 2, 5}, p.bottleneck == 5
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::strategies {

struct Partition {
  /// parts + 1 entries: chunk p holds units [bounds[p], bounds[p + 1]), each non-empty.
  std::vector<int> bounds;
  TimeNs bottleneck = 0;  // the most expensive chunk
};

/// Cost of chunk number `part` holding units [begin, end).
using ChunkCost = std::function<TimeNs(int part, int begin, int end)>;

/// Optimal contiguous partition of `units` units into `parts` non-empty chunks (ties: the
/// earliest cut). Requires 1 <= parts <= units (callers check and explain).
Partition partition_contiguous(int units, int parts, const ChunkCost& cost);

/// The same partition, faster: `lower_bound(part, begin, end)` must never exceed cost(part,
/// begin, end) and must not shrink as the chunk grows to the left (begin decreasing), e.g. the
/// chunk's compute without its cut times. The program then stops widening a chunk once that bound
/// alone is worse than the best choice so far (O(parts x units x chunk width) evaluations for
/// balanced cuts). Same bounds and bottleneck as the plain version.
Partition partition_contiguous(int units, int parts, const ChunkCost& cost, const ChunkCost& lower_bound);

/// RuntimeError unless 1 <= parts <= units.
void check_partition(int units, int parts);

/// partition_contiguous(units, parts, cost, lower_bound) with the cost and bound inlined (any
/// callables of ChunkCost's signature): a planner works out hundreds of partitions, and calls
/// through std::function were half the time of each.
template <class Cost, class LowerBound>
Partition partition_contiguous_inline(int units, int parts, const Cost& cost, const LowerBound& lower_bound) {
  check_partition(units, parts);
  constexpr TimeNs kInf = std::numeric_limits<TimeNs>::max();
  const auto n = static_cast<std::size_t>(units);
  // best[p][j]: the smallest bottleneck of the first j units in p chunks; cut[p][j]: where chunk p-1 starts.
  std::vector<std::vector<TimeNs>> best(static_cast<std::size_t>(parts) + 1, std::vector<TimeNs>(n + 1, kInf));
  std::vector<std::vector<int>> cut(static_cast<std::size_t>(parts) + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int p = 1; p <= parts; ++p) {
    const std::vector<TimeNs>& prev = best[static_cast<std::size_t>(p - 1)];
    // Chunk p-1 ends at j; the remaining parts - p chunks need at least parts - p units after it.
    for (int j = p; j <= units - (parts - p); ++j) {
      TimeNs chosen = kInf;
      int at = p - 1;
      // Widest chunk last: with a lower bound, stop once it alone is worse than the choice so far.
      // Ties go to the earliest cut (the smallest i), as in the plain version.
      for (int i = j - 1; i >= p - 1; --i) {
        if (chosen != kInf && lower_bound(p - 1, i, j) > chosen) break;
        const TimeNs before = prev[static_cast<std::size_t>(i)];
        if (before == kInf || before > chosen) continue;
        const TimeNs here = std::max(before, cost(p - 1, i, j));
        if (here <= chosen) {
          chosen = here;
          at = i;
        }
      }
      best[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = chosen;
      cut[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = at;
    }
  }
  Partition out;
  out.bottleneck = best[static_cast<std::size_t>(parts)][n];
  out.bounds.assign(static_cast<std::size_t>(parts) + 1, 0);
  out.bounds[static_cast<std::size_t>(parts)] = units;
  for (int p = parts; p >= 1; --p)
    out.bounds[static_cast<std::size_t>(p - 1)] =
        cut[static_cast<std::size_t>(p)][static_cast<std::size_t>(out.bounds[static_cast<std::size_t>(p)])];
  return out;
}

}  // namespace parasim::strategies
