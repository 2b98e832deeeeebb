#include "pkg/ipam/range_set.h"

#include <gtest/gtest.h>

namespace egress::ipam {
namespace {

std::vector<Range> rangesOf(const RangeSet& s) {
  return s.ranges();
}

TEST(RangeSet, MergesOverlappingAndAdjacent) {
  RangeSet s({{20, 30}, {1, 5}, {6, 9}, {25, 40}, {50, 50}, {3, 4}});
  EXPECT_EQ(rangesOf(s), (std::vector<Range>{{1, 9}, {20, 40}, {50, 50}}));
  EXPECT_EQ(s.size(), Uint128{9 + 21 + 1});
  EXPECT_TRUE(s.contains(1));
  EXPECT_TRUE(s.contains(9));
  EXPECT_FALSE(s.contains(10));
  EXPECT_FALSE(s.contains(0));
  EXPECT_TRUE(s.contains(50));
  EXPECT_FALSE(s.contains(51));
}

TEST(RangeSet, EndOfSpaceDoesNotOverflow) {
  RangeSet s({{kUint128Max - 1, kUint128Max}, {kUint128Max, kUint128Max}, {0, 0}});
  EXPECT_EQ(rangesOf(s), (std::vector<Range>{{0, 0}, {kUint128Max - 1, kUint128Max}}));
  EXPECT_EQ(s.size(), Uint128{3});
  EXPECT_TRUE(s.contains(kUint128Max));
}

TEST(RangeSet, SizeSaturatesForTheWholeSpace) {
  RangeSet all({{0, kUint128Max}});
  EXPECT_EQ(all.size(), kUint128Max);
  RangeSet almost({{1, kUint128Max}});
  EXPECT_EQ(almost.size(), kUint128Max);
  RangeSet halves({{0, kUint128Max / 2}, {kUint128Max / 2 + 2, kUint128Max}});
  EXPECT_EQ(halves.size(), kUint128Max);
}

TEST(RangeSet, Minus) {
  RangeSet a({{10, 20}, {30, 40}});
  EXPECT_EQ(rangesOf(a.minus(RangeSet({{15, 15}}))),
            (std::vector<Range>{{10, 14}, {16, 20}, {30, 40}}));
  EXPECT_EQ(rangesOf(a.minus(RangeSet({{0, 12}, {18, 32}, {40, 100}}))),
            (std::vector<Range>{{13, 17}, {33, 39}}));
  EXPECT_EQ(rangesOf(a.minus(RangeSet({{0, 5}, {21, 29}, {41, 50}}))), rangesOf(a));
  EXPECT_TRUE(a.minus(RangeSet({{0, 100}})).empty());
  EXPECT_EQ(rangesOf(a.minus(RangeSet())), rangesOf(a));
  RangeSet all({{0, kUint128Max}});
  EXPECT_EQ(rangesOf(all.minus(RangeSet({{0, 0}, {kUint128Max, kUint128Max}}))),
            (std::vector<Range>{{1, kUint128Max - 1}}));
}

}  // namespace
}  // namespace egress::ipam
