#include "pkg/leaderelection/observed_leases.h"

#include <gtest/gtest.h>

namespace egress::leaderelection {
namespace {

using namespace std::chrono_literals;

coordination::Lease lease(meta::Time renewed, int32_t seconds = 6) {
  coordination::Lease l;
  l.metadata.name = "egw-agent-n1";
  l.spec.holderIdentity = "n1";
  l.spec.renewTime = renewed;
  l.spec.leaseDurationSeconds = seconds;
  return l;
}

const Clock::TimePoint kT0{std::chrono::hours(1)};
const meta::Time kWall{std::chrono::hours(24 * 365 * 50)};

TEST(ObservedLeases, FreshForItsDurationFromWhenTheChangeWasSeen) {
  ObservedLeases seen;
  seen.observe("n1", lease(kWall), kT0);
  EXPECT_TRUE(seen.fresh("n1", kT0));
  EXPECT_TRUE(seen.fresh("n1", kT0 + 5999ms));
  EXPECT_FALSE(seen.fresh("n1", kT0 + 6s));
  EXPECT_EQ(seen.expiry("n1"), kT0 + 6s);
}

// The remote renewTime is a label, not a time to compare with: a writer whose wall clock is 5 s
// ahead of or behind ours is judged exactly as one in step.
TEST(ObservedLeases, TheWritersClockDoesNotMatter) {
  for (auto skew : {-5s, 0s, 5s, -3600s}) {
    ObservedLeases seen;
    seen.observe("n1", lease(kWall + skew), kT0);
    EXPECT_EQ(seen.expiry("n1"), kT0 + 6s) << skew.count();
    seen.observe("n1", lease(kWall + skew + 2s), kT0 + 2s);
    EXPECT_EQ(seen.expiry("n1"), kT0 + 8s) << skew.count();
  }
}

TEST(ObservedLeases, SeeingTheSameRecordAgainDoesNotRefreshIt) {
  ObservedLeases seen;
  seen.observe("n1", lease(kWall), kT0);
  // A resync or a relist hands the same object over again: still stale at kT0 + 6 s.
  seen.observe("n1", lease(kWall), kT0 + 5s);
  EXPECT_FALSE(seen.fresh("n1", kT0 + 6s));
  // A renewal does.
  seen.observe("n1", lease(kWall + 5s), kT0 + 5s);
  EXPECT_TRUE(seen.fresh("n1", kT0 + 10s));
}

TEST(ObservedLeases, AFirstSightCountsAsARenewalThen) {
  // A Lease renewed (by its own clock) an hour ago, seen now for the first time: fresh for a
  // whole duration from now, as client-go's elector treats a Lease it has just read.
  ObservedLeases seen;
  seen.observe("n1", lease(kWall - 3600s), kT0);
  EXPECT_TRUE(seen.fresh("n1", kT0 + 5s));
}

TEST(ObservedLeases, NeverFreshWithoutRenewTimeOrDuration) {
  ObservedLeases seen;
  auto noRenew = lease(kWall);
  noRenew.spec.renewTime.reset();
  seen.observe("a", noRenew, kT0);
  auto noDuration = lease(kWall);
  noDuration.spec.leaseDurationSeconds.reset();
  seen.observe("b", noDuration, kT0);
  seen.observe("c", lease(kWall, 0), kT0);
  for (const char* k : {"a", "b", "c", "unknown"}) {
    EXPECT_FALSE(seen.fresh(k, kT0)) << k;
    EXPECT_FALSE(seen.expiry(k)) << k;
  }
}

TEST(ObservedLeases, ForgottenIsUnknown) {
  ObservedLeases seen;
  seen.observe("n1", lease(kWall), kT0);
  seen.forget("n1");
  EXPECT_FALSE(seen.fresh("n1", kT0));
}

}  // namespace
}  // namespace egress::leaderelection
