// File: lease_renewer.h
//
// The agent's liveness, as the operator and the other agents see it: it renews Lease
// "egw-agent-<node>" every 2 s with a 6 s duration (dataplane.md §2.5), creating it when it is
// missing. Not a leader election: every agent holds its own Lease. freshAt() is the fencing
// input: an agent whose last renewal is older than the duration must withdraw what it holds,
// because another node may hold it by now; a fresh process has not renewed yet and so holds
// nothing until its first renewal succeeds.
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

  // The wall-clock time of the last successful renewal, if any.
  std::optional<meta::Time> lastRenewed() const;
  std::chrono::seconds duration() const { return options_.duration; }
  // Renewed less than the duration before `now`.
  bool freshAt(meta::Time now) const;
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
