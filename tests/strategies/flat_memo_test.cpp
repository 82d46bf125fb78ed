// The lowerings' private memo (strategies/src/flat_memo.hpp) against std::map: the same keys are
// new exactly once and keep their values through the table's growth.
#include <map>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "flat_memo.hpp"

namespace parasim::strategies::detail {
namespace {

TEST(FlatMemo, EachKeyIsNewOnceAndKeepsItsValueAsTheTableGrows) {
  using Key = std::tuple<int, int, int, bool>;
  FlatMemo<Key, int> memo;
  std::map<Key, int> reference;
  std::mt19937 rng(7);
  // Keys as the lowerings make them (stage, bucket, micro-batch from -1, a flag), drawn with many
  // repeats so that lookups of old keys interleave with the growth from 64 slots to 16,384.
  for (int i = 0; i < 20'000; ++i) {
    const Key key{static_cast<int>(rng() % 64), static_cast<int>(rng() % 8), static_cast<int>(rng() % 10) - 1,
                  rng() % 2 == 0};
    const auto [entry, fresh] = memo.try_emplace(key);
    const auto [it, fresh_in_reference] = reference.try_emplace(key, i);
    ASSERT_EQ(fresh, fresh_in_reference) << "draw " << i;
    ASSERT_EQ(entry->first, key);
    if (fresh) entry->second = i;
    ASSERT_EQ(entry->second, it->second) << "draw " << i;
  }
  EXPECT_EQ(memo.size(), reference.size());
  EXPECT_GT(memo.size(), 6'144u);  // past three quarters of 8,192 slots: grown to 16,384
  for (const auto& [key, value] : reference) {
    const auto [entry, fresh] = memo.try_emplace(key);
    EXPECT_FALSE(fresh);
    EXPECT_EQ(entry->second, value);
  }
}

TEST(FlatMemo, NegativeAndLargeIntegersAreDistinctKeys) {
  FlatMemo<std::tuple<int, int>, int> memo;
  const std::tuple<int, int> keys[] = {{-1, 0}, {0, -1}, {-1, -1}, {0, 0}, {2'147'483'647, -2'147'483'647 - 1}};
  for (int i = 0; i < 5; ++i) {
    const auto [entry, fresh] = memo.try_emplace(keys[i]);
    EXPECT_TRUE(fresh);
    entry->second = i;
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(memo.try_emplace(keys[i]).first->second, i);
  EXPECT_EQ(memo.size(), 5u);
}

}  // namespace
}  // namespace parasim::strategies::detail
