#include "parasim/strategies/batch_split.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace parasim::strategies {

std::vector<std::int64_t> split_near_equal(std::int64_t total, int parts) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(parts), total / parts);
  for (std::int64_t i = 0; i < total % parts; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

std::vector<std::int64_t> split_like_torch_chunk(std::int64_t total, int parts) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(std::max(parts, 0)), 0);
  if (parts <= 0 || total <= 0) return out;
  const std::int64_t chunk = (total + parts - 1) / parts;
  std::int64_t left = total;
  for (std::int64_t& part : out) {
    part = std::min(chunk, left);
    left -= part;
  }
  return out;
}

std::vector<std::int64_t> split_proportional(std::int64_t total, const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::int64_t> out(weights.size());
  std::vector<double> remainder(weights.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(total) * weights[i] / sum;
    out[i] = static_cast<std::int64_t>(std::floor(exact));
    remainder[i] = exact - static_cast<double>(out[i]);
    given += out[i];
  }
  std::vector<std::size_t> by_remainder(weights.size());
  std::iota(by_remainder.begin(), by_remainder.end(), std::size_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; given < total; ++k, ++given) ++out[by_remainder[k % by_remainder.size()]];
  return out;
}

}  // namespace parasim::strategies
