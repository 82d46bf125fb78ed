// Internal: op -> chunk -> device slot for placement=layers|branches|FILE.
#pragma once

#include "prepared_step.hpp"

namespace parasim::strategies::detail {

/// Fills p.op_chunk, p.op_slot and p.chunk_ops. Needs the structure, the variant of micro-batch
/// `micro0` (its op times drive the partition) and p.kinds.
void place_ops(Prepared& p, const Variant& v0);

/// Full-recompute segments (p.segment, p.segments): within each chunk, maximal runs of
/// consecutive ops that do work and share a non-empty top-level block.
void find_recompute_segments(Prepared& p);

}  // namespace parasim::strategies::detail
