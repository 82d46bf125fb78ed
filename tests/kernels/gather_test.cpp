// The gather op's positions and reference loops (kernels/gather.hpp), which the CPU kernel runs and
// whose positions the CUDA kernel uploads: values checked on a hand-computed [2, 5, 2] case.
#include "parasim/kernels/gather.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"

namespace parasim::kernels {
namespace {

TEST(Gather, EvenlySpacedPositions) {
  EXPECT_EQ(gather_positions(5, 2), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(gather_positions(5, 5), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(gather_positions(10, 3), (std::vector<std::int64_t>{0, 3, 6}));
  const std::vector<std::int64_t> bert = gather_positions(512, 80);  // NVIDIA BERT phase 2
  ASSERT_EQ(bert.size(), 80u);
  EXPECT_EQ(bert[1], 6);  // 512 / 80 = 6.4
  EXPECT_EQ(bert[79], 505);
  for (std::size_t i = 1; i < bert.size(); ++i) EXPECT_LT(bert[i - 1], bert[i]);
  EXPECT_THROW((void)gather_positions(5, 6), InputError);
  EXPECT_THROW((void)gather_positions(5, 0), InputError);
}

TEST(Gather, ForwardAndBackwardValues) {
  // x [2, 5, 2]: x[b, t, d] = 100 b + 10 t + d. Positions 0 and 2 of 5.
  std::vector<float> x(20);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t)
      for (int d = 0; d < 2; ++d)
        x[static_cast<std::size_t>((b * 5 + t) * 2 + d)] = static_cast<float>(100 * b + 10 * t + d);
  const std::vector<std::int64_t> idx = gather_positions(5, 2);
  std::vector<float> y(8, -1.0f);
  gather_forward(x.data(), idx, y.data(), 2, 5, 2);
  EXPECT_EQ(y, (std::vector<float>{0, 1, 20, 21, 100, 101, 120, 121}));

  // Backward: dx zero except the gathered rows, which receive dy.
  const std::vector<float> dy{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> dx(20, 9.0f);  // stale values the zero fill must clear
  gather_zero_grad(dx.data(), 2, 5, 2);
  gather_scatter_add(dy.data(), idx, dx.data(), 2, 5, 2);
  EXPECT_EQ(dx, (std::vector<float>{1, 2, 0, 0, 3, 4, 0, 0, 0, 0,  //
                                    5, 6, 0, 0, 7, 8, 0, 0, 0, 0}));
  // A repeated index accumulates (index_add_ semantics).
  std::vector<float> acc(20, 0.0f);
  gather_scatter_add(dy.data(), {1, 1}, acc.data(), 2, 5, 2);
  EXPECT_FLOAT_EQ(acc[2], 1 + 3);
  EXPECT_FLOAT_EQ(acc[13], 6 + 8);
}

}  // namespace
}  // namespace parasim::kernels
