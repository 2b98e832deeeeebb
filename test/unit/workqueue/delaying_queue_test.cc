// Tests for pkg/workqueue/delaying_queue.h, mirroring client-go's
// util/workqueue/delaying_queue_test.go (client-go). Time is a FakeClock: items
// become ready only when the test advances it.
#include "pkg/workqueue/delaying_queue.h"

#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "test/unit/workqueue/testing.h"

namespace egress::workqueue::testing {
namespace {

class DelayingQueueTest : public WorkqueueTest {
 protected:
  // Takes the next item (without waiting) and marks it done at once.
  Item take(Queue<std::string>& queue) {
    Item item = getNow(queue);
    if (item) {
      queue.done(*item);
    }
    return item;
  }
};

// client-go's TestSimpleQueue: an item added after 50ms arrives once the
// clock passes 50ms, and only once (stepping past client-go's 10s heartbeat adds nothing).
TEST_F(DelayingQueueTest, SimpleQueue) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", milliseconds(50));
  poll();
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.waiting(), 1u);
  advance(milliseconds(49));
  EXPECT_EQ(queue.len(), 0u);
  advance(milliseconds(11));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(queue.waiting(), 0u);
  EXPECT_EQ(take(queue), Item("foo"));
  advance(seconds(10));
  EXPECT_EQ(queue.len(), 0u);
}

// client-go's TestDeduping: a second addAfter for a waiting item keeps the
// earlier time; a later one does not postpone it and does not make it fire twice.
TEST_F(DelayingQueueTest, Deduping) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", milliseconds(50));
  queue.addAfter("foo", milliseconds(70));
  poll();
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.waiting(), 1u);
  advance(milliseconds(60));  // past the first time: it arrives
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(take(queue), Item("foo"));
  advance(milliseconds(20));  // past the second: nothing more
  EXPECT_EQ(queue.len(), 0u);

  // This time the earlier one comes second and must win.
  queue.addAfter("foo", milliseconds(50));
  queue.addAfter("foo", milliseconds(30));
  poll();
  EXPECT_EQ(queue.len(), 0u);
  advance(milliseconds(40));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(take(queue), Item("foo"));
  advance(milliseconds(20));
  EXPECT_EQ(queue.len(), 0u);
}

// client-go's TestAddTwoFireEarly: an earlier item added after a later
// one re-arms the timer and comes out first; a third one added meanwhile keeps its own time.
TEST_F(DelayingQueueTest, AddTwoFireEarly) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", seconds(1));
  poll();
  queue.addAfter("bar", milliseconds(50));
  poll();
  EXPECT_EQ(queue.len(), 0u);
  advance(milliseconds(60));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(take(queue), Item("bar"));

  queue.addAfter("baz", seconds(2));
  advance(seconds(1));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(take(queue), Item("foo"));

  advance(seconds(2));
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(take(queue), Item("baz"));
}

// client-go's TestCopyShifting: items that all become ready in one step come
// out in deadline order, not in the order they were added.
TEST_F(DelayingQueueTest, ItemsComeOutInDeadlineOrder) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", seconds(1));
  queue.addAfter("bar", milliseconds(500));
  queue.addAfter("baz", milliseconds(250));
  poll();
  EXPECT_EQ(queue.len(), 0u);
  advance(seconds(2));
  EXPECT_EQ(queue.len(), 3u);
  EXPECT_EQ(take(queue), Item("baz"));
  EXPECT_EQ(take(queue), Item("bar"));
  EXPECT_EQ(take(queue), Item("foo"));
}

// client-go: a zero or negative delay adds at once, without the clock moving
// and without waiting for the io_context.
TEST_F(DelayingQueueTest, ZeroOrNegativeDelayAddsNow) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("zero", Clock::Duration::zero());
  EXPECT_EQ(queue.len(), 1u);
  queue.addAfter("negative", -seconds(1));
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(queue.waiting(), 0u);
  EXPECT_EQ(clock_.waiters(), 0u);
}

// client-go: a plain add() does not cancel a pending addAfter(), so the item
// comes back when its time arrives (client-go behaves the same, kubernetes#112325).
TEST_F(DelayingQueueTest, PlainAddDoesNotCancelPendingAddAfter) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", seconds(1));
  queue.add("foo");
  EXPECT_EQ(take(queue), Item("foo"));
  EXPECT_EQ(queue.len(), 0u);
  advance(seconds(1));
  EXPECT_EQ(queue.len(), 1u);
}

// client-go ("ignored while shutting down"): shutdown drops
// waiting items, stops the timer, and later addAfter calls are ignored.
TEST_F(DelayingQueueTest, ShutDownStopsTheWaitingLoop) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("foo", seconds(1));
  poll();
  EXPECT_EQ(clock_.waiters(), 1u);
  queue.shutDown();
  poll();
  EXPECT_EQ(clock_.waiters(), 0u);
  EXPECT_EQ(queue.waiting(), 0u);
  queue.addAfter("bar", seconds(1));
  queue.addAfter("baz", Clock::Duration::zero());
  advance(seconds(5));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(getNow(queue), std::nullopt);
}

// client-go (our variant of the wake-ups): the waiting coroutine sleeps only
// while something waits, so an idle queue holds no timer.
TEST_F(DelayingQueueTest, IdleQueueHoldsNoTimer) {
  DelayingQueue<std::string> queue(config());
  poll();
  EXPECT_EQ(clock_.waiters(), 0u);
  queue.addAfter("foo", seconds(1));
  queue.addAfter("bar", seconds(2));
  poll();
  EXPECT_EQ(clock_.waiters(), 1u);
  EXPECT_EQ(clock_.nextDeadline(), clock_.now() + seconds(1));
  advance(seconds(1));
  EXPECT_EQ(clock_.nextDeadline(), clock_.now() + seconds(1));
  advance(seconds(1));
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(clock_.waiters(), 0u);
  // And it starts again for the next delayed item.
  queue.addAfter("baz", milliseconds(5));
  advance(milliseconds(5));
  EXPECT_EQ(queue.len(), 3u);
}

// client-go (a limiter can answer "never"): the largest delay saturates the
// deadline instead of overflowing into the past.
TEST_F(DelayingQueueTest, MaximalDelayNeverFires) {
  DelayingQueue<std::string> queue(config());
  queue.addAfter("never", Clock::Duration::max());
  advance(hours(24 * 365));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.waiting(), 1u);
}

// client-go, lifetime: destroying a queue with items waiting cancels its timer; the
// waiting coroutine exits on its own when the io_context next runs.
TEST_F(DelayingQueueTest, DestroyingTheQueueStopsItsTimer) {
  auto queue = std::make_unique<DelayingQueue<std::string>>(config());
  queue->addAfter("foo", seconds(1));
  poll();
  EXPECT_EQ(clock_.waiters(), 1u);
  queue.reset();
  poll();
  EXPECT_EQ(clock_.waiters(), 0u);
  advance(seconds(2));
}

}  // namespace
}  // namespace egress::workqueue::testing
