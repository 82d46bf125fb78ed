// Chunk sizes of the attention kernel's score buffers (see attention_chunks.hpp).
#include "parasim/kernels/attention_chunks.hpp"

#include <algorithm>
#include <string>

#include "parasim/common/error.hpp"

namespace parasim::kernels {

AttentionChunks plan_attention_chunks(std::int64_t units, Bytes bytes_per_unit, int buffers, Bytes budget) {
  if (units < 1 || bytes_per_unit < 1 || buffers < 1 || budget < 1)
    throw InputError("attention chunks: expected positive units, bytes per unit, buffers and budget, found " +
                     std::to_string(units) + ", " + std::to_string(bytes_per_unit) + ", " + std::to_string(buffers) +
                     ", " + std::to_string(budget));
  const Bytes per_unit_all = bytes_per_unit * buffers;
  AttentionChunks c;
  c.units_per_chunk = std::clamp<std::int64_t>(budget / per_unit_all, 1, units);
  c.chunks = (units + c.units_per_chunk - 1) / c.units_per_chunk;
  return c;
}

}  // namespace parasim::kernels
