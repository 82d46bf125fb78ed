// The cpu-host projection's host effects (validation/src/contention.hpp): busy threads during
// compute tasks and real-time throttling stalls in the median step.
#include <gtest/gtest.h>

#include "contention.hpp"

namespace parasim::validation::detail {
namespace {

constexpr TimeNs kMs = 1'000'000;
constexpr TimeNs kRuntime = 950 * kMs, kPeriod = 1000 * kMs;  // Linux's default rt budget

TEST(RtThrottle, ShortStepsHaveNoStallInTheirMedian) {
  // A 3 ms step busy all the time: one step in ~300 has the 50 ms stall, the median none.
  EXPECT_EQ(rt_throttle_stall(3 * kMs, {3 * kMs}, kRuntime, kPeriod), 0);
}

TEST(RtThrottle, AStepBusyAllTheTimeForMostOfAPeriodHasOneStall) {
  // 830 ms busy of 830 ms: 0.87 stalls per step on average, so the median step has one, of
  // period - runtime = 50 ms.
  EXPECT_EQ(rt_throttle_stall(830 * kMs, {830 * kMs}, kRuntime, kPeriod), 50 * kMs);
  // 2.5 s busy: about 2.6 budgets used, the median step has 3 stalls.
  EXPECT_EQ(rt_throttle_stall(2500 * kMs, {2500 * kMs}, kRuntime, kPeriod), 150 * kMs);
}

TEST(RtThrottle, CoresBusyLessThanTheBudgetNeverStall) {
  // A pipeline stage busy half of a 2 s step stays within 950 ms of every second.
  EXPECT_EQ(rt_throttle_stall(2000 * kMs, {1000 * kMs, 1000 * kMs}, kRuntime, kPeriod), 0);
}

TEST(RtThrottle, TheBusiestCoreDecidesAndNoBudgetMeansNoStall) {
  EXPECT_EQ(rt_throttle_stall(900 * kMs, {300 * kMs, 900 * kMs}, kRuntime, kPeriod), 50 * kMs);
  EXPECT_EQ(rt_throttle_stall(900 * kMs, {900 * kMs}, 0, 0), 0);
  EXPECT_EQ(rt_throttle_stall(900 * kMs, {900 * kMs}, kPeriod, kPeriod), 0);
}

TEST(BusyThreads, ConcurrentComputeAndCollectivesCount) {
  simulator::TaskGraphBuilder b(2, 3);
  const auto a = b.add_compute({.device = 0, .duration = 10, .name = "a"});
  const auto c = b.add_compute({.device = 1, .duration = 10, .name = "c"});
  const simulator::TaskGraph g = std::move(b).build();
  // a alone for its first half, together with c for the second.
  std::vector<simulator::TaskTiming> tl(g.size());
  tl[static_cast<std::size_t>(a)] = {0, 10};
  tl[static_cast<std::size_t>(c)] = {5, 15};
  const auto busy = busy_threads_during_compute(g, tl);
  EXPECT_DOUBLE_EQ(busy[static_cast<std::size_t>(a)], 1.5);
  EXPECT_DOUBLE_EQ(busy[static_cast<std::size_t>(c)], 1.5);
}

}  // namespace
}  // namespace parasim::validation::detail
