// Unit tests of egw-agent's LeaseRenewer on a FakeClock with an in-memory Lease
// (test/unit/leaderelection/fake_lease_lock.h): its own freshness is judged on the monotonic
// clock from when the last successful renewal was started, a margin short of the duration, and
// renewSoon() writes at once.
#include "pkg/agent/lease_renewer.h"

#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "test/testutil/fake_time.h"
#include "test/unit/leaderelection/fake_lease_lock.h"

namespace egress::agent {
namespace {

using leaderelection::testing::FakeLeaseLock;
using leaderelection::testing::FakeLeaseStore;
using leaderelection::testing::serverError;
using std::chrono::milliseconds;
using std::chrono::seconds;

class LeaseRenewerTest : public ::testing::Test {
 protected:
  LeaseRenewerTest() {
    LeaseRenewer::Options options;
    options.renewInterval = seconds(2);
    options.duration = seconds(6);
    options.onChange = [this] { ++changes_; };
    renewer_ = std::make_unique<LeaseRenewer>(lock_, clock_, options);
  }

  ~LeaseRenewerTest() override {
    store_.releaseHung();
    renewer_->stop();
    poll();
  }

  void start() {
    net::co_spawn(ioc_, renewer_->run(), rethrowUnhandled);
    poll();
  }
  void poll() { testutil::pollReady(ioc_); }
  void advanceTo(Clock::TimePoint t) { testutil::advanceFakeClockTo(ioc_, clock_, t); }
  size_t writes() const { return store_.count("create") + store_.count("update"); }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  FakeLeaseStore store_{ioc_.get_executor(), clock_};
  FakeLeaseLock lock_{store_, "n1"};
  int changes_ = 0;
  std::unique_ptr<LeaseRenewer> renewer_;
};

TEST_F(LeaseRenewerTest, NotFreshBeforeTheFirstRenewal) {
  const auto t0 = clock_.now();
  EXPECT_FALSE(renewer_->fresh(t0));
  EXPECT_FALSE(renewer_->freshUntil());
  EXPECT_FALSE(renewer_->attempted());
}

// The operator observes a renewal no earlier than it was sent, so the agent counts from when
// it started the request, however long the request took, and stops a margin early.
TEST_F(LeaseRenewerTest, FreshFromTheStartOfTheLastSuccessfulRenewalMinusTheMargin) {
  const auto t0 = clock_.now();
  store_.hangGets = true;
  start();
  EXPECT_FALSE(renewer_->attempted());
  advanceTo(t0 + milliseconds(1500));  // the request takes 1.5 s
  store_.releaseHung();
  poll();
  ASSERT_EQ(store_.count("create"), 1U);
  ASSERT_TRUE(renewer_->attempted());
  EXPECT_EQ(changes_, 1);
  ASSERT_TRUE(renewer_->freshUntil());
  EXPECT_EQ(*renewer_->freshUntil(), t0 + seconds(6) - LeaseRenewer::kFreshnessMargin);
  EXPECT_EQ(LeaseRenewer::kFreshnessMargin, milliseconds(500));
  EXPECT_TRUE(renewer_->fresh(t0 + milliseconds(5499)));
  EXPECT_FALSE(renewer_->fresh(t0 + milliseconds(5500)));
  EXPECT_FALSE(renewer_->fresh(t0 + seconds(6)));
}

TEST_F(LeaseRenewerTest, AFailedRenewalDoesNotExtendFreshness) {
  const auto t0 = clock_.now();
  start();
  ASSERT_TRUE(renewer_->fresh(t0));
  // Every renewal from now on fails.
  for (int i = 0; i < 10; ++i) {
    store_.updateErrors.push_back(serverError());
  }
  advanceTo(t0 + seconds(5));
  EXPECT_GE(store_.count("update"), 2U);
  EXPECT_EQ(renewer_->consecutiveFailures(), static_cast<int>(store_.count("update")));
  EXPECT_EQ(*renewer_->freshUntil(), t0 + milliseconds(5500));
  EXPECT_FALSE(renewer_->fresh(t0 + milliseconds(5500)));
  // A success again: fresh from its start.
  store_.updateErrors.clear();
  advanceTo(t0 + seconds(6));
  EXPECT_EQ(renewer_->consecutiveFailures(), 0);
  EXPECT_EQ(*renewer_->freshUntil(), t0 + seconds(6) + milliseconds(5500));
}

TEST_F(LeaseRenewerTest, RenewSoonWritesAtOnce) {
  const auto t0 = clock_.now();
  start();
  ASSERT_EQ(writes(), 1U);
  advanceTo(t0 + milliseconds(700));
  renewer_->renewSoon();
  poll();
  EXPECT_EQ(writes(), 2U);
  EXPECT_EQ(*renewer_->freshUntil(), t0 + milliseconds(700) + milliseconds(5500));
  // And the interval counts from there.
  advanceTo(t0 + milliseconds(2699));
  EXPECT_EQ(writes(), 2U);
  advanceTo(t0 + milliseconds(2700));
  EXPECT_EQ(writes(), 3U);
}

// A request for a renewal while one is in flight: that one may have been written before the
// change, so another follows it at once.
TEST_F(LeaseRenewerTest, RenewSoonDuringARenewalRenewsAgainRightAfter) {
  const auto t0 = clock_.now();
  start();
  store_.hangUpdates = true;
  advanceTo(t0 + seconds(2));
  ASSERT_EQ(store_.count("update"), 1U);
  renewer_->renewSoon();
  poll();
  EXPECT_EQ(store_.count("update"), 1U);
  store_.releaseHung();
  poll();
  EXPECT_EQ(store_.count("update"), 2U);
  EXPECT_EQ(clock_.now(), t0 + seconds(2));
  // Then back to the interval.
  advanceTo(t0 + milliseconds(3999));
  EXPECT_EQ(store_.count("update"), 2U);
}

TEST_F(LeaseRenewerTest, StopEndsTheLoopEvenAfterRenewSoon) {
  start();
  renewer_->renewSoon();
  renewer_->stop();
  poll();
  const auto n = writes();
  advanceTo(clock_.now() + seconds(10));
  EXPECT_EQ(writes(), n);
}

}  // namespace
}  // namespace egress::agent
