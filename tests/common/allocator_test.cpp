#include "parasim/common/allocator.hpp"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace parasim {
namespace {

TEST(KeepUntilExit, KeepsTheObjectAliveAfterItsOwnerIsGone) {
  std::weak_ptr<const std::string> watch;
  {
    auto owned = std::make_shared<const std::string>("cluster");
    watch = owned;
    keep_until_exit(owned);
  }
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(*watch.lock(), "cluster");
}

TEST(KeepUntilExit, MakeReturnsTheKeptObject) {
  std::string& a = make_kept_until_exit<std::string>(3, 'x');
  std::string& b = make_kept_until_exit<std::string>("other");
  EXPECT_EQ(a, "xxx");
  EXPECT_EQ(b, "other");
  EXPECT_NE(&a, &b);  // each call keeps its own object
}

}  // namespace
}  // namespace parasim
