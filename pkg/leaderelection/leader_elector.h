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
//   config.callbacks.onStoppedLeading = [&]() -> net::awaitable<void> {
//     co_await stopControllersAndWaitForTheirWorkers();
//   };
//   auto elector = LeaderElector::create(clock, std::move(config), &registry);
//   if (!elector) { spdlog::error("{}", elector.error()); ... }
//   co_await (*elector)->run();   // returns when leadership is lost or stop() was called
//
// Like client-go's Run, run() campaigns once: after leadership is lost it returns and never
// campaigns again (the process should exit or build a new elector). The elector is used from the
// one thread that runs its io_context; isLeader() alone may be read from any thread.
//
// Destroying the elector while run() is under way abandons the campaign: no further lock
// request starts, no callback runs any more (not even onStoppedLeading: whoever destroys a leading
// elector stops the guarded work itself), nothing is released, and run() returns once the lock
// request in flight, if any, has completed. Its coroutines share their state, so none touches the
// destroyed elector; the lock must outlive that last request (keep it until run() returned or
// the io_context is gone). A lock operation that throws counts as a failed attempt.
//
// Deliberate differences from client-go, each safer (the reasons are at the code):
//  - The renew deadline counts from the start of the last successful renewal, not from the
//    start of a polling round (client-go's allows up to retryPeriod + renewDeadline), and a
//    request still in flight at the deadline does not extend leadership; it is cancelled then,
//    as client-go's RenewDeadline context cancels its renewal.
//  - A leader that reads another holder in the lock stops leading at once.
//  - onStoppedLeading is awaited, and the lease is released only after it completed (client-go
//    calls it after the release, without waiting for the work it stops). After stop() the lease
//    is renewed until it completed (leader_election_master_status stays 1 meanwhile), so a long
//    drain cannot let a successor in under work that still writes.
//  - release() blanks the lease only if the record it just read names this candidate.
//  - isLeader() means "from onStartedLeading until onStoppedLeading begins", not "the last
//    observed record names me" (client-go's IsLeader).
//  - validateConfig also demands that the whole seconds written to the lease exceed
//    renewDeadline.
//  - A waiting candidate retries every retryPeriod * (0.8, 1], not * [1, 2.2), and also right when
//    the lease it observed expires: a dead leader is replaced within leaseDuration +
//    retryPeriod, a released lease within retryPeriod.
//  - A changed record is noticed at the API's microsecond precision (client-go compares the
//    record's JSON, whose times are whole seconds, so two renewals within a second look alike).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/result.h"
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

// Called on the io_context's thread; none may block the thread. onStartedLeading starts the work
// that needs the lease. onStoppedLeading stops that work and completes once it has stopped; run()
// awaits it, and only then releases the lease (releaseOnCancel). It is also called, as in
// client-go, when run() ends without ever having led. After stop() the lease stays renewed
// while it runs, however long it takes (the caller bounds its drain). After a lost lease nothing
// can renew it: the hook should then stop the work within leaseDuration - renewDeadline (5 s with
// the defaults), the time left before another candidate may take over.
struct LeaderCallbacks {
  std::function<void()> onStartedLeading;
  std::function<net::awaitable<void>()> onStoppedLeading;
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
  // lease guards must be stopped by onStoppedLeading, which completes before the release.
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
  // `registry` may be null (no metrics). `clock` and `registry` must outlive the elector.
  static Result<std::unique_ptr<LeaderElector>, std::string> create(Clock& clock,
                                                                    LeaderElectionConfig config,
                                                                    prometheus::Registry* registry);
  // Abandons a campaign under way (see the top of this file).
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Campaigns until this candidate leads, then renews until it loses the lease or stop() is
  // called; then awaits onStoppedLeading and releases (releaseOnCancel). Returns only after every
  // lock request it started has completed, also when the elector was destroyed meanwhile. Call
  // once.
  net::awaitable<void> run();
  // Ends the campaign or the leadership at once (a lock request in flight is no longer waited
  // for); run() then awaits onStoppedLeading, waits for that request and releases the lease if
  // releaseOnCancel is set and this candidate holds it.
  void stop();

  // True from onStartedLeading until onStoppedLeading begins.
  bool isLeader() const;
  // The holder of the last record observed ("" if none or released).
  const std::string& getLeader() const;
  const LeaderElectionRecord& observedRecord() const;
  const std::string& identity() const;

 private:
  // Everything the elector's coroutines use, co-owned by them, so none outlives its object.
  class State;
  explicit LeaderElector(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
};

}  // namespace egress::leaderelection
