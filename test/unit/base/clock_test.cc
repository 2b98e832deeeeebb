#include "pkg/base/clock.h"

#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "test/testutil/run_sync.h"

namespace egress {
namespace {

using std::chrono::seconds;

net::awaitable<bool> sleepSeconds(Clock* clock, int n) {
  co_return co_await clock->sleepFor(seconds(n));
}

TEST(FakeClock, TimersFireOnlyWhenTimeIsAdvancedPastThem) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  std::optional<bool> woke;
  testutil::spawnInto(ioc, sleepSeconds(&clock, 10), woke);
  ioc.poll();
  EXPECT_FALSE(woke);
  EXPECT_EQ(clock.waiters(), 1u);
  clock.advance(seconds(9));
  ioc.poll();
  EXPECT_FALSE(woke);
  clock.advance(seconds(1));
  ioc.poll();
  ASSERT_TRUE(woke);
  EXPECT_TRUE(*woke);
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClock, CancelWakesWithFalse) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  auto timer = clock.makeTimer();
  std::optional<bool> woke;
  testutil::spawnInto(ioc, timer->waitUntil(clock.now() + seconds(5)), woke);
  ioc.poll();
  timer->cancel();
  ioc.poll();
  ASSERT_TRUE(woke);
  EXPECT_FALSE(*woke);
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClock, PastDeadlineReturnsAtOnceAndWallTimeFollows) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  auto wall = clock.wallNow();
  auto timer = clock.makeTimer();
  EXPECT_TRUE(testutil::runSync(ioc, timer->waitUntil(clock.now())));
  clock.advance(seconds(3));
  EXPECT_EQ(clock.wallNow() - wall, seconds(3));
}

TEST(RealClock, SleepsForReal) {
  net::io_context ioc;
  RealClock clock(ioc.get_executor());
  const auto start = clock.now();
  EXPECT_TRUE(testutil::runSync(ioc, clock.sleepFor(std::chrono::milliseconds(20))));
  EXPECT_GE(clock.now() - start, std::chrono::milliseconds(20));
}

}  // namespace
}  // namespace egress

namespace egress {
namespace {

net::awaitable<void> waitTwice(Clock* clock, Timer* timer, int* woke) {
  for (int i = 0; i < 2; ++i) {
    if (co_await timer->waitUntil(clock->now() + std::chrono::seconds(30))) {
      ++*woke;
    }
  }
}

TEST(FakeClock, ATimerCanWaitAgainAfterFiring) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  auto timer = clock.makeTimer();
  int woke = 0;
  net::co_spawn(ioc, waitTwice(&clock, timer.get(), &woke), rethrowUnhandled);
  ioc.poll();
  clock.advance(std::chrono::seconds(30));
  ioc.poll();
  EXPECT_EQ(woke, 1);
  EXPECT_EQ(clock.waiters(), 1u) << "waiting again, not spinning";
  clock.advance(std::chrono::seconds(30));
  ioc.poll();
  EXPECT_EQ(woke, 2);
}

}  // namespace
}  // namespace egress
