#include "parasim/strategies/partition.hpp"

#include <algorithm>
#include <limits>

#include "parasim/common/error.hpp"

namespace parasim::strategies {

namespace {

Partition solve(int units, int parts, const ChunkCost& cost, const ChunkCost* lower_bound) {
  if (parts < 1 || parts > units)
    throw RuntimeError("partition_contiguous: cannot cut " + std::to_string(units) + " units into " +
                       std::to_string(parts) + " non-empty chunks");
  constexpr TimeNs kInf = std::numeric_limits<TimeNs>::max();
  const auto n = static_cast<std::size_t>(units);
  // best[p][j]: the smallest bottleneck of the first j units in p chunks; cut[p][j]: where chunk p-1 starts.
  std::vector<std::vector<TimeNs>> best(static_cast<std::size_t>(parts) + 1, std::vector<TimeNs>(n + 1, kInf));
  std::vector<std::vector<int>> cut(static_cast<std::size_t>(parts) + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int p = 1; p <= parts; ++p) {
    // Chunk p-1 ends at j; the remaining parts - p chunks need at least parts - p units after it.
    for (int j = p; j <= units - (parts - p); ++j) {
      TimeNs chosen = kInf;
      int at = p - 1;
      // Widest chunk last: with a lower bound, stop once it alone is worse than the choice so far.
      // Ties go to the earliest cut (the smallest i), as in the plain version.
      for (int i = j - 1; i >= p - 1; --i) {
        if (lower_bound != nullptr && chosen != kInf && (*lower_bound)(p - 1, i, j) > chosen) break;
        const TimeNs before = best[static_cast<std::size_t>(p - 1)][static_cast<std::size_t>(i)];
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

}  // namespace

Partition partition_contiguous(int units, int parts, const ChunkCost& cost) {
  return solve(units, parts, cost, nullptr);
}

Partition partition_contiguous(int units, int parts, const ChunkCost& cost, const ChunkCost& lower_bound) {
  return solve(units, parts, cost, &lower_bound);
}

}  // namespace parasim::strategies
