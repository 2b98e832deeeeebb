// File: reconcile_result.h
//
// What one reconcile of a key asks the controller to do next, as controller-runtime's
// (reconcile.Result, error) pair says it, folded into one value:
//   done()            the key is in the state it should be: forget its backoff, wait for events;
//   requeue()         look again soon: back off through the controller's rate limiter;
//   requeueAfter(d)   look again in exactly d (a periodic check): the backoff is forgotten;
//   error(message)    it failed: logged, counted, retried through the rate limiter.
// An error wins over any requeue, as in controller-runtime (which ignores the Result then).
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "pkg/base/clock.h"

namespace egress::controllerruntime {

class ReconcileResult {
 public:
  enum class Kind { Done, Requeue, RequeueAfter, Error };

  static ReconcileResult done() { return ReconcileResult(Kind::Done, {}, {}); }
  static ReconcileResult requeue() { return ReconcileResult(Kind::Requeue, {}, {}); }
  // `after` <= 0 is a plain requeue(): controller-runtime only honours RequeueAfter > 0.
  static ReconcileResult requeueAfter(Clock::Duration after) {
    if (after <= Clock::Duration::zero()) {
      return requeue();
    }
    return ReconcileResult(Kind::RequeueAfter, after, {});
  }
  static ReconcileResult error(std::string message) {
    return ReconcileResult(Kind::Error, {}, std::move(message));
  }

  Kind kind() const { return kind_; }
  bool isDone() const { return kind_ == Kind::Done; }
  bool isError() const { return kind_ == Kind::Error; }
  // RequeueAfter only.
  Clock::Duration after() const { return after_; }
  // Error only.
  const std::string& message() const { return message_; }

  friend bool operator==(const ReconcileResult&, const ReconcileResult&) = default;

 private:
  ReconcileResult(Kind kind, Clock::Duration after, std::string message)
      : kind_(kind), after_(after), message_(std::move(message)) {}

  Kind kind_;
  Clock::Duration after_{};
  std::string message_;
};

// For logs and test failure messages: "done", "requeue", "requeue after 30s", "error: ...".
std::string toString(const ReconcileResult& result);

}  // namespace egress::controllerruntime
