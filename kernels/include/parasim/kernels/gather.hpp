// The positions a gather op selects and its reference loops, shared by the CPU kernel (which runs
// them) and the CUDA kernel (which uploads the same positions). Plain C++, tested without a device.
//
// Example (BERT phase 2: 80 masked positions of 512):
//   std::vector<std::int64_t> idx = gather_positions(512, 80);  // 0, 6, 12, 19, ..., 505
#pragma once

#include <cstdint>
#include <vector>

namespace parasim::kernels {

/// `positions` evenly spaced positions of `seq`: floor(i * seq / positions) for i < positions,
/// distinct and ascending. The op's cost does not depend on which positions are selected (BERT's
/// masked positions are random); a fixed set keeps the kernels deterministic. InputError unless
/// 1 <= positions <= seq.
std::vector<std::int64_t> gather_positions(std::int64_t seq, std::int64_t positions);

/// y[b, p, :] = x[b, idx[p], :] for x [batch, seq, dim] and y [batch, idx.size(), dim].
void gather_forward(const float* x, const std::vector<std::int64_t>& idx, float* y, std::int64_t batch,
                    std::int64_t seq, std::int64_t dim);
/// Backward of gather_forward, as index_select's: dx = 0, then dx[b, idx[p], :] += dy[b, p, :].
void gather_zero_grad(float* dx, std::int64_t batch, std::int64_t seq, std::int64_t dim);
void gather_scatter_add(const float* dy, const std::vector<std::int64_t>& idx, float* dx, std::int64_t batch,
                        std::int64_t seq, std::int64_t dim);

}  // namespace parasim::kernels
