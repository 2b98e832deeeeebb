// Tests for pkg/workqueue/rate_limiting_queue.h, mirroring client-go's
// util/workqueue/rate_limiting_queue_test.go (client-go).
#include "pkg/workqueue/rate_limiting_queue.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "test/unit/workqueue/testing.h"

namespace egress::workqueue::testing {
namespace {

using RateLimitingQueueTest = WorkqueueTest;

// client-go's TestRateLimitingQueue: addRateLimited waits as long as the
// limiter says (1ms, then 2ms for the next failure), numRequeues counts per item, and forget
// starts the item over at 1ms.
TEST_F(RateLimitingQueueTest, AddRateLimitedUsesTheLimiter) {
  auto cfg = config();
  cfg.limiter =
      std::make_unique<ItemExponentialFailureRateLimiter<std::string>>(milliseconds(1), seconds(1));
  RateLimitingQueue<std::string> queue(std::move(cfg));

  queue.addRateLimited("one");
  EXPECT_EQ(queue.numRequeues("one"), 1);
  advance(microseconds(999));
  EXPECT_EQ(queue.len(), 0u);
  advance(microseconds(1));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(getNow(queue), Item("one"));

  // Second failure: 2ms.
  queue.addRateLimited("one");
  queue.done("one");
  EXPECT_EQ(queue.numRequeues("one"), 2);
  advance(microseconds(1999));
  EXPECT_EQ(queue.len(), 0u);
  advance(microseconds(1));
  EXPECT_EQ(queue.len(), 1u);

  queue.addRateLimited("two");
  queue.addRateLimited("two");
  EXPECT_EQ(queue.numRequeues("two"), 2);

  queue.forget("one");
  EXPECT_EQ(queue.numRequeues("one"), 0);
  EXPECT_EQ(getNow(queue), Item("one"));
  queue.done("one");
  queue.addRateLimited("one");
  advance(microseconds(999));
  EXPECT_EQ(queue.len(), 0u);
  advance(microseconds(1));
  EXPECT_EQ(queue.len(), 2u);  // "one", and "two" (its first, 1ms, add won)
}

// client-go: without a limiter in the config the queue uses the default
// controller limiter, whose first delay for an item is 5ms.
TEST_F(RateLimitingQueueTest, DefaultsToTheControllerRateLimiter) {
  RateLimitingQueue<std::string> queue(config());
  queue.addRateLimited("a");
  advance(microseconds(4999));
  EXPECT_EQ(queue.len(), 0u);
  advance(microseconds(1));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(queue.numRequeues("a"), 1);
}

// client-go: while shutting down the item is not added, but
// the limiter still records the failure (client-go asks it before AddAfter checks shutdown).
TEST_F(RateLimitingQueueTest, AddRateLimitedAfterShutDownOnlyCountsTheFailure) {
  RateLimitingQueue<std::string> queue(config());
  queue.shutDown();
  queue.addRateLimited("a");
  advance(seconds(1));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.numRequeues("a"), 1);
}

}  // namespace
}  // namespace egress::workqueue::testing
