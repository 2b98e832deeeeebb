// Tests for pkg/base/notifier.h, the one wake-up primitive: notify() wakes
// everyone and is remembered, notifyOne() wakes the longest waiter, deadlines come from a
// FakeClock, and no wake-up is lost to a deadline, a cancellation or the Notifier's destruction.
#include "pkg/base/notifier.h"

#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "test/testutil/run_sync.h"

namespace egress {
namespace {

using std::chrono::seconds;
using testutil::spawnInto;

net::awaitable<bool> waitOn(Notifier* n) {
  co_return co_await n->wait();
}

net::awaitable<bool> waitAtFront(Notifier* n) {
  co_return co_await n->wait(Notifier::Place::Front);
}

net::awaitable<bool> waitFor(Notifier* n, Clock* clock, Clock::Duration d) {
  const auto deadline = clock->now() + d;
  co_return co_await n->waitUntil(*clock, deadline, Notifier::Place::Back);
}

// wait() raced against a fake-time sleep with Asio's awaitable operators.
net::awaitable<std::variant<bool, bool>> waitOrSleep(Notifier* n, Clock* clock, Clock::Duration d) {
  using namespace boost::asio::experimental::awaitable_operators;
  co_return co_await (n->wait() || clock->sleepFor(d));
}

class NotifierTest : public ::testing::Test {
 protected:
  void poll() {
    ioc_.restart();
    ioc_.poll();
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  Notifier notifier_{ioc_.get_executor()};
};

TEST_F(NotifierTest, NotifyWakesEveryWaiter) {
  std::vector<std::optional<bool>> woke(3);
  for (auto& w : woke) {
    spawnInto(ioc_, waitOn(&notifier_), w);
  }
  poll();
  for (const auto& w : woke) {
    EXPECT_FALSE(w.has_value());
  }
  notifier_.notify();
  poll();
  for (const auto& w : woke) {
    ASSERT_TRUE(w.has_value());
    EXPECT_TRUE(*w);
  }
}

TEST_F(NotifierTest, NotifyWithNobodyWaitingIsRememberedOnce) {
  notifier_.notify();
  notifier_.notify();
  std::optional<bool> first;
  spawnInto(ioc_, waitOn(&notifier_), first);
  poll();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(*first);
  std::optional<bool> second;
  spawnInto(ioc_, waitOn(&notifier_), second);
  poll();
  EXPECT_FALSE(second.has_value()) << "two notifies before a wait are one wake-up";
  notifier_.notify();
  poll();
  EXPECT_TRUE(second.has_value());
}

TEST_F(NotifierTest, NotifyOneWakesTheLongestWaiterAndIsNotRemembered) {
  notifier_.notifyOne();  // nobody waits: dropped
  std::vector<std::optional<bool>> woke(3);
  for (auto& w : woke) {
    spawnInto(ioc_, waitOn(&notifier_), w);
  }
  poll();
  EXPECT_FALSE(woke[0].has_value());
  notifier_.notifyOne();
  poll();
  EXPECT_TRUE(woke[0].has_value());
  EXPECT_FALSE(woke[1].has_value());
  EXPECT_FALSE(woke[2].has_value());
  notifier_.notifyOne();
  poll();
  EXPECT_TRUE(woke[1].has_value());
  EXPECT_FALSE(woke[2].has_value());
  notifier_.notify();
  poll();
  EXPECT_TRUE(woke[2].has_value());
}

TEST_F(NotifierTest, FrontWaiterIsWokenBeforeEarlierOnes) {
  std::optional<bool> back;
  spawnInto(ioc_, waitOn(&notifier_), back);
  poll();
  std::optional<bool> front;
  spawnInto(ioc_, waitAtFront(&notifier_), front);
  poll();
  notifier_.notifyOne();
  poll();
  EXPECT_TRUE(front.has_value());
  EXPECT_FALSE(back.has_value());
  notifier_.notifyOne();
  poll();
  EXPECT_TRUE(back.has_value());
}

TEST_F(NotifierTest, WaitUntilEndsAtTheDeadlineAndLeavesTheLine) {
  std::optional<bool> timed;
  spawnInto(ioc_, waitFor(&notifier_, &clock_, seconds(1)), timed);
  std::optional<bool> patient;
  spawnInto(ioc_, waitOn(&notifier_), patient);
  poll();
  clock_.advance(std::chrono::milliseconds(999));
  poll();
  EXPECT_FALSE(timed.has_value());
  clock_.advance(std::chrono::milliseconds(1));
  poll();
  ASSERT_TRUE(timed.has_value());
  EXPECT_FALSE(*timed);
  notifier_.notifyOne();
  poll();
  EXPECT_TRUE(patient.has_value()) << "the timed-out waiter no longer stands in line";
}

// A notification in the tick the deadline passes counts, whichever is processed first.
TEST_F(NotifierTest, NotificationInTheDeadlinesTickWins) {
  for (const bool deadlineFirst : {true, false}) {
    SCOPED_TRACE(deadlineFirst ? "deadline first" : "notification first");
    std::optional<bool> woke;
    spawnInto(ioc_, waitFor(&notifier_, &clock_, seconds(1)), woke);
    poll();
    if (deadlineFirst) {
      clock_.advance(seconds(1));
      notifier_.notifyOne();
    } else {
      notifier_.notifyOne();
      clock_.advance(seconds(1));
    }
    poll();
    ASSERT_TRUE(woke.has_value());
    EXPECT_TRUE(*woke);
  }
}

// A cancelled wait leaves the line; and a waiter picked by notifyOne() whose wait is cancelled
// before it runs (here: its `||` timeout completed first) reports false and hands the wake-up to
// the next waiter. Either way the next waiter gets the wake-up.
TEST_F(NotifierTest, CancelledWaiterNeverSwallowsAWakeUp) {
  for (const bool sameTick : {true, false}) {
    SCOPED_TRACE(sameTick ? "notified in the tick of the cancellation" : "notified later");
    std::optional<std::variant<bool, bool>> raced;
    spawnInto(ioc_, waitOrSleep(&notifier_, &clock_, seconds(1)), raced);
    std::optional<bool> next;
    spawnInto(ioc_, waitOn(&notifier_), next);
    poll();
    clock_.advance(seconds(1));
    if (sameTick) {
      notifier_.notifyOne();
    }
    poll();
    ASSERT_TRUE(raced.has_value());
    EXPECT_EQ(raced->index(), 1u);
    if (!sameTick) {
      EXPECT_FALSE(next.has_value());
      notifier_.notifyOne();
      poll();
    }
    ASSERT_TRUE(next.has_value());
    EXPECT_TRUE(*next);
  }
}

// Destroying the Notifier wakes its waiters with false; neither they nor it touch freed memory
// (run under ASan). The old Notifier's wait() wrote to the destroyed Notifier when it resumed.
TEST(NotifierLifetime, DestroyingItReleasesParkedWaiters) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  auto notifier = std::make_unique<Notifier>(ioc.get_executor());
  std::vector<std::optional<bool>> woke(2);
  spawnInto(ioc, waitOn(notifier.get()), woke[0]);
  spawnInto(ioc, waitFor(notifier.get(), &clock, seconds(5)), woke[1]);
  ioc.poll();
  notifier.reset();
  ioc.restart();
  ioc.poll();
  for (const auto& w : woke) {
    ASSERT_TRUE(w.has_value());
    EXPECT_FALSE(*w);
  }
  EXPECT_EQ(clock.waiters(), 0u);
}

// Also for a waiter that was already woken but had not run yet when the Notifier went away.
TEST(NotifierLifetime, DestroyingItAfterAWakeUpIsSafe) {
  net::io_context ioc;
  auto notifier = std::make_unique<Notifier>(ioc.get_executor());
  std::optional<bool> woke;
  spawnInto(ioc, waitOn(notifier.get()), woke);
  ioc.poll();
  notifier->notifyOne();
  notifier.reset();
  ioc.restart();
  ioc.poll();
  ASSERT_TRUE(woke.has_value());
  EXPECT_FALSE(*woke);
}

}  // namespace
}  // namespace egress
