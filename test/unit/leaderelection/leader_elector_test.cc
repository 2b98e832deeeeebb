// Unit tests of LeaderElector on a FakeClock with an in-memory lock (fake_lease_lock.h). Each
// test names the client-go behaviour (tools/leaderelection, and its metrics) it checks, or says
// which deliberate deviation it pins.
#include "pkg/leaderelection/leader_elector.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "test/testutil/fake_time.h"
#include "test/testutil/run_sync.h"
#include "test/unit/leaderelection/fake_lease_lock.h"

namespace egress::leaderelection {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::conflict;
using ::testing::ElementsAre;
using testing::FakeLeaseLock;
using testing::FakeLeaseStore;
using testing::serverError;

constexpr char kName[] = "egress-test";

// The value of `family{name=kName}` in `registry`; -1 if absent.
double metricValue(prometheus::Registry& registry, const std::string& family) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) {
      continue;
    }
    for (const auto& m : f.metric) {
      for (const auto& label : m.label) {
        if (label.name == "name" && label.value == kName) {
          return f.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
        }
      }
    }
  }
  return -1;
}

net::awaitable<void> runElector(LeaderElector* elector, bool* finished) {
  co_await elector->run();
  *finished = true;
}

// An onStoppedLeading whose work stops at once.
net::awaitable<void> noWork() {
  co_return;
}

// An onStoppedLeading whose work takes `d` of fake time to stop.
net::awaitable<void> drainFor(Clock* clock, Clock::Duration d, bool* drained) {
  co_await clock->sleepFor(d);
  *drained = true;
}

struct Candidate {
  std::unique_ptr<FakeLeaseLock> lock;
  std::unique_ptr<LeaderElector> elector;
  // "started", "stopped", "new:<identity>"
  std::vector<std::string> events;
  bool finished = false;
  // The lock's holder when onStoppedLeading ran (release must come after it).
  std::optional<std::string> holderWhenStopped;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  using Tweak = std::function<void(LeaderElectionConfig&)>;

  std::unique_ptr<Candidate> candidate(const std::string& identity, const Tweak& tweak = {}) {
    auto c = std::make_unique<Candidate>();
    c->lock = std::make_unique<FakeLeaseLock>(store_, identity);
    Candidate* raw = c.get();
    LeaderElectionConfig config;
    config.lock = raw->lock.get();
    config.name = kName;
    config.random = [] { return 0.0; };  // retries exactly every retryPeriod unless a test says
    config.callbacks.onStartedLeading = [raw] { raw->events.push_back("started"); };
    config.callbacks.onStoppedLeading = [this, raw] {
      raw->events.push_back("stopped");
      raw->holderWhenStopped = store_.record() ? store_.record()->holderIdentity : "<none>";
      return noWork();
    };
    config.callbacks.onNewLeader = [raw](const std::string& id) {
      raw->events.push_back("new:" + id);
    };
    if (tweak) {
      tweak(config);
    }
    auto elector = LeaderElector::create(clock_, std::move(config), &registry_);
    EXPECT_TRUE(elector) << elector.error();
    c->elector = std::move(*elector);
    return c;
  }

  void start(Candidate& c) {
    net::co_spawn(ioc_, runElector(c.elector.get(), &c.finished), rethrowUnhandled);
    poll();
  }

  void poll() { testutil::pollReady(ioc_); }

  // Moves the fake time to `target`, stopping at every timer deadline on the way so that each
  // wakes at exactly its own time.
  void advanceTo(Clock::TimePoint target) { testutil::advanceFakeClockTo(ioc_, clock_, target); }
  void advance(Clock::Duration d) { advanceTo(clock_.now() + d); }
  void expectAThrowIsAFailedAcquire();
  // Time since the test began.
  Clock::Duration elapsed() const { return clock_.now() - t0_; }

  LeaderElectionRecord otherHolder(const std::string& id, int32_t leaseSeconds,
                                   meta::Time renewTime, int32_t transitions = 0) {
    return {id, leaseSeconds, renewTime, renewTime, transitions};
  }

  net::io_context ioc_;
  FakeClock clock_{ioc_.get_executor()};
  const Clock::TimePoint t0_ = clock_.now();
  FakeLeaseStore store_{ioc_.get_executor(), clock_};
  prometheus::Registry registry_;
};

// Every rejection of NewLeaderElector, in client-go's order and wording.
TEST(LeaderElectionConfigValidation, RejectsWhatClientGoRejects) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  FakeLeaseStore store(ioc.get_executor(), clock);
  FakeLeaseLock lock(store, "me");
  FakeLeaseLock anonymous(store, "");
  auto valid = [&] {
    LeaderElectionConfig c;
    c.lock = &lock;
    c.callbacks.onStartedLeading = [] {};
    c.callbacks.onStoppedLeading = [] { return noWork(); };
    return c;
  };
  auto errorOf = [](const LeaderElectionConfig& c) {
    auto r = validateConfig(c);
    return r ? std::string("ok") : r.error();
  };
  EXPECT_EQ(errorOf(valid()), "ok");

  auto c = valid();
  c.leaseDuration = seconds(10);  // == renewDeadline
  EXPECT_EQ(errorOf(c), "leaseDuration must be greater than renewDeadline");
  c = valid();
  c.renewDeadline = milliseconds(2400);  // == 1.2 * retryPeriod
  c.retryPeriod = seconds(2);
  EXPECT_EQ(errorOf(c), "renewDeadline must be greater than retryPeriod*JitterFactor");
  c.renewDeadline = milliseconds(2401);
  EXPECT_EQ(errorOf(c), "ok");
  c = valid();
  c.leaseDuration = c.renewDeadline = c.retryPeriod = milliseconds(0);
  EXPECT_EQ(errorOf(c), "leaseDuration must be greater than renewDeadline");
  c = valid();
  c.retryPeriod = milliseconds(0);
  EXPECT_EQ(errorOf(c), "retryPeriod must be greater than zero");
  c = valid();
  c.retryPeriod = milliseconds(-5);
  c.renewDeadline = milliseconds(-1);
  c.leaseDuration = milliseconds(1);
  EXPECT_EQ(errorOf(c), "renewDeadline must be greater than zero");
  c = valid();
  c.callbacks.onStartedLeading = nullptr;
  EXPECT_EQ(errorOf(c), "OnStartedLeading callback must not be nil");
  c = valid();
  c.callbacks.onStoppedLeading = nullptr;
  EXPECT_EQ(errorOf(c), "OnStoppedLeading callback must not be nil");
  c = valid();
  c.lock = nullptr;
  EXPECT_EQ(errorOf(c), "Lock must not be nil.");
  c = valid();
  c.lock = &anonymous;
  EXPECT_EQ(errorOf(c), "Lock identity is empty");

  // Deliberate extra check: the whole seconds written to the lease must exceed renewDeadline.
  c = valid();
  c.leaseDuration = milliseconds(4500);
  c.renewDeadline = milliseconds(4200);
  c.retryPeriod = seconds(1);
  EXPECT_EQ(errorOf(c),
            "leaseDuration, written to the lease in whole seconds, must be greater than "
            "renewDeadline");

  auto created = LeaderElector::create(clock, c, nullptr);
  ASSERT_FALSE(created);
  EXPECT_THAT(created.error(), ::testing::HasSubstr("whole seconds"));
}

// The defaults are client-go's core-client defaults.
TEST(LeaderElectionConfigValidation, DefaultsAre15s10s2s) {
  LeaderElectionConfig c;
  EXPECT_EQ(c.leaseDuration, seconds(15));
  EXPECT_EQ(c.renewDeadline, seconds(10));
  EXPECT_EQ(c.retryPeriod, seconds(2));
  EXPECT_FALSE(c.releaseOnCancel);
}

// Leader_election_master_status{name} is 0 from construction, 1 while leading,
// 0 again after.
TEST_F(LeaderElectorTest, MasterStatusGaugeFollowsLeadership) {
  auto a = candidate("a");
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 0);
  start(*a);
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 1);
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 0);
}

// NotFound → Create with LeaderTransitions 0, and what is written.
TEST_F(LeaderElectorTest, CreatesTheLeaseWhenNotFound) {
  auto a = candidate("a");
  const auto wall = clock_.wallNow();
  start(*a);
  ASSERT_TRUE(store_.record());
  const auto& r = *store_.record();
  EXPECT_EQ(r.holderIdentity, "a");
  EXPECT_EQ(r.leaseDurationSeconds, 15);
  EXPECT_EQ(r.acquireTime, wall);
  EXPECT_EQ(r.renewTime, wall);
  EXPECT_EQ(r.leaderTransitions, 0);
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(a->elector->getLeader(), "a");
  EXPECT_THAT(a->events, ElementsAre("new:a", "started"));
  EXPECT_EQ(store_.count("get"), 1u);
  EXPECT_EQ(store_.count("create"), 1u);
}

// Renew every RetryPeriod, on the fast path: one Update, no Get, keeping AcquireTime and
// LeaderTransitions.
TEST_F(LeaderElectorTest, RenewsOnTheFastPathKeepingAcquireTimeAndTransitions) {
  auto a = candidate("a");
  const auto acquired = clock_.wallNow();
  start(*a);
  for (int i = 1; i <= 5; ++i) {
    advance(seconds(2));
    EXPECT_EQ(store_.count("update"), static_cast<size_t>(i)) << "renewal " << i;
    EXPECT_EQ(store_.record()->renewTime, clock_.wallNow());
  }
  EXPECT_EQ(store_.count("get"), 1u);  // only the first acquire
  EXPECT_EQ(store_.record()->acquireTime, acquired);
  EXPECT_EQ(store_.record()->leaderTransitions, 0);
  EXPECT_EQ(metricValue(registry_, "leader_election_slowpath_total"), 0);
  EXPECT_TRUE(a->elector->isLeader());
}

// A failed optimistic Update falls through to the slow path, whose renewal keeps
// AcquireTime/LeaderTransitions and counts leader_election_slowpath_total.
TEST_F(LeaderElectorTest, FastPathConflictFallsBackToTheSlowPath) {
  auto a = candidate("a");
  start(*a);
  store_.touch();  // someone changed the object (not the record): our version is stale
  advance(seconds(2));
  EXPECT_EQ(store_.count("update"), 2u);  // conflict, then the slow-path write
  EXPECT_EQ(store_.count("get"), 2u);
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->holderIdentity, "a");
  EXPECT_EQ(store_.record()->leaderTransitions, 0);
  EXPECT_EQ(metricValue(registry_, "leader_election_slowpath_total"), 1);
}

// A new candidate waits a full LeaseDuration from ITS OWN first
// observation of the record, although the record's renewTime is 30 years old; then it takes
// over with LeaderTransitions + 1.
TEST_F(LeaderElectorTest, WaitsAFullLeaseDurationFromItsOwnObservation) {
  store_.setRecord(otherHolder("other", 15, clock_.wallNow() - hours(24 * 365 * 30), 2));
  auto a = candidate("a");
  start(*a);
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_THAT(a->events, ElementsAre("new:other"));
  // Attempts every 2 s (random 0): at 14 s the lease observed at 0 s is still valid; the next
  // attempt is when it expires, at 15 s.
  advanceTo(t0_ + milliseconds(14'999));
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_EQ(store_.count("get"), 8u);
  EXPECT_EQ(store_.count("update"), 0u);
  advanceTo(t0_ + seconds(15));
  ASSERT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->holderIdentity, "a");
  EXPECT_EQ(store_.record()->leaderTransitions, 3);
  EXPECT_EQ(store_.record()->acquireTime, clock_.wallNow());
  EXPECT_THAT(a->events, ElementsAre("new:other", "new:a", "started"));
}

// The remote renewTime is never compared with the local clock. A holder whose clock is
// decades behind keeps the lease as long as its record keeps changing; one whose renewTime is
// far in the future loses it a LeaseDuration after it stops changing.
TEST_F(LeaderElectorTest, ClockSkewInTheRemoteRenewTimeIsIgnored) {
  const auto skewedPast = clock_.wallNow() - hours(24 * 365 * 36);  // 1990-ish
  store_.setRecord(otherHolder("behind", 15, skewedPast));
  auto a = candidate("a");
  start(*a);
  // "behind" renews every 3 s, writing renewTimes 36 years old: a must never take over.
  for (int i = 1; i <= 20; ++i) {
    advance(seconds(3));
    store_.setRecord(otherHolder("behind", 15, skewedPast + seconds(3 * i)));
    ASSERT_FALSE(a->elector->isLeader()) << "at " << 3 * i << " s";
  }
  // The last record is written at 60 s and first read at 62 s, so it stays valid until 77 s,
  // when a attempts again and takes over.
  advanceTo(t0_ + milliseconds(76'999));
  EXPECT_FALSE(a->elector->isLeader());
  advanceTo(t0_ + seconds(77));
  EXPECT_TRUE(a->elector->isLeader());
}

// A holder whose clock runs 75 years ahead gains nothing either: its lease is taken a
// LeaseDuration after this candidate first saw it.
TEST_F(LeaderElectorTest, RenewTimeFarInTheFutureDoesNotExtendTheLease) {
  store_.setRecord(otherHolder("ahead", 15, clock_.wallNow() + hours(24 * 365 * 75)));
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + milliseconds(14'999));
  EXPECT_FALSE(a->elector->isLeader());
  advanceTo(t0_ + seconds(15));
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->leaderTransitions, 1);
}

// Last bullet: the duration is the HOLDER's leaseDurationSeconds from the record.
TEST_F(LeaderElectorTest, UsesTheHoldersLeaseDurationSeconds) {
  store_.setRecord(otherHolder("slow", 60, clock_.wallNow()));
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + milliseconds(59'999));
  EXPECT_FALSE(a->elector->isLeader());
  advanceTo(t0_ + seconds(60));  // the attempt at expiry
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->leaseDurationSeconds, 15);  // ours from now on
}

// An empty holder (a released lease) is taken at once.
TEST_F(LeaderElectorTest, ReleasedLeaseIsTakenImmediately) {
  LeaderElectionRecord released{"", 1, clock_.wallNow(), clock_.wallNow(), 4};
  store_.setRecord(released);
  auto a = candidate("a");
  start(*a);
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->leaderTransitions, 5);
  EXPECT_EQ(elapsed(), Clock::Duration::zero());
}

// Deliberate deviation: client-go spaces acquire retries by Jitter(RetryPeriod, 1.2) =
// RetryPeriod * (1 + r * 1.2); ours by RetryPeriod * (1 - r * 0.2), never longer than RetryPeriod,
// so a waiting candidate sees a renewal (or a release) within one RetryPeriod.
TEST_F(LeaderElectorTest, AcquireRetriesAreJitteredDownward) {
  store_.setRecord(otherHolder("other", 15, clock_.wallNow()));
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.random = [] { return 0.5; }; });
  start(*a);
  advance(seconds(10));
  std::vector<Clock::Duration> at;
  for (const auto& call : store_.calls()) {
    at.push_back(call.at - t0_);
  }
  // 2 s * (1 - 0.5 * 0.2) = 1.8 s apart.
  EXPECT_THAT(at, ElementsAre(milliseconds(0), milliseconds(1800), milliseconds(3600),
                              milliseconds(5400), milliseconds(7200), milliseconds(9000)));
}

// With the deviation above: the candidate also attempts exactly when the lease it
// observed expires (15 s after it first saw the record), not at its next periodic retry (16.2 s).
TEST_F(LeaderElectorTest, CandidateAttemptsExactlyWhenTheObservedLeaseExpires) {
  store_.setRecord(otherHolder("other", 15, clock_.wallNow()));
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.random = [] { return 0.5; }; });
  start(*a);
  advanceTo(t0_ + milliseconds(14'999));
  EXPECT_FALSE(a->elector->isLeader());
  advanceTo(t0_ + seconds(15));
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->holderIdentity, "a");
  EXPECT_EQ(store_.calls().back().at - t0_, seconds(15));
}

// When renewals fail for RenewDeadline the leader stops (metric off, OnStoppedLeading),
// and run() returns and never campaigns again. Deliberate: the deadline counts from the
// start of the last successful renewal (here 2 s), so leadership ends at 12 s.
TEST_F(LeaderElectorTest, GivesUpWhenRenewalsFailForRenewDeadline) {
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + seconds(2));  // one good renewal
  ASSERT_EQ(store_.count("update"), 1u);
  for (int i = 0; i < 100; ++i) {
    store_.getErrors.push_back(serverError());
    store_.updateErrors.push_back(serverError());
  }
  advanceTo(t0_ + milliseconds(11'999));
  EXPECT_TRUE(a->elector->isLeader());
  advanceTo(t0_ + seconds(12));
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 0);
  EXPECT_THAT(a->events, ElementsAre("new:a", "started", "stopped"));
  const size_t calls = store_.calls().size();
  advance(seconds(60));
  EXPECT_EQ(store_.calls().size(), calls);          // never campaigns again
  EXPECT_EQ(store_.record()->holderIdentity, "a");  // no releaseOnCancel: not released
}

// Deliberate deviation: a renewal request that hangs does not extend leadership past the
// deadline. At the deadline it is cancelled (client-go's renewal runs under a RenewDeadline
// context), so run() returns then instead of when the request would have ended on its own: a
// renewal sent into a network partition used to keep the deposed leader's process alive until
// the partition healed.
TEST_F(LeaderElectorTest, HungRenewalIsCancelledAtTheDeadline) {
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + seconds(2));
  store_.hangUpdates = true;
  advanceTo(t0_ + milliseconds(11'999));
  EXPECT_TRUE(a->elector->isLeader());
  EXPECT_FALSE(a->finished);
  EXPECT_EQ(store_.count("update"), 2u);  // the one hanging since 4 s
  advanceTo(t0_ + seconds(12));
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_THAT(a->events, ElementsAre("new:a", "started", "stopped"));
  EXPECT_TRUE(a->finished);  // the hung request was cancelled, not waited for
  EXPECT_EQ(store_.count("update"), 2u);
  EXPECT_EQ(store_.record()->holderIdentity, "a");  // nothing was written after the deadline
}

// A request that hangs through a stop() is not cancelled: it may be the one that makes this
// candidate holder, which release() has to know. run() waits for it.
TEST_F(LeaderElectorTest, HungAcquireIsWaitedForAfterStop) {
  store_.hangGets = true;
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + seconds(30));
  EXPECT_FALSE(a->finished);
  a->elector->stop();
  poll();
  EXPECT_FALSE(a->finished);
  store_.releaseHung();
  poll();
  EXPECT_TRUE(a->finished);
}

// Deliberate deviation: seeing another holder in the lock ends leadership at once instead of
// after RenewDeadline (client-go keeps calling itself leader until then).
TEST_F(LeaderElectorTest, AnotherHolderInTheLockEndsLeadershipAtOnce) {
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + seconds(3));
  store_.setRecord(otherHolder("usurper", 15, clock_.wallNow(), 1));
  advanceTo(t0_ + milliseconds(3'999));
  EXPECT_TRUE(a->elector->isLeader());
  advanceTo(t0_ + seconds(4));  // next renewal: conflict, then the slow path sees "usurper"
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(a->elector->getLeader(), "usurper");
  EXPECT_THAT(a->events, ElementsAre("new:a", "started", "new:usurper", "stopped"));
}

// TestReleaseLeaseLeases, TestReleaseOnCancellation_Leases: with ReleaseOnCancel,
// stopping writes holder "", leaseDurationSeconds 1, the transitions kept. Deliberate: the work
// is told to stop (onStoppedLeading) BEFORE the lease is given away.
TEST_F(LeaderElectorTest, ReleaseOnCancelWritesAnEmptyHolderKeepingTransitions) {
  store_.setRecord(LeaderElectionRecord{"", 1, clock_.wallNow(), clock_.wallNow(), 6});
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  ASSERT_TRUE(a->elector->isLeader());
  advanceTo(t0_ + seconds(5));
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  ASSERT_TRUE(store_.record());
  const auto& r = *store_.record();
  EXPECT_EQ(r.holderIdentity, "");
  EXPECT_EQ(r.leaseDurationSeconds, 1);
  EXPECT_EQ(r.leaderTransitions, 7);
  EXPECT_EQ(r.renewTime, clock_.wallNow());
  EXPECT_EQ(r.acquireTime, clock_.wallNow());
  EXPECT_EQ(a->holderWhenStopped, "a");  // onStoppedLeading ran while we still held it
  EXPECT_THAT(a->events, ElementsAre("new:a", "started", "stopped"));
  EXPECT_EQ(a->elector->getLeader(), "");
}

// TestReleaseRetriesOnConflict: release retries after a Conflict.
TEST_F(LeaderElectorTest, ReleaseRetriesOnConflict) {
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  store_.updateErrors.push_back(conflict());
  const size_t before = store_.calls().size();
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  std::vector<std::string> verbs;
  for (size_t i = before; i < store_.calls().size(); ++i) {
    verbs.push_back(store_.calls()[i].verb);
  }
  EXPECT_THAT(verbs, ElementsAre("get", "update", "get", "update"));
  EXPECT_EQ(store_.record()->holderIdentity, "");
}

// Without ReleaseOnCancel the lease is left to expire.
TEST_F(LeaderElectorTest, NoReleaseWithoutReleaseOnCancel) {
  auto a = candidate("a");
  start(*a);
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(store_.record()->holderIdentity, "a");
  EXPECT_EQ(store_.count("update"), 0u);
}

// Deliberate deviation in release: holding is judged from the record just read, so a leader
// that lost the lease never blanks its successor's record.
TEST_F(LeaderElectorTest, ReleaseNeverBlanksASuccessorsRecord) {
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  store_.setRecord(otherHolder("successor", 15, clock_.wallNow(), 1));
  advance(seconds(2));
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(store_.record()->holderIdentity, "successor");
}

// OnStoppedLeading is called even by a candidate that never led.
TEST_F(LeaderElectorTest, OnStoppedLeadingIsCalledEvenIfNeverLed) {
  store_.setRecord(otherHolder("other", 15, clock_.wallNow()));
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  advance(seconds(3));
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_THAT(a->events, ElementsAre("new:other", "stopped"));
  EXPECT_EQ(store_.record()->holderIdentity, "other");  // nothing of ours to release
}

// stop() while an acquire request is in flight: run() waits for it, and with ReleaseOnCancel a
// lease that request won is released rather than left to expire.
TEST_F(LeaderElectorTest, StopDuringAnInflightAcquireReleasesWhatItWon) {
  store_.setRecord(LeaderElectionRecord{"", 1, clock_.wallNow(), clock_.wallNow(), 0});
  store_.hangGets = true;
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  a->elector->stop();
  poll();
  EXPECT_FALSE(a->finished);
  EXPECT_THAT(a->events, ElementsAre("stopped"));
  store_.releaseHung();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_EQ(store_.record()->holderIdentity, "");
  EXPECT_EQ(store_.record()->leaderTransitions, 1);  // it did win once, then gave it back
  EXPECT_THAT(a->events, ElementsAre("stopped"));    // but never started leading
}

// OnNewLeader on the first observation and on every change of holder.
TEST_F(LeaderElectorTest, OnNewLeaderReportsEveryObservedChangeOfHolder) {
  store_.setRecord(otherHolder("x", 15, clock_.wallNow()));
  auto a = candidate("a");
  start(*a);
  advanceTo(t0_ + seconds(2));
  store_.setRecord(otherHolder("y", 15, clock_.wallNow(), 1));
  advanceTo(t0_ + seconds(4));
  advanceTo(t0_ + seconds(20));  // y, first seen at 2 s or later, expires by 17 s + 2 s
  EXPECT_THAT(a->events, ElementsAre("new:x", "new:y", "new:a", "started"));
}

// Two candidates on one lock: never two leaders; the leader keeps the lease while it renews;
// after its graceful stop (release) the other takes over within one RetryPeriod.
TEST_F(LeaderElectorTest, TwoCandidatesNeverLeadAtOnce) {
  auto a = candidate("a", [](LeaderElectionConfig& c) {
    c.releaseOnCancel = true;
    c.random = [] { return 0.3; };
  });
  auto b = candidate("b", [](LeaderElectionConfig& c) {
    c.releaseOnCancel = true;
    c.random = [] { return 0.9; };
  });
  start(*a);
  start(*b);
  ASSERT_TRUE(a->elector->isLeader());
  for (int i = 0; i < 600; ++i) {
    advance(milliseconds(100));
    ASSERT_FALSE(a->elector->isLeader() && b->elector->isLeader()) << "at step " << i;
    ASSERT_TRUE(a->elector->isLeader()) << "at step " << i;
  }
  const auto stoppedAt = clock_.now();
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_FALSE(a->elector->isLeader());
  while (!b->elector->isLeader() && clock_.now() - stoppedAt < seconds(10)) {
    advance(milliseconds(100));
  }
  ASSERT_TRUE(b->elector->isLeader());
  // b retries every 2 s * (1 - 0.9 * 0.2) = 1.64 s: within one RetryPeriod of the release.
  EXPECT_LE(clock_.now() - stoppedAt, seconds(2));
  EXPECT_EQ(store_.record()->holderIdentity, "b");
  EXPECT_EQ(store_.record()->leaderTransitions, 1);
  b->elector->stop();
  poll();
  EXPECT_TRUE(b->finished);
}

// A lost race on create (both saw NotFound) is a plain failed attempt; the loser retries and
// then follows.
TEST_F(LeaderElectorTest, LosingTheCreateRaceMeansFollowing) {
  store_.createErrors.push_back(testing::alreadyExists());
  auto a = candidate("a");
  start(*a);
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_FALSE(store_.record());
  store_.setRecord(otherHolder("winner", 15, clock_.wallNow()));
  advance(seconds(2));
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_EQ(a->elector->getLeader(), "winner");
}

// Run() is single-shot; a second call returns at once.
TEST_F(LeaderElectorTest, RunCampaignsOnce) {
  auto a = candidate("a");
  start(*a);
  a->elector->stop();
  poll();
  ASSERT_TRUE(a->finished);
  bool again = false;
  net::co_spawn(ioc_, runElector(a->elector.get(), &again), rethrowUnhandled);
  poll();
  EXPECT_TRUE(again);
  EXPECT_EQ(store_.count("get"), 1u);
}

// A lock operation that throws is a failed attempt, like one that returns an
// error: the candidate retries after retryPeriod and stop() still ends run().
void LeaderElectorTest::expectAThrowIsAFailedAcquire() {
  auto a = candidate("a");
  start(*a);
  EXPECT_FALSE(a->elector->isLeader());
  advance(seconds(2));
  EXPECT_TRUE(a->elector->isLeader());
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
}

TEST_F(LeaderElectorTest, ThrowingGetIsAFailedAttempt) {
  store_.getThrows = 1;
  expectAThrowIsAFailedAcquire();
}

TEST_F(LeaderElectorTest, ThrowingCreateIsAFailedAttempt) {
  store_.createThrows = 1;
  expectAThrowIsAFailedAcquire();
}

// Item 9: a renewal whose update throws is a failed renewal: the next one follows a retryPeriod
// after it began; when they all throw, leadership ends at the renew deadline and run() returns.
TEST_F(LeaderElectorTest, ThrowingUpdatesAreFailedRenewals) {
  auto a = candidate("a");
  start(*a);
  store_.updateThrows = 1;
  advanceTo(t0_ + seconds(2));
  EXPECT_EQ(store_.count("update"), 1u);
  advanceTo(t0_ + seconds(4));
  EXPECT_EQ(store_.count("update"), 2u);
  EXPECT_EQ(store_.record()->renewTime, clock_.wallNow());
  store_.updateThrows = 1000;
  store_.getThrows = 1000;
  advanceTo(t0_ + milliseconds(13'999));
  EXPECT_TRUE(a->elector->isLeader());
  advanceTo(t0_ + seconds(14));
  EXPECT_FALSE(a->elector->isLeader());
  EXPECT_TRUE(a->finished);
  EXPECT_THAT(a->events, ElementsAre("new:a", "started", "stopped"));
}

// Item 9: a release whose update throws ends run() at once; the lease is left to expire.
TEST_F(LeaderElectorTest, ThrowingReleaseEndsRun) {
  auto a = candidate("a", [](LeaderElectionConfig& c) { c.releaseOnCancel = true; });
  start(*a);
  store_.updateThrows = 1;
  a->elector->stop();
  poll();
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(store_.record()->holderIdentity, "a");
}

// The lease is released only once the work it guards has stopped: the release
// update is not issued while onStoppedLeading is still suspended (its work takes 1 s of fake
// time to drain), and is right after it completed.
TEST_F(LeaderElectorTest, ReleaseWaitsForTheGuardedWorkToDrain) {
  bool drained = false;
  auto a = candidate("a", [this, &drained](LeaderElectionConfig& c) {
    c.releaseOnCancel = true;
    c.callbacks.onStoppedLeading = [this, &drained] {
      return drainFor(&clock_, seconds(1), &drained);
    };
  });
  start(*a);
  ASSERT_TRUE(a->elector->isLeader());
  a->elector->stop();
  poll();
  EXPECT_FALSE(drained);
  EXPECT_EQ(store_.record()->holderIdentity, "a") << "released while the work still ran";
  EXPECT_EQ(store_.count("update"), 0u);
  EXPECT_FALSE(a->finished);
  advance(milliseconds(999));
  EXPECT_EQ(store_.count("update"), 0u);
  advance(milliseconds(1));
  EXPECT_TRUE(drained);
  EXPECT_EQ(store_.record()->holderIdentity, "");
  EXPECT_EQ(store_.calls().back().at - t0_, seconds(1));
  EXPECT_TRUE(a->finished);
}

// A graceful stop() keeps the lease renewed while the guarded work drains, however long the
// drain takes: the lease must not expire under reconciles that still write (controller-runtime
// cancels its leader-election context only after its runnables have stopped). A successor takes
// over only after the drain and the release.
TEST_F(LeaderElectorTest, GracefulStopKeepsRenewingWhileTheWorkDrains) {
  bool drained = false;
  auto a = candidate("a", [this, &drained](LeaderElectionConfig& c) {
    c.releaseOnCancel = true;
    c.callbacks.onStoppedLeading = [this, &drained] {
      return drainFor(&clock_, seconds(40), &drained);
    };
  });
  start(*a);
  ASSERT_TRUE(a->elector->isLeader());
  // b reports under its own name: leader_election_master_status{name=kName} is a's.
  auto b = candidate("b", [](LeaderElectionConfig& c) { c.name = "b"; });
  start(*b);
  a->elector->stop();
  poll();
  // 40 s of drain is far past the 15 s lease: without renewals b would lead at about 15 s.
  for (int i = 0; i < 39; ++i) {
    advance(seconds(1));
    ASSERT_FALSE(drained);
    ASSERT_FALSE(b->elector->isLeader()) << "b took over " << i + 1 << " s into a's drain";
    ASSERT_EQ(store_.record()->holderIdentity, "a");
  }
  EXPECT_GE(store_.count("update", "a"), 19u) << "a renewed every retryPeriod while draining";
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 1);
  advance(seconds(1));
  EXPECT_TRUE(drained);
  EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 0);
  EXPECT_TRUE(a->finished);
  advance(seconds(2));
  EXPECT_TRUE(b->elector->isLeader()) << "released at the end of the drain";
}

// Destroying the elector while the io_context runs is safe in every state (a
// request in flight while acquiring, renewing or releasing; waiting for its next attempt; inside
// onStoppedLeading): its coroutines touch no freed memory (ASan), start no further lock request,
// call no callback, and run() still returns once the request in flight completed.
TEST_F(LeaderElectorTest, DestroyedWhileRunning) {
  enum class When { Acquiring, Renewing, Releasing, Waiting, Draining };
  for (const When when :
       {When::Acquiring, When::Renewing, When::Releasing, When::Waiting, When::Draining}) {
    SCOPED_TRACE(static_cast<int>(when));
    FakeLeaseStore store(ioc_.get_executor(), clock_);
    auto lock = std::make_unique<FakeLeaseLock>(store, "a");
    std::vector<std::string> events;
    LeaderElectionConfig config;
    config.lock = lock.get();
    config.name = kName;
    config.releaseOnCancel = true;
    config.random = [] { return 0.0; };
    config.callbacks.onStartedLeading = [&events] { events.push_back("started"); };
    bool drained = false;
    config.callbacks.onStoppedLeading = [this, &events, &drained] {
      events.push_back("stopped");
      return drainFor(&clock_, seconds(1), &drained);
    };
    if (when == When::Waiting) {
      store.setRecord(otherHolder("other", 15, clock_.wallNow()));
    }
    store.hangGets = when == When::Acquiring;
    auto created = LeaderElector::create(clock_, std::move(config), &registry_);
    ASSERT_TRUE(created);
    std::unique_ptr<LeaderElector> elector = std::move(*created);
    bool finished = false;
    net::co_spawn(ioc_, runElector(elector.get(), &finished), rethrowUnhandled);
    poll();
    if (when == When::Renewing) {
      store.hangUpdates = true;
      advance(seconds(2));
    } else if (when == When::Releasing) {
      store.hangUpdates = true;
      elector->stop();
      advance(seconds(1));  // the drain, then the release: get, and the update hangs
      ASSERT_EQ(store.count("update"), 1u);
    } else if (when == When::Draining) {
      elector->stop();
      poll();
      ASSERT_FALSE(drained);
    }
    const auto eventsBefore = events;
    const size_t callsBefore = store.calls().size();
    elector.reset();
    poll();
    store.releaseHung();
    advance(seconds(60));
    EXPECT_TRUE(finished);
    EXPECT_EQ(events, eventsBefore);
    EXPECT_EQ(store.calls().size(), callsBefore) << "no request after the one in flight";
    EXPECT_EQ(metricValue(registry_, "leader_election_master_status"), 0);
    EXPECT_EQ(drained, when == When::Releasing || when == When::Draining);
  }
}

}  // namespace
}  // namespace egress::leaderelection
