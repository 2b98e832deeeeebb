// File: leader_elector.h
//
// Lease-based leader election, ported from client-go's tools/leaderelection: candidates race to
// write their identity into a LeaseLock; the holder renews it every retryPeriod and gives up when
// it could not renew for renewDeadline; the others take the lease over once they have seen it
// unchanged for a whole leaseDuration. Expiry is judged only from the LOCAL monotonic time at
// which the record was last seen to change, never from the renewTime written in it, so clocks
// that disagree (by any amount) cannot make two leaders; only clocks running at very different
// rates could (the tolerated rate ratio is about leaseDuration / renewDeadline).
//
//   LeaderElectionConfig config;
//   config.lock = &lock;
//   config.name = "egress-gateway-operator";
//   config.callbacks.onStartedLeading = [&] { startControllers(); };
//   config.callbacks.onStoppedLeading = [&] { stopControllers(); };
//   auto elector = LeaderElector::create(clock, std::move(config), &registry);
//   if (!elector) { spdlog::error("{}", elector.error()); ... }
//   co_await (*elector)->run();   // returns when leadership is lost or stop() was called
//
// Like client-go's Run, run() campaigns once: after leadership is lost it returns and never
// campaigns again (the process should exit or build a new elector). The elector is used from the
// one thread that runs its io_context; isLeader() alone may be read from any thread. It must
// outlive its run() coroutine.
//
// Deliberate differences from client-go, each safer (the reasons are at the code):
//  - The renew deadline counts from the start of the last successful renewal, not from the
//    start of a polling round (client-go's allows up to retryPeriod + renewDeadline), and a
//    request still in flight at the deadline does not extend leadership.
//  - A leader that reads another holder in the lock stops leading at once.
//  - onStoppedLeading runs before the release, not after it.
//  - release() blanks the lease only if the record it just read names this candidate.
//  - isLeader() means "between onStartedLeading and onStoppedLeading", not "the last observed
//    record names me" (client-go's IsLeader).
//  - validateConfig also demands that the whole seconds written to the lease exceed
//    renewDeadline.
//  - A waiting candidate retries every retryPeriod * (0.8, 1], not * [1, 2.2), and also right when
//    the lease it observed expires: a dead leader is replaced within leaseDuration +
//    retryPeriod, a released lease within retryPeriod.
//  - A changed record is noticed at the API's microsecond precision (client-go compares the
//    record's JSON, whose times are whole seconds, so two renewals within a second look alike).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/result.h"
#include "pkg/leaderelection/leader_metrics.h"
#include "pkg/leaderelection/lease_lock.h"

namespace prometheus {
class Registry;
}

namespace egress::leaderelection {

// client-go's JitterFactor (its acquire retries wait retryPeriod * (1 + random * 1.2)); kept for
// client-go's config validation (renewDeadline > retryPeriod * kJitterFactor).
inline constexpr double kJitterFactor = 1.2;
// Ours wait retryPeriod * (1 - random * kCandidateJitter): see acquire() for why.
inline constexpr double kCandidateJitter = 0.2;

// Called on the io_context's thread; they must not block. onStartedLeading starts the work that
// needs the lease; onStoppedLeading must stop it (it is also called, as in client-go, when run()
// ends without ever having led).
struct LeaderCallbacks {
  std::function<void()> onStartedLeading;
  std::function<void()> onStoppedLeading;
  // Optional: the holder this candidate observed changed (also its first observation).
  std::function<void(const std::string& identity)> onNewLeader;
};

struct LeaderElectionConfig {
  LeaseLock* lock = nullptr;  // not owned; outlives the elector
  // The "core clients default" of client-go (and controller-runtime's).
  std::chrono::milliseconds leaseDuration{15'000};
  std::chrono::milliseconds renewDeadline{10'000};
  std::chrono::milliseconds retryPeriod{2'000};
  // Label of leader_election_master_status.
  std::string name;
  // When run() ends while this candidate holds the lease, write it back released (empty
  // holder, leaseDurationSeconds 1) so a successor need not wait out leaseDuration. Whatever the
  // lease guards must be stopped by onStoppedLeading, which runs before the release.
  bool releaseOnCancel = false;
  LeaderCallbacks callbacks;
  // Uniform in [0, 1), for the jitter; empty = a seeded std::mt19937.
  std::function<double()> random;
};

// client-go's NewLeaderElector checks, in its order and with its messages; Ok or the first
// problem.
Result<Ok, std::string> validateConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  // Validates `config` (validateConfig) and sets leader_election_master_status{name} to 0.
  // `registry` may be null (no metrics). `clock` must outlive the elector.
  static Result<std::unique_ptr<LeaderElector>, std::string> create(Clock& clock,
                                                                    LeaderElectionConfig config,
                                                                    prometheus::Registry* registry);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Campaigns until this candidate leads, then renews until it loses the lease or stop() is
  // called. Returns only after every lock request it started has completed. Call once.
  net::awaitable<void> run();
  // Ends run(): at once if campaigning or waiting, else when the lock request in flight returns.
  // Releases the lease first if releaseOnCancel is set and this candidate holds it.
  void stop();

  // True between onStartedLeading and onStoppedLeading.
  bool isLeader() const { return leading_.load(); }
  // The holder of the last record observed ("" if none or released).
  const std::string& getLeader() const { return observedRecord_.holderIdentity; }
  const LeaderElectionRecord& observedRecord() const { return observedRecord_; }
  const std::string& identity() const { return config_.lock->identity(); }

 private:
  // A lock request running as a coroutine of its own, so the elector can stop waiting for it at
  // a deadline (a hung request must not keep a leader believing it leads).
  struct Operation {
    enum class Kind { TryAcquireOrRenew, Release };
    explicit Operation(Kind k) : kind(k) {}
    Kind kind;
    bool done = false;
    bool succeeded = false;
  };

  LeaderElector(Clock& clock, LeaderElectionConfig config, prometheus::Registry* registry);

  // The start of the attempt that acquired the lease; nullopt after stop().
  net::awaitable<std::optional<Clock::TimePoint>> acquire();
  // Returns when leadership ends (renew failed for renewDeadline, lost to another holder, stop).
  net::awaitable<void> renew(Clock::TimePoint acquiredAt);
  net::awaitable<void> release();
  net::awaitable<bool> tryAcquireOrRenew();
  net::awaitable<bool> releaseLease(Clock::TimePoint deadline);

  // Starts `kind` and waits until it completes, `deadline` passes or (if `stoppable`) stop();
  // false unless it completed and succeeded. A request still in flight is left to finish on its
  // own.
  net::awaitable<bool> attempt(Operation::Kind kind, Clock::TimePoint deadline, bool stoppable);
  net::awaitable<void> runOperation(std::shared_ptr<Operation> op, Clock::TimePoint deadline);
  // Waits for the request left in flight by attempt(), if any.
  net::awaitable<void> waitForInflight();
  // Sleeps until `t`; false if stop() was called.
  net::awaitable<bool> sleepUntil(Clock::TimePoint t);

  // When the observed lease runs out, by the local clock: observedTime_ + its leaseDuration.
  Clock::TimePoint observedExpiry() const;
  bool isLeaseValid(Clock::TimePoint now) const;
  bool observedSelfAsHolder() const;
  void setObservedRecord(const LeaderElectionRecord& record);
  void maybeReportTransition();
  Clock::Duration candidateWait();

  Clock& clock_;
  LeaderElectionConfig config_;
  LeaderMetrics metrics_;
  std::unique_ptr<Timer> timer_;
  net::any_io_executor executor_;

  LeaderElectionRecord observedRecord_;
  Clock::TimePoint observedTime_{};
  // client-go's observedRawRecord: the record the last get() returned, to notice a change.
  std::optional<LeaderElectionRecord> lastFetched_;
  std::string reportedLeader_;

  std::shared_ptr<Operation> inflight_;
  std::atomic<bool> leading_{false};
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace egress::leaderelection
