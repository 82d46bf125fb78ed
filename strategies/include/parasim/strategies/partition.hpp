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

#include <functional>
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

}  // namespace parasim::strategies
