// How the CUDA attention kernel splits its score matrices so that no B x H x Tq x Tk buffer is
// allocated whole (four of them at B=8, H=96, T=2048 in fp16 are 6.4 GB each). Plain C++, so the
// arithmetic is tested without a GPU.
//
// Example:
//   AttentionChunks c = plan_attention_chunks(8 * 96, 2048 * 2048 * 2, 4, kAttentionScoreBudget);
//   // c.units_per_chunk == 16, c.chunks == 48: each chunk holds 16 (batch, head) score matrices
#pragma once

#include <cstdint>

#include "parasim/common/units.hpp"

namespace parasim::kernels {

/// Device memory the attention kernel may spend on its score-sized buffers (S, P, dP, dS) together.
inline constexpr Bytes kAttentionScoreBudget = 512 * MiB;

struct AttentionChunks {
  std::int64_t units_per_chunk = 0;  // score matrices (units) per chunk
  std::int64_t chunks = 0;           // ceil(units / units_per_chunk)
  bool whole() const { return chunks <= 1; }
};

/// `units` independent score matrices of `bytes_per_unit` each, `buffers` buffers of them: the
/// most units per chunk whose buffers fit `budget` (at least 1, so a single matrix larger than the
/// budget is still computed, one at a time). InputError for non-positive arguments.
AttentionChunks plan_attention_chunks(std::int64_t units, Bytes bytes_per_unit, int buffers, Bytes budget);

}  // namespace parasim::kernels
