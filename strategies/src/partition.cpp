#include "parasim/strategies/partition.hpp"

#include <limits>
#include <string>

#include "parasim/common/error.hpp"

namespace parasim::strategies {

void check_partition(int units, int parts) {
  if (parts < 1 || parts > units)
    throw RuntimeError("partition_contiguous: cannot cut " + std::to_string(units) + " units into " +
                       std::to_string(parts) + " non-empty chunks");
}

Partition partition_contiguous(int units, int parts, const ChunkCost& cost) {
  // A bound that never stops the search: every cut is tried.
  return partition_contiguous_inline(units, parts, cost,
                                     [](int, int, int) { return std::numeric_limits<TimeNs>::min(); });
}

Partition partition_contiguous(int units, int parts, const ChunkCost& cost, const ChunkCost& lower_bound) {
  return partition_contiguous_inline(units, parts, cost, lower_bound);
}

}  // namespace parasim::strategies
