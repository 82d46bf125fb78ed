// Splitting a batch into integer parts: evenly (torch.nn.DataParallel, DDP) or in proportion to
// each part's speed (heterogeneous devices), and a replica batch into micro-batches.
//
// Example:
//   split_proportional(256, {1.0, 1.0, 0.8});   // {95, 95, 66}: largest remainders get the leftovers
//   split_near_equal(10, 4);                     // {3, 3, 2, 2}
//   split_like_torch_chunk(128, 3);              // {43, 43, 42}: torch.nn.DataParallel's scatter
#pragma once

#include <cstdint>
#include <vector>

namespace parasim::strategies {

/// `total` into `parts` sizes differing by at most one, larger ones first. Parts may be 0 when
/// total < parts (callers reject that with their own message).
std::vector<std::int64_t> split_near_equal(std::int64_t total, int parts);

/// torch.chunk's split, which torch.nn.DataParallel scatters a batch with: every part gets
/// ceil(total / parts) samples until the batch runs out, so the last parts are smaller (and 0
/// when the batch runs out early: 5 over 4 is {2, 2, 1, 0}; callers reject that).
std::vector<std::int64_t> split_like_torch_chunk(std::int64_t total, int parts);

/// `total` into parts proportional to `weights` (> 0): each part gets floor(total * w / sum w)
/// and the samples left over go one each to the parts with the largest fractional remainders
/// (ties: the lower index). The parts sum to `total`.
std::vector<std::int64_t> split_proportional(std::int64_t total, const std::vector<double>& weights);

}  // namespace parasim::strategies
