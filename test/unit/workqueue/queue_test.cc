// Tests for pkg/workqueue/queue.h, mirroring client-go's util/workqueue/queue_test.go
// (client-go). Workers are coroutines on one io_context; "processing takes time" is
// a FakeClock sleep, so several workers really hold items at once.
#include "pkg/workqueue/queue.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <gtest/gtest.h>

#include "test/testutil/run_sync.h"
#include "test/unit/workqueue/testing.h"

namespace egress::workqueue::testing {
namespace {

namespace net = boost::asio;
using testutil::spawnInto;

// What the workers saw, shared by all of them.
struct Observed {
  std::set<std::string> inFlight;
  std::map<std::string, int> processed;
  int concurrentViolations = 0;
  int addedAfterShutdown = 0;
};

// A client-go style worker: take, "work" for `work` of fake time, done. When reAddUpTo > 0 it
// re-adds the item while processing it until the item has been processed that many times.
net::awaitable<bool> worker(Queue<std::string>* queue, Clock* clock, Observed* seen,
                            Clock::Duration work, int reAddUpTo) {
  while (true) {
    std::optional<std::string> item = co_await queue->get();
    if (!item) {
      co_return true;
    }
    if (*item == "added after shutdown!") {
      ++seen->addedAfterShutdown;
    }
    if (!seen->inFlight.insert(*item).second) {
      ++seen->concurrentViolations;
    }
    const int times = ++seen->processed[*item];
    if (times < reAddUpTo) {
      queue->add(*item);
    }
    co_await clock->sleepFor(work);
    seen->inFlight.erase(*item);
    queue->done(*item);
  }
}

net::awaitable<bool> producer(Queue<std::string>* queue, Clock* clock, int id, int times) {
  for (int j = 0; j < times; ++j) {
    queue->add(std::to_string(id));
    co_await clock->sleepFor(milliseconds(1));
  }
  co_return true;
}

// A producer that is also a worker: adds, then takes from the queue without parking.
net::awaitable<Item> addThenGet(Queue<std::string>* queue, std::string item) {
  queue->add(item);
  co_return co_await queue->get();
}

// get() raced against a fake-time timeout: the get is cancelled if the timeout wins.
net::awaitable<std::variant<Item, bool>> getOrTimeout(Queue<std::string>* queue, Clock* clock,
                                                      Clock::Duration timeout) {
  using namespace boost::asio::experimental::awaitable_operators;
  co_return co_await (queue->get() || clock->sleepFor(timeout));
}

bool allDone(const std::vector<std::optional<bool>>& flags) {
  for (const auto& f : flags) {
    if (!f) {
      return false;
    }
  }
  return true;
}

class QueueTest : public WorkqueueTest, public ::testing::WithParamInterface<bool> {};

// client-go's TestBasic: 50 producers x 50 adds, 10 workers taking 3ms per
// item; shut down with ShutDown or ShutDownWithDrain (the parameter). Every item is processed,
// never by two workers at once, nothing added after shutdown is handed out, workers all exit.
TEST_P(QueueTest, BasicSeveralProducersAndWorkers) {
  const bool withDrain = GetParam();
  Queue<std::string> queue(config());
  Observed seen;
  std::vector<std::optional<bool>> producers(50);
  std::vector<std::optional<bool>> workers(10);
  for (int i = 0; i < 50; ++i) {
    spawnInto(ioc_, producer(&queue, &clock_, i, 50), producers[i]);
  }
  for (auto& w : workers) {
    spawnInto(ioc_, worker(&queue, &clock_, &seen, milliseconds(3), 0), w);
  }
  for (int step = 0; step < 1000 && !allDone(producers); ++step) {
    advance(milliseconds(1));
  }
  ASSERT_TRUE(allDone(producers));

  std::optional<bool> drained;
  if (withDrain) {
    spawnInto(ioc_, drain(&queue), drained);
  } else {
    queue.shutDown();
  }
  poll();
  queue.add("added after shutdown!");
  for (int step = 0; step < 10000 && !allDone(workers); ++step) {
    advance(milliseconds(1));
  }
  EXPECT_TRUE(allDone(workers));
  EXPECT_EQ(drained.has_value(), withDrain);
  EXPECT_EQ(seen.addedAfterShutdown, 0);
  EXPECT_EQ(seen.concurrentViolations, 0);
  EXPECT_EQ(seen.processed.size(), 50u);
  EXPECT_EQ(queue.len(), 0u);
}

// client-go's TestAddWhileProcessing: every worker re-adds the item it
// is processing once; each item is then processed exactly twice, never concurrently.
TEST_P(QueueTest, AddWhileProcessing) {
  const bool withDrain = GetParam();
  Queue<std::string> queue(config());
  Observed seen;
  std::vector<std::optional<bool>> workers(10);
  for (int i = 0; i < 50; ++i) {
    queue.add(std::to_string(i));
  }
  for (auto& w : workers) {
    spawnInto(ioc_, worker(&queue, &clock_, &seen, milliseconds(2), 2), w);
  }
  for (int step = 0; step < 200; ++step) {
    advance(milliseconds(1));
  }
  std::optional<bool> drained;
  if (withDrain) {
    spawnInto(ioc_, drain(&queue), drained);
  } else {
    queue.shutDown();
  }
  for (int step = 0; step < 100 && !allDone(workers); ++step) {
    advance(milliseconds(1));
  }
  EXPECT_TRUE(allDone(workers));
  EXPECT_EQ(drained.has_value(), withDrain);
  EXPECT_EQ(seen.concurrentViolations, 0);
  ASSERT_EQ(seen.processed.size(), 50u);
  for (const auto& [item, times] : seen.processed) {
    EXPECT_EQ(times, 2) << item;
  }
  EXPECT_EQ(queue.len(), 0u);
}

INSTANTIATE_TEST_SUITE_P(ShutDownOrDrain, QueueTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Drain" : "ShutDown"; });

// client-go (TestLen, TestCollapse): adding an item that is already
// waiting is a no-op; len() counts queued items only.
TEST_F(WorkqueueTest, AddOfDirtyItemIsDeduped) {
  Queue<std::string> queue(config());
  queue.add("foo");
  EXPECT_EQ(queue.len(), 1u);
  queue.add("bar");
  EXPECT_EQ(queue.len(), 2u);
  queue.add("foo");
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(getNow(queue), Item("foo"));
  EXPECT_EQ(getNow(queue), Item("bar"));
  EXPECT_EQ(queue.len(), 0u);
}

// client-go's TestReinsert: an item added while processing is not queued
// until done(), then comes back exactly once.
TEST_F(WorkqueueTest, ReAddWhileProcessingIsQueuedAfterDone) {
  Queue<std::string> queue(config());
  queue.add("foo");
  EXPECT_EQ(getNow(queue), Item("foo"));
  queue.add("foo");
  EXPECT_EQ(queue.len(), 0u);  // in flight, not queued
  queue.done("foo");
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(getNow(queue), Item("foo"));
  queue.done("foo");
  EXPECT_EQ(queue.len(), 0u);
}

// client-go's TestCollapseWhileProcessing: two adds while processing
// collapse into one, and a second worker waiting in get() is not handed the item until the
// first calls done().
TEST_F(WorkqueueTest, ItemIsNeverHandedToTwoWorkers) {
  Queue<std::string> queue(config());
  queue.add("foo");
  EXPECT_EQ(getNow(queue), Item("foo"));
  queue.add("foo");
  queue.add("foo");
  std::optional<Item> secondResult;
  spawnInto(ioc_, getItem(&queue), secondResult);
  poll();
  EXPECT_FALSE(secondResult.has_value());
  EXPECT_EQ(queue.len(), 0u);
  queue.done("foo");
  poll();
  ASSERT_TRUE(secondResult.has_value());
  EXPECT_EQ(*secondResult, Item("foo"));
  EXPECT_EQ(queue.len(), 0u);  // once, not twice
  queue.done("foo");
  EXPECT_EQ(queue.len(), 0u);
}

// client-go (fairness; one wake per item): three workers parked in get();
// one add wakes exactly one of them (the one that waited longest), two more adds the others.
TEST_F(WorkqueueTest, WakesAsManyGettersAsItemsArrive) {
  Queue<std::string> queue(config());
  std::vector<std::optional<Item>> got(3);
  for (auto& g : got) {
    spawnInto(ioc_, getItem(&queue), g);
  }
  poll();
  queue.add("a");
  poll();
  ASSERT_TRUE(got[0].has_value());
  EXPECT_EQ(*got[0], Item("a"));
  EXPECT_FALSE(got[1].has_value());
  EXPECT_FALSE(got[2].has_value());
  queue.add("b");
  queue.add("c");
  poll();
  ASSERT_TRUE(got[1].has_value());
  ASSERT_TRUE(got[2].has_value());
  EXPECT_EQ(*got[1], Item("b"));
  EXPECT_EQ(*got[2], Item("c"));
}

// client-go "fair" (our addition): a woken getter whose item was taken first by a
// running coroutine goes back to the head of the line, not behind getters that came later.
TEST_F(WorkqueueTest, WokenGetterThatFindsNothingKeepsItsPlace) {
  Queue<std::string> queue(config());
  std::vector<std::optional<Item>> got(2);
  for (auto& g : got) {
    spawnInto(ioc_, getItem(&queue), g);
  }
  poll();
  std::optional<Item> stolen;
  spawnInto(ioc_, addThenGet(&queue, "x"), stolen);  // wakes got[0], then takes "x" itself
  poll();
  ASSERT_TRUE(stolen.has_value());
  EXPECT_EQ(*stolen, Item("x"));
  EXPECT_FALSE(got[0].has_value());
  queue.add("y");
  poll();
  ASSERT_TRUE(got[0].has_value());
  EXPECT_EQ(*got[0], Item("y"));
  EXPECT_FALSE(got[1].has_value());
  queue.shutDown();
  poll();
}

// client-go: shutDown() wakes every parked getter with nullopt.
TEST_F(WorkqueueTest, ShutDownWakesWaitingGetters) {
  Queue<std::string> queue(config());
  std::vector<std::optional<Item>> got(3);
  for (auto& g : got) {
    spawnInto(ioc_, getItem(&queue), g);
  }
  poll();
  EXPECT_FALSE(queue.shuttingDown());
  queue.shutDown();
  EXPECT_TRUE(queue.shuttingDown());
  poll();
  for (const auto& g : got) {
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(*g, std::nullopt);
  }
}

// client-go: after ShutDown, adds are ignored but what was queued is
// still handed out, then get() returns nullopt.
TEST_F(WorkqueueTest, QueuedItemsAreStillHandedOutAfterShutDown) {
  Queue<std::string> queue(config());
  queue.add("a");
  queue.add("b");
  queue.shutDown();
  queue.add("c");
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(getNow(queue), Item("a"));
  EXPECT_EQ(getNow(queue), Item("b"));
  EXPECT_EQ(getNow(queue), std::nullopt);
}

// client-go's TestQueueDrainageUsingShutDownWithDrain: the drain waits until
// both in-flight items are done; getters meanwhile see the shutdown.
TEST_F(WorkqueueTest, QueueDrainageUsingShutDownWithDrain) {
  Queue<std::string> queue(config());
  queue.add("foo");
  queue.add("bar");
  const Item first = getNow(queue);
  const Item second = getNow(queue);
  std::optional<bool> drained;
  spawnInto(ioc_, drain(&queue), drained);
  poll();
  EXPECT_FALSE(drained.has_value());
  EXPECT_EQ(getNow(queue), std::nullopt);
  queue.done(*first);
  poll();
  EXPECT_FALSE(drained.has_value());
  queue.done(*second);
  poll();
  EXPECT_TRUE(drained.has_value());
}

// client-go's TestNoQueueDrainageUsingShutDown: ShutDown does not wait for
// in-flight items; it returns at once (it is not even a coroutine).
TEST_F(WorkqueueTest, NoQueueDrainageUsingShutDown) {
  Queue<std::string> queue(config());
  queue.add("foo");
  queue.add("bar");
  getNow(queue);
  getNow(queue);
  queue.shutDown();
  EXPECT_TRUE(queue.shuttingDown());
  EXPECT_EQ(getNow(queue), std::nullopt);
}

// client-go, "a later ShutDown aborts the wait"
// (TestForceQueueShutdownUsingShutDown).
TEST_F(WorkqueueTest, ForceQueueShutdownUsingShutDown) {
  Queue<std::string> queue(config());
  queue.add("foo");
  queue.add("bar");
  getNow(queue);
  getNow(queue);
  std::optional<bool> drained;
  spawnInto(ioc_, drain(&queue), drained);
  poll();
  EXPECT_FALSE(drained.has_value());
  queue.shutDown();
  poll();
  EXPECT_TRUE(drained.has_value());
}

// client-go's TestQueueDrainageUsingShutDownWithDrainWithDirtyItem:
// during a drain, done() of an item re-added while processing puts it back, and a getter
// receives it before finally seeing the shutdown.
TEST_F(WorkqueueTest, QueueDrainageUsingShutDownWithDrainWithDirtyItem) {
  Queue<std::string> queue(config());
  queue.add("foo");
  const Item gotten = getNow(queue);
  queue.add("foo");
  std::optional<bool> drained;
  spawnInto(ioc_, drain(&queue), drained);
  poll();
  EXPECT_FALSE(drained.has_value());
  EXPECT_EQ(getNow(queue), std::nullopt);
  queue.done(*gotten);
  const Item again = getNow(queue);
  EXPECT_EQ(again, Item("foo"));
  queue.done(*again);
  EXPECT_EQ(getNow(queue), std::nullopt);
  poll();
  EXPECT_TRUE(drained.has_value());
}

// Deliberate deviation from client-go (see QueueState::done): done() of an
// item nobody is processing must not queue it a second time (client-go would, and two workers
// could then hold it).
TEST_F(WorkqueueTest, DoneOfAnItemNotBeingProcessedIsIgnored) {
  Queue<std::string> queue(config());
  queue.add("foo");
  queue.done("foo");
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(getNow(queue), Item("foo"));
  EXPECT_EQ(queue.len(), 0u);
}

// client-go, lifetime: destroying the queue shuts it down, and workers parked
// in get() wake with nullopt instead of touching freed memory.
TEST_F(WorkqueueTest, DestroyingTheQueueReleasesParkedGetters) {
  auto queue = std::make_unique<Queue<std::string>>(config());
  std::vector<std::optional<Item>> got(2);
  for (auto& g : got) {
    spawnInto(ioc_, getItem(queue.get()), g);
  }
  poll();
  queue.reset();
  poll();
  for (const auto& g : got) {
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(*g, std::nullopt);
  }
}

// Lifetime: a getter woken for an item just before
// the queue is destroyed gets nullopt, not an item whose done() it could only call on the
// destroyed queue.
TEST_F(WorkqueueTest, GetterWokenJustBeforeTheQueueIsDestroyedTakesNothing) {
  auto queue = std::make_unique<Queue<std::string>>(config());
  std::optional<Item> got;
  spawnInto(ioc_, getItem(queue.get()), got);
  poll();
  queue->add("a");
  queue.reset();
  poll();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::nullopt);
}

// client-go, cancellation (our addition): a get() cancelled by Asio (here by
// losing an `||` race to a timeout) leaves the line and takes nothing, so the next item goes
// to the next getter.
TEST_F(WorkqueueTest, CancelledGetTakesNothing) {
  Queue<std::string> queue(config());
  std::optional<std::variant<Item, bool>> raced;
  spawnInto(ioc_, getOrTimeout(&queue, &clock_, seconds(1)), raced);
  poll();
  EXPECT_FALSE(raced.has_value());
  advance(seconds(1));
  ASSERT_TRUE(raced.has_value());
  EXPECT_EQ(raced->index(), 1u);
  queue.add("a");
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(getNow(queue), Item("a"));
}

// A getter in `get() || timeout` that is signalled in the same tick as its
// timeout fires must not take the item when the timeout wins: the item is either what the race
// returned or still queued, and never stuck in processing (on the old queue it was taken,
// discarded by `||`, and no later getter ever saw it). A getter parked behind it receives it:
// the loser passes its wake-up on.
TEST_F(WorkqueueTest, GetRacedAgainstATimeoutInTheSameTickLosesNoItem) {
  for (const bool secondGetter : {false, true}) {
    SCOPED_TRACE(secondGetter ? "with a second getter" : "alone");
    Queue<std::string> queue(config());
    std::optional<std::variant<Item, bool>> raced;
    spawnInto(ioc_, getOrTimeout(&queue, &clock_, seconds(1)), raced);
    std::optional<Item> second;
    if (secondGetter) {
      spawnInto(ioc_, getItem(&queue), second);
    }
    poll();
    clock_.advance(seconds(1));  // the timeout completes first...
    queue.add("a");              // ...and the parked getter is signalled in the same tick
    poll();
    ASSERT_TRUE(raced.has_value());
    ASSERT_EQ(raced->index(), 1u) << "the timeout completed first";
    if (secondGetter) {
      ASSERT_TRUE(second.has_value());
      EXPECT_EQ(*second, Item("a"));
    } else {
      EXPECT_EQ(queue.len(), 1u);
      EXPECT_EQ(getNow(queue), Item("a"));
    }
  }
}

// Item 7: get(timeout) returns nullopt when the time passes, takes nothing and leaves the line,
// so the next item goes to the next getter; the queue is not shut down.
TEST_F(WorkqueueTest, GetWithTimeoutGivesUpWithoutTakingAnything) {
  Queue<std::string> queue(config());
  std::optional<Item> timed;
  spawnInto(ioc_, getWithin(&queue, seconds(1)), timed);
  std::optional<Item> patient;
  spawnInto(ioc_, getItem(&queue), patient);
  poll();
  advance(milliseconds(999));
  EXPECT_FALSE(timed.has_value());
  advance(milliseconds(1));
  ASSERT_TRUE(timed.has_value());
  EXPECT_EQ(*timed, std::nullopt);
  EXPECT_FALSE(queue.shuttingDown());
  EXPECT_EQ(clock_.waiters(), 0u);
  queue.add("a");
  poll();
  ASSERT_TRUE(patient.has_value());
  EXPECT_EQ(*patient, Item("a"));
}

// Item 7: an item that is queued, or arrives before the timeout, is returned at once.
TEST_F(WorkqueueTest, GetWithTimeoutReturnsAnItemThatArrivesInTime) {
  Queue<std::string> queue(config());
  queue.add("a");
  std::optional<Item> first;
  spawnInto(ioc_, getWithin(&queue, seconds(1)), first);
  poll();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, Item("a"));
  std::optional<Item> second;
  spawnInto(ioc_, getWithin(&queue, seconds(1)), second);
  advance(milliseconds(500));
  queue.add("b");
  poll();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, Item("b"));
  EXPECT_EQ(clock_.waiters(), 0u);
}

// Item 7: an item added in the very tick the timeout passes is returned (whichever of the two
// the io_context runs first), never dropped.
TEST_F(WorkqueueTest, GetWithTimeoutAndAnAddInTheSameTickReturnsTheItem) {
  for (const bool timeoutFirst : {true, false}) {
    SCOPED_TRACE(timeoutFirst ? "timeout first" : "add first");
    Queue<std::string> queue(config());
    std::optional<Item> got;
    spawnInto(ioc_, getWithin(&queue, seconds(1)), got);
    poll();
    if (timeoutFirst) {
      clock_.advance(seconds(1));
      queue.add("a");
    } else {
      queue.add("a");
      clock_.advance(seconds(1));
    }
    poll();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, Item("a"));
    EXPECT_EQ(queue.len(), 0u);
  }
}

// Item 7: shutDown() ends a get(timeout) at once with nullopt.
TEST_F(WorkqueueTest, ShutDownEndsAGetWithTimeout) {
  Queue<std::string> queue(config());
  std::optional<Item> got;
  spawnInto(ioc_, getWithin(&queue, hours(1)), got);
  poll();
  queue.shutDown();
  poll();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::nullopt);
  EXPECT_EQ(clock_.waiters(), 0u);
}

}  // namespace
}  // namespace egress::workqueue::testing
