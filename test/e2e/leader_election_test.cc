// End-to-end test of pkg/leaderelection with real processes against the real control plane:
// candidates are elector_process children (posix_spawn) contending for one Lease with short
// timings. It checks the safety property at every sample (never two processes doing guarded work,
// leading or still draining, and the Lease names the one that leads) and measures the two
// handovers: after the leader is SIGKILLed (the lease must expire) and after it is SIGTERMed (the
// lease is released, but only once the work it guarded has drained). Numbers are printed so they
// can be quoted.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "pkg/leaderelection/kube_lease_lock.h"
#include "test/e2e/testenv/child_process.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"
#include "test/testutil/temp_dir.h"
#include <signal.h>
#include <sys/wait.h>

namespace egress::leaderelection {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testenv::controlPlane;

constexpr auto kLeaseDuration = 4s;
constexpr auto kRenewDeadline = 3s;
constexpr auto kRetryPeriod = 1s;
// How long each candidate's guarded work takes to stop after it stopped leading (its
// onStoppedLeading hook); shorter than leaseDuration - retryPeriod, so the lease it no longer
// renews meanwhile is still valid when it releases it.
constexpr auto kDrain = 1500ms;
// Request latency on a shared 2-core machine and the 20 ms status sampling: the only slack the
// takeover bounds get.
constexpr auto kSlack = 250ms;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct Status {
  std::string state;  // "leader", "draining" (its work is still stopping) or "follower"
  Clock::time_point since;
};

std::optional<Status> readStatus(const std::string& path) {
  std::ifstream in(path);
  std::string state;
  long long ns = 0;
  if (!(in >> state >> ns)) {
    return std::nullopt;
  }
  return Status{state, Clock::time_point(std::chrono::nanoseconds(ns))};
}

// One elector_process child. Killed (SIGKILL) and reaped on destruction if still running.
class Candidate {
 public:
  Candidate(const std::string& dir, const std::string& identity, const std::string& lease)
      : identity_(identity),
        statusFile_(dir + "/" + identity + ".status"),
        process_(
            {
                EGRESS_ELECTOR_PROCESS,
                "--kubeconfig=" + controlPlane().kubeconfig(),
                "--namespace=default",
                "--lease=" + lease,
                "--identity=" + identity,
                "--lease-duration=4s",
                "--renew-deadline=3s",
                "--retry-period=1s",
                "--drain=" + std::to_string(std::chrono::milliseconds(kDrain).count()) + "ms",
                "--status-file=" + statusFile_,
            },
            dir + "/" + identity + ".log") {
    if (!process_.error().empty()) {
      ADD_FAILURE() << process_.error();
    }
  }

  const std::string& identity() const { return identity_; }
  bool running() const { return process_.running(); }
  std::optional<Status> status() const { return readStatus(statusFile_); }
  // True if running and its status file says leader.
  bool believesItLeads() const {
    auto s = status();
    return running() && s && s->state == "leader";
  }
  // True if running and leading, or still stopping the work it did as leader.
  bool works() const {
    auto s = status();
    return running() && s && s->state != "follower";
  }
  void signal(int sig) const { process_.signal(sig); }
  // Waits up to `timeout` for the process to exit; its wait status, if it did.
  std::optional<int> reap(Clock::duration timeout) { return process_.reap(timeout); }
  std::string log() const { return process_.log(); }

 private:
  std::string identity_;
  std::string statusFile_;
  testenv::ChildProcess process_;
};

class LeaderElectionE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    std::random_device rd;
    lease_ = "le-e2e-" + std::to_string(rd() % 1000000);

    kube::KubeconfigOptions options;
    options.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(options);
    ASSERT_TRUE(config) << config.error().message();
    config->qps = 100;
    config->burst = 200;
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    observer_ = std::make_unique<KubeLeaseLock>(*client_, "default", lease_, "observer");
  }

  void TearDown() override {
    for (auto* c : all_) {
      if (::testing::Test::HasFailure() && c != nullptr) {
        std::printf("---- log of %s ----\n%s", c->identity().c_str(), c->log().c_str());
      }
    }
    candidates_.clear();  // before tmp_ goes: they write their status files there
  }

  Candidate& spawn(const std::string& identity) {
    candidates_.push_back(std::make_unique<Candidate>(dir_, identity, lease_));
    all_.push_back(candidates_.back().get());
    return *candidates_.back();
  }

  // The Lease as the API server has it now.
  std::optional<LeaderElectionRecord> leaseRecord() {
    auto got = testutil::runSync(ioc_, observer_->get());
    if (!got) {
      return std::nullopt;
    }
    return got->record;
  }

  // Every candidate for which `pred` holds.
  std::vector<Candidate*> select(bool (Candidate::*pred)() const) {
    std::vector<Candidate*> out;
    for (auto& c : candidates_) {
      if (((*c).*pred)()) {
        out.push_back(c.get());
      }
    }
    return out;
  }
  // Every running candidate that believes it leads.
  std::vector<Candidate*> leaders() { return select(&Candidate::believesItLeads); }
  // Every running candidate doing guarded work: leading or draining.
  std::vector<Candidate*> workers() { return select(&Candidate::works); }

  // One sample of the safety property: at most one candidate does guarded work (leads, or still
  // drains what it did as leader); and when the leader is the same before and after reading the
  // Lease, the Lease names it.
  void checkSample(const char* phase) {
    auto working = workers();
    ASSERT_LE(working.size(), 1u) << phase << ": " << working[0]->identity() << " and "
                                  << working[1]->identity() << " both work";
    auto before = leaders();
    auto record = leaseRecord();
    auto after = leaders();
    ASSERT_LE(workers().size(), 1u) << phase << ": two workers";
    ++samples_;
    if (before.size() == 1 && after == before) {
      ASSERT_TRUE(record) << phase << ": no Lease while " << before[0]->identity() << " leads";
      ASSERT_EQ(record->holderIdentity, before[0]->identity())
          << phase << ": " << before[0]->identity() << " believes it leads but the Lease says "
          << record->holderIdentity;
      ++checkedHolder_;
    }
  }

  // Samples every `interval` until `c` leads or `timeout` passes; true if it leads.
  bool sampleUntilLeads(Candidate& c, Clock::duration timeout, const char* phase,
                        Clock::duration interval = 20ms) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      checkSample(phase);
      if (::testing::Test::HasFatalFailure()) {
        return false;
      }
      if (c.believesItLeads()) {
        return true;
      }
      std::this_thread::sleep_for(interval);
    }
    return c.believesItLeads();
  }

  net::io_context ioc_;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<KubeLeaseLock> observer_;
  testutil::TempDir tmp_{"leader-election-e2e"};
  std::string dir_;
  std::string lease_;
  std::vector<std::unique_ptr<Candidate>> candidates_;
  std::vector<Candidate*> all_;
  int samples_ = 0;
  int checkedHolder_ = 0;
};

// client-go's leader election end to end: one leader at a time (sampled every 100 ms for 10 s,
// then every 20 ms through both handovers), takeover after SIGKILL within leaseDuration +
// retryPeriod, and after SIGTERM (graceful: ReleaseOnCancel) only once the old leader's work
// drained, then within retryPeriod + 1 s because a released lease is taken at once.
TEST_F(LeaderElectionE2E, OneLeaderAtATimeAcrossKillAndGracefulHandover) {
  Candidate& a = spawn("a");
  Candidate& b = spawn("b");

  // Someone leads within a few seconds of start (the first to create the Lease).
  const auto start = Clock::now();
  Candidate* leader = nullptr;
  while (leader == nullptr && Clock::now() - start < 30s) {
    checkSample("startup");
    ASSERT_FALSE(HasFatalFailure());
    auto l = leaders();
    leader = l.empty() ? nullptr : l.front();
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(leader, nullptr) << "nobody became leader within 30 s";
  std::printf("[leader-election] first leader: %s after %.3f s from spawn\n",
              leader->identity().c_str(), seconds(leader->status()->since - start));

  // Steady state: every 100 ms for 10 s.
  std::map<std::string, int> leadSamples;
  for (int i = 0; i < 100; ++i) {
    checkSample("steady");
    ASSERT_FALSE(HasFatalFailure());
    auto l = leaders();
    leadSamples[l.empty() ? "<none>" : l.front()->identity()]++;
    std::this_thread::sleep_for(100ms);
  }
  std::printf("[leader-election] steady 10 s: %d samples led by a, %d by b, %d leaderless\n",
              leadSamples["a"], leadSamples["b"], leadSamples["<none>"]);
  auto l = leaders();
  ASSERT_EQ(l.size(), 1u) << "no leader at the end of the steady phase";
  leader = l.front();
  Candidate& survivor = leader == &a ? b : a;
  auto before = leaseRecord();
  ASSERT_TRUE(before);

  // The leader dies without releasing: SIGSTOP freezes it (a hung process), and once requests it
  // had in flight have landed, the Lease read holds its last renewal; then SIGKILL. The survivor
  // takes over only when the record has not changed for leaseDuration as measured by ITS clock
  // from when IT saw the last change. It sees that change at its next attempt (less than one
  // retryPeriod later: our candidates never wait longer) and attempts again exactly when the
  // lease it saw expires: the bound is leaseDuration + retryPeriod from the last renewal.
  const auto frozenAt = Clock::now();
  leader->signal(SIGSTOP);
  std::this_thread::sleep_for(300ms);  // let a request already sent reach the server
  auto lastRenewal = leaseRecord();
  ASSERT_TRUE(lastRenewal);
  ASSERT_EQ(lastRenewal->holderIdentity, leader->identity());
  leader->signal(SIGKILL);
  ASSERT_TRUE(leader->reap(5s));
  const auto killBound = kLeaseDuration + kRetryPeriod + kSlack;
  ASSERT_TRUE(sampleUntilLeads(survivor, killBound + 5s, "after SIGKILL"))
      << survivor.identity() << " did not take over";
  const auto killTakeover = survivor.status()->since - frozenAt;
  auto afterKill = leaseRecord();
  ASSERT_TRUE(afterKill);
  // Wall clock, both written on this machine: the survivor's acquireTime (taken when its
  // successful attempt began) against the dead leader's last renewTime (taken before that
  // renewal was sent, so no later than when the survivor can have seen it).
  const auto waited = afterKill->acquireTime - lastRenewal->renewTime;
  std::printf(
      "[leader-election] SIGKILL %s -> %s leads after %.3f s (leaseDuration %.0f s, "
      "retryPeriod %.0f s, bound %.1f s); its acquireTime is %.3f s after the last "
      "renewTime\n",
      leader->identity().c_str(), survivor.identity().c_str(), seconds(killTakeover),
      seconds(kLeaseDuration), seconds(kRetryPeriod), seconds(killBound),
      std::chrono::duration<double>(waited).count());
  EXPECT_LE(killTakeover, killBound);
  // Safety: never before the lease it last saw renewed can have expired.
  EXPECT_GE(waited, kLeaseDuration);
  EXPECT_EQ(afterKill->holderIdentity, survivor.identity());
  EXPECT_EQ(afterKill->leaderTransitions, before->leaderTransitions + 1);

  // Restart the killed one as a fresh process and let it settle into its acquire loop.
  Candidate& restarted = spawn(leader->identity() + "2");
  const auto restartDeadline = Clock::now() + 10s;
  while (!restarted.status() && Clock::now() < restartDeadline) {
    checkSample("restart");
    ASSERT_FALSE(HasFatalFailure());
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(restarted.status()) << restarted.log();
  for (int i = 0; i < 30; ++i) {  // 3 s: it has read the Lease and follows
    checkSample("follower settles");
    ASSERT_FALSE(HasFatalFailure());
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(survivor.believesItLeads());
  ASSERT_FALSE(restarted.believesItLeads());

  // SIGTERM the leader: it stops leading, drains its work for kDrain, only then releases the
  // lease (empty holder) and exits 0; the restarted candidate takes the released lease at its
  // next attempt.
  const auto termAt = Clock::now();
  survivor.signal(SIGTERM);
  const auto termBound = kDrain + kRetryPeriod + 1s;
  ASSERT_TRUE(sampleUntilLeads(restarted, termBound + 5s, "after SIGTERM"))
      << restarted.identity() << " did not take over";
  const auto termTakeover = restarted.status()->since - termAt;
  auto exited = survivor.reap(10s);
  ASSERT_TRUE(exited) << survivor.identity() << " did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 0) << "wait status " << *exited;
  // Its "follower" line, written when the drain ended, before the release.
  const auto drainedAt = survivor.status()->since;
  std::printf(
      "[leader-election] SIGTERM %s -> its work drained after %.3f s (drain %.1f s); %s leads "
      "after %.3f s (bound %.1f s = drain + retryPeriod + 1 s)\n",
      survivor.identity().c_str(), seconds(drainedAt - termAt), seconds(kDrain),
      restarted.identity().c_str(), seconds(termTakeover), seconds(termBound));
  EXPECT_LE(termTakeover, termBound);
  EXPECT_GE(drainedAt - termAt, kDrain);
  EXPECT_LT(drainedAt, restarted.status()->since) << "took over while the old leader drained";
  auto afterTerm = leaseRecord();
  ASSERT_TRUE(afterTerm);
  EXPECT_EQ(afterTerm->holderIdentity, restarted.identity());
  // The release kept the transition count; taking the released lease adds one.
  EXPECT_EQ(afterTerm->leaderTransitions, afterKill->leaderTransitions + 1);
  EXPECT_EQ(afterTerm->leaseDurationSeconds, 4);

  // Graceful stop of the last one: the Lease is left released.
  restarted.signal(SIGTERM);
  auto lastExit = restarted.reap(10s);
  ASSERT_TRUE(lastExit);
  EXPECT_TRUE(WIFEXITED(*lastExit) && WEXITSTATUS(*lastExit) == 0);
  auto released = leaseRecord();
  ASSERT_TRUE(released);
  EXPECT_EQ(released->holderIdentity, "");
  EXPECT_EQ(released->leaseDurationSeconds, 1);
  EXPECT_EQ(released->leaderTransitions, afterTerm->leaderTransitions);
  std::printf("[leader-election] %d samples, %d with the Lease holder cross-checked\n", samples_,
              checkedHolder_);
}

}  // namespace
}  // namespace egress::leaderelection
