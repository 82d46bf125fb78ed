// Gather along the sequence axis: evenly spaced positions and the reference loops.
#include "parasim/kernels/gather.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "parasim/common/error.hpp"

namespace parasim::kernels {

std::vector<std::int64_t> gather_positions(std::int64_t seq, std::int64_t positions) {
  if (positions < 1 || positions > seq)
    throw InputError("gather: expected 1 <= positions <= sequence length " + std::to_string(seq) + ", found " +
                     std::to_string(positions));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(positions));
  // i * seq < positions * seq <= seq^2: fits for any sequence a shape can hold (< 2^31).
  for (std::int64_t i = 0; i < positions; ++i) idx[static_cast<std::size_t>(i)] = i * seq / positions;
  return idx;
}

void gather_forward(const float* x, const std::vector<std::int64_t>& idx, float* y, std::int64_t batch,
                    std::int64_t seq, std::int64_t dim) {
  const auto d = static_cast<std::size_t>(dim);
  const auto p = idx.size();
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < p; ++i)
      std::memcpy(y + (static_cast<std::size_t>(b) * p + i) * d,
                  x + (static_cast<std::size_t>(b * seq) + static_cast<std::size_t>(idx[i])) * d, d * sizeof(float));
}

void gather_zero_grad(float* dx, std::int64_t batch, std::int64_t seq, std::int64_t dim) {
  std::fill(dx, dx + batch * seq * dim, 0.0f);
}

void gather_scatter_add(const float* dy, const std::vector<std::int64_t>& idx, float* dx, std::int64_t batch,
                        std::int64_t seq, std::int64_t dim) {
  const auto d = static_cast<std::size_t>(dim);
  const auto p = idx.size();
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < p; ++i) {
      float* row = dx + (static_cast<std::size_t>(b * seq) + static_cast<std::size_t>(idx[i])) * d;
      const float* g = dy + (static_cast<std::size_t>(b) * p + i) * d;
      for (std::size_t k = 0; k < d; ++k) row[k] += g[k];
    }
}

}  // namespace parasim::kernels
