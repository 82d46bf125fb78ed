// The shape an input or reshape op takes when a model is rebuilt at another batch (internal;
// with_batch and the parasim.model/1 loader's batch override share it).
#pragma once

#include <cstdint>

#include "parasim/models/graph.hpp"

namespace parasim::models::detail {

/// Its leading dimension when that equals the old batch. Otherwise a reshape whose rebuilt input
/// (`new_input`) no longer has the target's element count gets its last dimension equal to the old
/// batch replaced: the batch axis of a time-major view [T, B, ...] (imported ONNX LSTMs).
inline void rebatch_shape(Op& op, std::int64_t old_batch, std::int64_t new_batch, const Shape* new_input) {
  Shape& s = op.output_shape;
  if (s.empty() || old_batch == new_batch) return;
  if (s[0] == old_batch) {
    s[0] = new_batch;
    return;
  }
  if (op.kind != OpKind::Reshape || !new_input) return;
  std::int64_t target = 1, input = 1;
  for (std::int64_t d : s)
    if (d < 1 || __builtin_mul_overflow(target, d, &target)) return;  // a -1 adapts by itself
  for (std::int64_t d : *new_input)
    if (__builtin_mul_overflow(input, d, &input)) return;
  if (target == input) return;
  for (std::size_t i = s.size(); i-- > 1;) {
    if (s[i] == old_batch) {
      s[i] = new_batch;
      return;
    }
  }
}

}  // namespace parasim::models::detail
