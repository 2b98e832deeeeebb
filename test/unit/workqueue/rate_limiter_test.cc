// Tests for pkg/workqueue/rate_limiter.h and token_bucket.h, mirroring client-go's
// util/workqueue/default_rate_limiters_test.go (client-go). Limiters are pure: no
// io_context is run, time comes from a FakeClock the test moves.
#include "pkg/workqueue/rate_limiter.h"

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/base/clock.h"
#include "pkg/base/token_bucket.h"

namespace egress::workqueue {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using Limiter = RateLimiter<std::string>;

class RateLimiterTest : public ::testing::Test {
 protected:
  boost::asio::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
};

// client-go's TestItemExponentialFailureRateLimiter: base * 2^failures per
// item, counted per item, reset by forget().
TEST(ItemExponentialFailureRateLimiter, DoublesPerItemAndForgetResets) {
  ItemExponentialFailureRateLimiter<std::string> limiter(milliseconds(1), seconds(1));
  EXPECT_EQ(limiter.when("one"), milliseconds(1));
  EXPECT_EQ(limiter.when("one"), milliseconds(2));
  EXPECT_EQ(limiter.when("one"), milliseconds(4));
  EXPECT_EQ(limiter.when("one"), milliseconds(8));
  EXPECT_EQ(limiter.when("one"), milliseconds(16));
  EXPECT_EQ(limiter.numRequeues("one"), 5);

  EXPECT_EQ(limiter.when("two"), milliseconds(1));
  EXPECT_EQ(limiter.when("two"), milliseconds(2));
  EXPECT_EQ(limiter.numRequeues("two"), 2);

  limiter.forget("one");
  EXPECT_EQ(limiter.numRequeues("one"), 0);
  EXPECT_EQ(limiter.when("one"), milliseconds(1));
}

// client-go's TestItemExponentialFailureRateLimiterOverFlow: huge failure
// counts saturate at the maximum instead of overflowing.
TEST(ItemExponentialFailureRateLimiter, OverflowSaturatesAtMax) {
  ItemExponentialFailureRateLimiter<std::string> limiter(milliseconds(1), seconds(1000));
  for (int i = 0; i < 5; ++i) {
    limiter.when("one");
  }
  EXPECT_EQ(limiter.when("one"), milliseconds(32));
  for (int i = 0; i < 1000; ++i) {
    limiter.when("overflow1");
  }
  EXPECT_EQ(limiter.when("overflow1"), seconds(1000));

  ItemExponentialFailureRateLimiter<std::string> slow(minutes(1), hours(1000));
  for (int i = 0; i < 2; ++i) {
    slow.when("two");
  }
  EXPECT_EQ(slow.when("two"), minutes(4));
  for (int i = 0; i < 1000; ++i) {
    slow.when("overflow2");
  }
  EXPECT_EQ(slow.when("overflow2"), hours(1000));
}

// client-go: with the controller defaults (5ms, 1000s) calls 1..18 return
// 5ms * 2^(n-1), up to 655.36s, and call 19 onward returns the 1000s cap.
TEST(ItemExponentialFailureRateLimiter, ControllerDefaultsSequence) {
  ItemExponentialFailureRateLimiter<std::string> limiter(milliseconds(5), seconds(1000));
  for (int n = 0; n < 18; ++n) {
    EXPECT_EQ(limiter.when("key"), milliseconds(5) * (int64_t{1} << n)) << "call " << n + 1;
  }
  EXPECT_EQ(milliseconds(5) * (int64_t{1} << 17), milliseconds(655360));
  EXPECT_EQ(limiter.when("key"), seconds(1000));
  EXPECT_EQ(limiter.when("key"), seconds(1000));
  EXPECT_EQ(limiter.numRequeues("key"), 20);
}

// Deliberate deviation, client-go ("float overflow -> max"): a backoff of
// exactly 2^63ns passes client-go's `> MaxInt64` test and converts to a negative delay in Go;
// we cap it.
TEST(ItemExponentialFailureRateLimiter, ExactlyTwoToTheSixtyThreeIsCapped) {
  ItemExponentialFailureRateLimiter<std::string> limiter(std::chrono::nanoseconds(1),
                                                         hours(1000000));
  for (int i = 0; i < 63; ++i) {
    limiter.when("key");
  }
  EXPECT_EQ(limiter.when("key"), hours(1000000));
}

// client-go's TestItemFastSlowRateLimiter: fast for the first N attempts,
// then slow; per item; forget resets.
TEST(ItemFastSlowRateLimiter, FastThenSlow) {
  ItemFastSlowRateLimiter<std::string> limiter(milliseconds(5), seconds(10), 3);
  EXPECT_EQ(limiter.when("one"), milliseconds(5));
  EXPECT_EQ(limiter.when("one"), milliseconds(5));
  EXPECT_EQ(limiter.when("one"), milliseconds(5));
  EXPECT_EQ(limiter.when("one"), seconds(10));
  EXPECT_EQ(limiter.when("one"), seconds(10));
  EXPECT_EQ(limiter.numRequeues("one"), 5);

  EXPECT_EQ(limiter.when("two"), milliseconds(5));
  EXPECT_EQ(limiter.when("two"), milliseconds(5));
  EXPECT_EQ(limiter.numRequeues("two"), 2);

  limiter.forget("one");
  EXPECT_EQ(limiter.numRequeues("one"), 0);
  EXPECT_EQ(limiter.when("one"), milliseconds(5));
}

// client-go's TestMaxOfRateLimiter: every limiter is asked, the longest
// delay wins, numRequeues is the largest, forget reaches all.
TEST(MaxOfRateLimiter, LongestDelayWins) {
  auto limiter = makeMaxOfRateLimiter<std::string>(
      std::make_unique<ItemFastSlowRateLimiter<std::string>>(milliseconds(5), seconds(3), 3),
      std::make_unique<ItemExponentialFailureRateLimiter<std::string>>(milliseconds(1),
                                                                       seconds(1)));
  EXPECT_EQ(limiter->when("one"), milliseconds(5));
  EXPECT_EQ(limiter->when("one"), milliseconds(5));
  EXPECT_EQ(limiter->when("one"), milliseconds(5));
  EXPECT_EQ(limiter->when("one"), seconds(3));
  EXPECT_EQ(limiter->when("one"), seconds(3));
  EXPECT_EQ(limiter->numRequeues("one"), 5);

  EXPECT_EQ(limiter->when("two"), milliseconds(5));
  EXPECT_EQ(limiter->when("two"), milliseconds(5));
  EXPECT_EQ(limiter->numRequeues("two"), 2);

  limiter->forget("one");
  EXPECT_EQ(limiter->numRequeues("one"), 0);
  EXPECT_EQ(limiter->when("one"), milliseconds(5));
}

// client-go: one bucket for all items; at 10 qps / burst 100 the first 100
// reservations are free, then each waits 100ms more than the previous (a reservation is taken
// even though nobody waits). numRequeues is always 0 and forget does nothing.
TEST_F(RateLimiterTest, BucketBurstThenQps) {
  BucketRateLimiter<std::string> limiter(clock_, 10, 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter.when("item" + std::to_string(i)), Clock::Duration::zero()) << i;
  }
  EXPECT_EQ(limiter.when("a"), milliseconds(100));
  EXPECT_EQ(limiter.when("b"), milliseconds(200));
  limiter.forget("a");
  EXPECT_EQ(limiter.when("a"), milliseconds(300));
  EXPECT_EQ(limiter.numRequeues("a"), 0);

  // 400ms refill 4 tokens, paying back the 3 borrowed: one is free, the next waits 100ms.
  clock_.advance(milliseconds(400));
  EXPECT_EQ(limiter.when("a"), Clock::Duration::zero());
  EXPECT_EQ(limiter.when("a"), milliseconds(100));
}

// client-go: the bucket refills at most to its burst.
TEST_F(RateLimiterTest, BucketRefillIsCappedAtBurst) {
  BucketRateLimiter<std::string> limiter(clock_, 10, 100);
  for (int i = 0; i < 150; ++i) {
    limiter.when("x");
  }
  clock_.advance(hours(1));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter.when("x"), Clock::Duration::zero()) << i;
  }
  EXPECT_EQ(limiter.when("x"), milliseconds(100));
}

// client-go, x/time/rate edge cases behind Reserve().Delay(): rate Inf never
// waits; rate 0 grants the burst and then never; burst 0 never grants.
TEST(TokenBucket, RateLimitEdgeCases) {
  const auto t0 = std::chrono::steady_clock::time_point{} + hours(1);
  TokenBucket infinite(TokenBucket::kInf, 0);
  EXPECT_EQ(infinite.reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(infinite.reserve(t0), TokenBucket::Duration::zero());

  TokenBucket zeroRate(0, 2);
  EXPECT_EQ(zeroRate.reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(zeroRate.reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(zeroRate.reserve(t0 + hours(1)), TokenBucket::kInfDuration);

  TokenBucket noBurst(10, 0);
  EXPECT_EQ(noBurst.reserve(t0), TokenBucket::kInfDuration);
  EXPECT_EQ(noBurst.reserve(t0 + hours(1)), TokenBucket::kInfDuration);

  // Fractional rates: 3 qps waits 1/3s, truncated to the nanosecond like Go.
  TokenBucket third(3, 1);
  EXPECT_EQ(third.reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(third.reserve(t0), std::chrono::nanoseconds(333333333));
}

// client-go's WithMaxWaitRateLimiter: any limiter's delay, capped.
TEST(WithMaxWaitRateLimiter, CapsTheDelay) {
  WithMaxWaitRateLimiter<std::string> limiter(
      std::make_unique<ItemExponentialFailureRateLimiter<std::string>>(milliseconds(60),
                                                                       seconds(10)),
      milliseconds(100));
  EXPECT_EQ(limiter.when("a"), milliseconds(60));
  EXPECT_EQ(limiter.when("a"), milliseconds(100));
  EXPECT_EQ(limiter.numRequeues("a"), 2);
  limiter.forget("a");
  EXPECT_EQ(limiter.numRequeues("a"), 0);
}

// client-go: the default controller limiter is the max of the
// per-item exponential (5ms..1000s) and the shared 10 qps / burst 100 bucket.
TEST_F(RateLimiterTest, DefaultControllerRateLimiter) {
  auto limiter = defaultControllerRateLimiter<std::string>(clock_);
  EXPECT_EQ(limiter->when("a"), milliseconds(5));
  EXPECT_EQ(limiter->when("a"), milliseconds(10));
  EXPECT_EQ(limiter->when("a"), milliseconds(20));
  EXPECT_EQ(limiter->numRequeues("a"), 3);
  limiter->forget("a");
  EXPECT_EQ(limiter->numRequeues("a"), 0);
  // 3 tokens used; 97 more items still only pay their own 5ms...
  for (int i = 0; i < 97; ++i) {
    EXPECT_EQ(limiter->when("item" + std::to_string(i)), milliseconds(5)) << i;
  }
  // ...then the bucket dominates.
  EXPECT_EQ(limiter->when("b"), milliseconds(100));
  EXPECT_EQ(limiter->when("c"), milliseconds(200));
}

// client-go's DefaultItemBasedRateLimiter: exponential from 1ms.
TEST(DefaultItemBasedRateLimiter, StartsAtOneMillisecond) {
  auto limiter = defaultItemBasedRateLimiter<std::string>();
  EXPECT_EQ(limiter->when("a"), milliseconds(1));
  EXPECT_EQ(limiter->when("a"), milliseconds(2));
}

}  // namespace
}  // namespace egress::workqueue
