#include "pkg/base/token_bucket.h"

#include <gtest/gtest.h>

namespace egress {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucket, RestClientDefaultsBurstThenQps) {
  TokenBucket bucket(5, 10);  // client-go's defaults
  const auto t0 = TokenBucket::TimePoint{} + std::chrono::hours(1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(bucket.reserve(t0), TokenBucket::Duration::zero()) << i;
  }
  // The 11th and 12th wait 200 ms and 400 ms: the queue of reservations grows.
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.reserve(t0)), milliseconds(200));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.reserve(t0)), milliseconds(400));
  // One second later five tokens came back, three of which pay the debt.
  EXPECT_EQ(bucket.reserve(t0 + std::chrono::seconds(1)), TokenBucket::Duration::zero());
}

TEST(TokenBucket, RefillIsCappedAtBurst) {
  TokenBucket bucket(1, 2);
  const auto t0 = TokenBucket::TimePoint{} + std::chrono::hours(1);
  bucket.reserve(t0);
  bucket.reserve(t0);
  const auto later = t0 + std::chrono::hours(1);
  EXPECT_EQ(bucket.reserve(later), TokenBucket::Duration::zero());
  EXPECT_EQ(bucket.reserve(later), TokenBucket::Duration::zero());
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.reserve(later)), milliseconds(1000));
}

TEST(TokenBucket, InfiniteRateNeverDelays) {
  TokenBucket bucket(TokenBucket::kInf, 1);
  const auto t0 = TokenBucket::TimePoint{};
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(bucket.reserve(t0), TokenBucket::Duration::zero());
  }
}

}  // namespace
}  // namespace egress
