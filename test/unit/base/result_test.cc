#include "pkg/base/result.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace egress {
namespace {

Result<int, std::string> half(int x) {
  if (x % 2 != 0) {
    return unexpected(std::string("odd"));
  }
  return x / 2;
}

TEST(Result, HoldsValueOrError) {
  auto ok = half(4);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 2);
  auto bad = half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "odd");
}

TEST(Result, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>, std::string> r(std::make_unique<int>(7));
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Result, UnexpectedDisambiguatesConvertibleTypes) {
  // Both alternatives are strings: unexpected() says which one is meant.
  Result<std::string, std::string> value(std::string("v"));
  Result<std::string, std::string> error(unexpected(std::string("e")));
  EXPECT_TRUE(value.ok());
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.error(), "e");
}

}  // namespace
}  // namespace egress
