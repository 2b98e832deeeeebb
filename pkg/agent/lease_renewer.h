// File: lease_renewer.h
//
// The agent's liveness, as the operator and the other agents see it: it renews Lease
// "egw-agent-<node>" every 2 s with a 6 s duration, creating it when it is
// missing. Not a leader election: every agent holds its own Lease. fresh() is the fencing
// input: the operator moves an address a full duration after it observed this agent's last
// renewal, so the agent must have withdrawn by then. It judges by its own monotonic clock from
// the moment a successful renewal was *started* (the operator cannot have observed it earlier),
// never by comparing wall clocks, and stops a margin early to leave time to withdraw. A fresh
// process has not renewed yet and so holds nothing until its first renewal succeeds.
// The Lease also carries the agent's report (kProgrammedAnnotation, set on the lock by its
// owner); renewSoon() writes a changed report at once instead of after the interval.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/apis/meta/time.h"
#include "pkg/base/clock.h"
#include "pkg/controllerruntime/runnable.h"
#include "pkg/leaderelection/lease_lock.h"

namespace egress::agent {

namespace net = boost::asio;

class LeaseRenewer : public controllerruntime::Runnable {
 public:
  // The agent stops counting itself fresh this long before its Lease could be judged stale: the
  // operator observes a renewal no earlier than it was sent and moves the address only a full
  // duration after observing it, so withdrawing (one sync: the kernel writes) must fit here.
  static constexpr std::chrono::milliseconds kFreshnessMargin{500};

  struct Options {
    std::chrono::milliseconds renewInterval{std::chrono::seconds(2)};
    std::chrono::seconds duration{6};
    // Called after each renewal attempt whose outcome differs from the last one's (the agent
    // re-syncs: fenced or unfenced).
    std::function<void()> onChange;
  };

  // `lock` and `clock` must outlive the renewer's coroutine.
  LeaseRenewer(leaderelection::LeaseLock& lock, Clock& clock, Options options);
  ~LeaseRenewer() override;

  const std::string& name() const override { return name_; }
  Result<Ok, std::string> setUp(cache::SharedInformerFactory&) override { return Ok{}; }
  net::awaitable<Result<Ok, std::string>> start() override;
  net::awaitable<void> run() override;
  void stop() override;

  // This agent may hold addresses at `now` (monotonic): now < freshUntil().
  bool fresh(Clock::TimePoint now) const;
  // When the agent stops being fresh unless a renewal succeeds first: the start of its last
  // successful renewal + duration - kFreshnessMargin. nullopt before the first success.
  std::optional<Clock::TimePoint> freshUntil() const;
  // Renews now (after the attempt in flight, if any) rather than at the next interval: the
  // Lease's content changed (the agent's report).
  void renewSoon();
  // The first renewal attempt has ended (either way). Until then this process cannot tell
  // whether it still holds what its predecessor held; onChange fires when it ends.
  bool attempted() const;
  // Renewals that failed, in a row and in total.
  int consecutiveFailures() const;

  struct State;

 private:
  static net::awaitable<void> loop(std::shared_ptr<State> state);

  std::string name_ = "lease-renewer";
  Options options_;
  std::shared_ptr<State> state_;
};

// One attempt: get (create when missing), then update with renewTime = now. An error message on
// failure.
net::awaitable<Result<Ok, std::string>> renewOnce(leaderelection::LeaseLock& lock, meta::Time now,
                                                  std::chrono::seconds duration);

}  // namespace egress::agent
