// Randomized differential test: thousands of allocate / reserve / release / restore / rebuild
// operations on small IPv4 and IPv6 pools, each compared with a brute-force model
// (model_check.h). Fixed seeds, so a failure reproduces; the message names the seed, the step,
// the operation and the pool's spec.
#include <gtest/gtest.h>

#include "test/unit/ipam/model_check.h"

namespace egress::ipam::testing {
namespace {

TEST(PoolModel, RandomSequencesMatchBruteForce) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    SeededChoices choices(seed);
    auto difference = checkAgainstModel(choices, 400);
    ASSERT_FALSE(difference) << "seed " << seed << ": " << *difference;
  }
}

// Long runs on one pool: free space fragments and merges many times over.
TEST(PoolModel, LongSequencesMatchBruteForce) {
  for (uint32_t seed = 1000; seed < 1004; ++seed) {
    SeededChoices choices(seed);
    auto difference = checkAgainstModel(choices, 5000);
    ASSERT_FALSE(difference) << "seed " << seed << ": " << *difference;
  }
}

// A byte string drives the same checker in the fuzz target: running dry stops the run.
TEST(PoolModel, ByteChoicesStopWhenUsedUp) {
  const uint8_t bytes[] = {0, 1, 2, 3};
  ByteChoices choices(bytes, sizeof bytes);
  EXPECT_EQ(choices.below(2), 0u);
  EXPECT_EQ(choices.below(2), 1u);
  EXPECT_EQ(choices.below(3), 2u);
  EXPECT_EQ(choices.below(2), 1u);
  EXPECT_FALSE(choices.exhausted());
  EXPECT_EQ(choices.below(7), 0u);
  EXPECT_TRUE(choices.exhausted());
}

TEST(PoolModel, ByteChoicesTakeTwoBytesForLargeRanges) {
  const uint8_t bytes[] = {1, 2, 3};
  ByteChoices choices(bytes, sizeof bytes);
  EXPECT_EQ(choices.below(1000), 258u);
  EXPECT_EQ(choices.below(1000), 768u);  // 3, then a zero for the missing byte
  EXPECT_TRUE(choices.exhausted());
}

}  // namespace
}  // namespace egress::ipam::testing
