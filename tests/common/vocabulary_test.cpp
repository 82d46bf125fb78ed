#include <gtest/gtest.h>

#include "parasim/common/collective_op.hpp"
#include "parasim/common/phase.hpp"

namespace parasim {
namespace {

// The spellings are the parasim.taskgraph/1 format's; files written before must keep loading.
TEST(Vocabulary, PhaseNamesRoundTrip) {
  const char* names[] = {"forward", "backward_data", "backward_weight", "update", "recompute", "other"};
  for (int i = 0; i < 6; ++i) {
    const auto p = static_cast<Phase>(i);
    EXPECT_EQ(to_string(p), names[i]);
    EXPECT_EQ(parse_phase(names[i]), p);
  }
  EXPECT_FALSE(parse_phase("fwd").has_value());  // the profile format's key, mapped in the profiler
  EXPECT_FALSE(parse_phase("Forward").has_value());
}

TEST(Vocabulary, CollectiveOpNamesRoundTrip) {
  const char* names[] = {"allreduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"};
  for (int i = 0; i < 5; ++i) {
    const auto op = static_cast<CollectiveOp>(i);
    EXPECT_EQ(to_string(op), names[i]);
    EXPECT_EQ(parse_collective_op(names[i]), op);
  }
  EXPECT_FALSE(parse_collective_op("reducescatter").has_value());  // nccl-tests spelling: the link probe's
  EXPECT_EQ(to_string(static_cast<CollectiveOp>(9)), "?");
}

}  // namespace
}  // namespace parasim
