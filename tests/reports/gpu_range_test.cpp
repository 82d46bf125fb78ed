// --gpus follows `parasim project`'s grammar, so the two commands read the same ranges.
#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/reports/projection_source.hpp"

namespace {

using parasim::reports::parse_gpu_range;
using V = std::vector<std::int64_t>;

TEST(GpuRange, ListsRangesAndSingles) {
  EXPECT_EQ(parse_gpu_range("8"), V({8}));
  EXPECT_EQ(parse_gpu_range("1-64"), V({1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(parse_gpu_range("3-16"), V({4, 8, 16}));  // the powers of two in the range
  EXPECT_EQ(parse_gpu_range("3-30x3"), V({3, 9, 27}));
  EXPECT_EQ(parse_gpu_range("24,2-8,4"), V({2, 4, 8, 24}));
}

TEST(GpuRange, RejectsNonsenseNamingTheFlag) {
  for (const char* bad : {"", "0", "-4", "8-2", "a", "1,,2", "1-", "99999999", "5-7", "1-8x1"}) {
    try {
      parse_gpu_range(bad);
      ADD_FAILURE() << bad;
    } catch (const parasim::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--gpus: ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
