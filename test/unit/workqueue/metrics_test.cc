// Tests for the workqueue_* metrics (pkg/workqueue/metrics.h and the hooks in the queues):
// names, the `name` label, client-go's buckets, and the values after a scripted sequence
// (client-go). Read back through prometheus-cpp's TextSerializer, as the
// /metrics endpoint would show them.
#include "pkg/workqueue/metrics.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "pkg/workqueue/queue.h"
#include "pkg/workqueue/rate_limiting_queue.h"
#include "test/unit/workqueue/testing.h"

namespace egress::workqueue::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using MetricsTest = WorkqueueTest;

std::string serialize(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

// client-go (buckets): ExponentialBuckets(10e-9, 10, 10) as Go computes it.
TEST(DurationBuckets, MatchClientGo) {
  const auto buckets = durationBuckets();
  ASSERT_EQ(buckets.size(), 10u);
  EXPECT_DOUBLE_EQ(buckets.front(), 1e-8);
  EXPECT_DOUBLE_EQ(buckets.back(), 10);
  for (size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_DOUBLE_EQ(buckets[i], buckets[i - 1] * 10);
  }
}

// client-go (every row; names, label, buckets): a scripted sequence on a
// named rate-limiting queue, with the 500ms unfinished-work refresh driven by the FakeClock.
TEST_F(MetricsTest, ScriptedSequence) {
  prometheus::Registry registry;
  auto cfg = config("test", &registry);
  cfg.limiter =
      std::make_unique<ItemExponentialFailureRateLimiter<std::string>>(milliseconds(1), seconds(1));
  RateLimitingQueue<std::string> queue(std::move(cfg));
  EXPECT_EQ(queue.metricsError(), "");

  // adds and depth +1 only for items that were not already dirty.
  queue.add("a");
  queue.add("b");
  queue.add("a");
  advance(seconds(1));
  // a waited 1s.
  EXPECT_EQ(getNow(queue), Item("a"));
  advance(seconds(2));
  // b waited 3s; a has been processing for 2s (the refresh at t=3s saw that).
  EXPECT_EQ(getNow(queue), Item("b"));
  std::string text = serialize(registry);
  EXPECT_THAT(text, HasSubstr("workqueue_adds_total{name=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_depth{name=\"test\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_unfinished_work_seconds{name=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_longest_running_processor_seconds{name=\"test\"} 2\n"));

  advance(milliseconds(500));  // refresh: a is 2.5s old, b 0.5s
  text = serialize(registry);
  EXPECT_THAT(text, HasSubstr("workqueue_unfinished_work_seconds{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_longest_running_processor_seconds{name=\"test\"} 2.5\n"));

  // Re-adding an item being processed counts as an add and as depth, though it is not queued
  // until done() (client-go does the same).
  queue.add("a");
  EXPECT_EQ(queue.len(), 0u);
  queue.done("a");                      // worked 2.5s
  queue.done("b");                      // worked 0.5s
  EXPECT_EQ(getNow(queue), Item("a"));  // queued 0s
  queue.done("a");                      // worked 0s

  // Every addAfter is a retry, even with no delay; addRateLimited is an addAfter.
  queue.addAfter("c", Clock::Duration::zero());
  queue.addRateLimited("d");
  queue.addAfter("c", seconds(1));
  advance(milliseconds(500));  // refresh: nothing in flight; d (1ms) is now queued
  text = serialize(registry);
  EXPECT_THAT(text, HasSubstr("workqueue_retries_total{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_adds_total{name=\"test\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_depth{name=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_unfinished_work_seconds{name=\"test\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_longest_running_processor_seconds{name=\"test\"} 0\n"));

  // Queue durations 1s, 3s, 0s; work durations 2.5s, 0.5s, 0s.
  EXPECT_THAT(text, HasSubstr("workqueue_queue_duration_seconds_count{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_queue_duration_seconds_sum{name=\"test\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_work_duration_seconds_count{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_work_duration_seconds_sum{name=\"test\"} 3\n"));
  // Every client-go bucket bound, printed as Go prints it, with cumulative counts.
  const std::string q = "workqueue_queue_duration_seconds_bucket{name=\"test\",le=";
  EXPECT_THAT(text, HasSubstr(q + "\"1e-08\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"1e-07\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"1e-06\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"9.999999999999999e-06\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"9.999999999999999e-05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"0.001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"0.01\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"10\"} 3\n"));
  EXPECT_THAT(text, HasSubstr(q + "\"+Inf\"} 3\n"));
  const std::string w = "workqueue_work_duration_seconds_bucket{name=\"test\",le=";
  EXPECT_THAT(text, HasSubstr(w + "\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(w + "\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(w + "\"10\"} 3\n"));
}

// client-go: the refresh coroutine runs only with metrics and stops at
// shutdown, so it holds no timer afterwards.
TEST_F(MetricsTest, RefreshStopsAtShutDown) {
  prometheus::Registry registry;
  Queue<std::string> queue(config("refresh", &registry));
  poll();
  EXPECT_EQ(clock_.waiters(), 1u);
  EXPECT_EQ(clock_.nextDeadline(), clock_.now() + milliseconds(500));
  queue.shutDown();
  poll();
  EXPECT_EQ(clock_.waiters(), 0u);

  Queue<std::string> unnamed(config("", &registry));
  poll();
  EXPECT_EQ(clock_.waiters(), 0u);
}

// client-go: no registry or no name means no metrics; a plain queue
// has no retries series (only delaying queues do); two queues share the families, one series
// each.
TEST_F(MetricsTest, WhichSeriesExist) {
  Queue<std::string> noRegistry(config("x", nullptr));
  noRegistry.add("a");

  prometheus::Registry registry;
  Queue<std::string> unnamed(config("", &registry));
  unnamed.add("a");
  EXPECT_TRUE(registry.Collect().empty());

  Queue<std::string> plain(config("plain", &registry));
  DelayingQueue<std::string> delaying(config("delaying", &registry));
  plain.add("a");
  delaying.add("a");
  delaying.add("b");
  const std::string text = serialize(registry);
  EXPECT_THAT(text, HasSubstr("workqueue_depth{name=\"plain\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_depth{name=\"delaying\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("workqueue_retries_total{name=\"delaying\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("workqueue_retries_total{name=\"plain\"}")));
  EXPECT_THAT(text, Not(HasSubstr("name=\"\"")));
}

// No exceptions across the package boundary: when prometheus-cpp refuses the families (here a
// counter already named workqueue_depth), the queue works without metrics and says why.
TEST_F(MetricsTest, RegistryConflictDisablesMetricsWithAReason) {
  prometheus::Registry registry;
  prometheus::BuildCounter().Name("workqueue_depth").Help("squatter").Register(registry);
  Queue<std::string> queue(config("conflict", &registry));
  EXPECT_THAT(queue.metricsError(), HasSubstr("conflict"));
  queue.add("a");
  EXPECT_EQ(getNow(queue), Item("a"));
  EXPECT_EQ(clock_.waiters(), 0u);
}

}  // namespace
}  // namespace egress::workqueue::testing
